"""Ambiguous data is refused with its place (issue 23, item 7), beyond the command-line rows of
tests/bad_inputs/test_r3_ambiguous.py: through the Python API, in each reader, and what stays
allowed (a YAML merge key overridden, several unnamed annotators disagreeing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import runner
from runner.adapters.http import HttpModel
from runner.adapters.openai import parse_answer
from runner.calibration.pairs import load_pairs
from runner.data.errors import DataError
from runner.data.loading import load_cases, load_knowledge_base
from runner.errors import RagciteError

LOOKS = ("(ids are compared without surrounding whitespace, after Unicode NFC normalisation); "
         "make them differ")
ANSWER = {"answer": "x", "citations": [{"source": "a", "content": "the cat sat"}]}


def case(case_id: str) -> dict[str, object]:
    """A dict case with a stored response that cites its reference word for word."""
    return {"id": case_id, "query": "q", "references": [{"source": "a", "content": "the cat sat"}],
            "response": ANSWER}


@pytest.mark.parametrize(("ids", "problem"), [
    (["a", "b", "a"], "cases[2].id: duplicate case id 'a' (first seen at cases[0])"),
    (["a", "a\t"], f"cases[1].id: case id 'a\\t' looks the same as 'a' at cases[0] {LOOKS}"),
    (["\u00c5", "A\u030a"], f"cases[1].id: case id 'A\\u030a' looks the same as '\\xc5' at "
                            f"cases[0] {LOOKS}"),
])
def test_evaluate_refuses_case_ids_that_look_the_same(ids: list[str], problem: str) -> None:
    with pytest.raises(RagciteError) as exc:
        runner.evaluate([case(i) for i in ids])
    assert str(exc.value) == problem
    # A stream of cases (a generator) is checked as it is read, with the same place.
    with pytest.raises(RagciteError) as exc:
        runner.evaluate(case(i) for i in ids)
    assert str(exc.value) == problem


def test_evaluate_keeps_ids_that_differ_in_what_they_show() -> None:
    # NFKC is not applied: the ligature and the superscript show differently from "fi" and "2".
    result = runner.evaluate([case(i) for i in ["fi", "\ufb01", "x2", "x\u00b2", "a b", "ab"]])
    assert result.n_cases == 6
    assert result.metrics["context_recall"] == 1.0


@pytest.mark.parametrize(("responses", "problem"), [
    ([{"id": "1", **ANSWER}, {"id": "1", **ANSWER}],
     "responses[1]: duplicate case id '1' (first seen at responses[0])"),
    ({1: ANSWER, "1": ANSWER},
     "responses['1']: duplicate case id '1' (first seen at responses[1])"),
    ({"1": ANSWER, " 1": ANSWER},
     f"responses[' 1']: case id ' 1' looks the same as '1' at responses['1'] {LOOKS}"),
])
def test_evaluate_refuses_responses_given_twice_for_a_case(responses: object,
                                                           problem: str) -> None:
    with pytest.raises(RagciteError) as exc:
        runner.evaluate([{"id": "1", "query": "q"}], responses=responses)  # type: ignore[arg-type]
    assert str(exc.value) == problem


def test_evaluate_refuses_a_blank_citation_source() -> None:
    bad = {**case("1"), "response": {"citations": [{"source": " ", "content": "x"}]}}
    with pytest.raises(RagciteError) as exc:
        runner.evaluate([bad])
    assert str(exc.value) == ("cases[0].response.citations[0].source: Value error, must not be "
                              "blank (got ' ')")


def test_a_key_twice_deep_in_a_jsonl_line_is_named_by_its_path(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "1", "query": "q", "metadata": {"x": [{"k": 1}, {"k": 2, "k": 3}]}}\n',
                    encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert str(exc.value) == (f"{path}, line 1, field 'metadata.x[1].k': the key is given twice "
                              "in one object; keep one")


def test_a_key_twice_in_a_whole_object_knowledge_base(tmp_path: Path) -> None:
    # A corpus keyed by source, split by a transform: the file's top-level object is the record.
    path = tmp_path / "kb.json"
    path.write_text('{"a": "one", "b": "two", "a": "three"}', encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_knowledge_base(path, transform=lambda r: [{"source": k, "text": v}
                                                       for k, v in r.items()])
    assert str(exc.value) == f"{path}, field 'a': the key is given twice in one object; keep one"


def test_a_yaml_merge_key_may_still_be_overridden(tmp_path: Path) -> None:
    # `<<` merges a mapping in; a key written beside it overrides the merged one (YAML's
    # meaning), which is not a key given twice.
    path = tmp_path / "c.yaml"
    path.write_text("- &base {id: '1', query: q1, metadata: {k: 1}}\n"
                    "- <<: *base\n  id: '2'\n", encoding="utf-8")
    assert [(c.id, c.query, c.metadata) for c in load_cases(path)] == [
        ("1", "q1", {"k": 1}), ("2", "q1", {"k": 1})]


def test_a_yaml_key_twice_in_a_nested_mapping(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("- id: '1'\n  query: q\n  metadata:\n    k: 1\n    j: 2\n    k: 3\n",
                    encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert str(exc.value) == (f"{path}, line 6: malformed YAML (key 'k' is given twice in one "
                              "mapping, first on line 4; keep one)")


def test_a_csv_quoted_value_over_several_lines_still_loads(tmp_path: Path) -> None:
    # Strict quoting refuses only what cannot be read one way: a closed multi-line value and a
    # quote doubled inside a quoted value load as before.
    path = tmp_path / "c.csv"
    path.write_text('id,query\n1,"two\nlines"\n\n2,"say ""hi"""\n', encoding="utf-8")
    assert [(c.id, c.query) for c in load_cases(path)] == [("1", "two\nlines"),
                                                           ("2", 'say "hi"')]


def test_one_annotator_may_not_label_a_pair_both_ways(tmp_path: Path) -> None:
    pair = {"reference": "r", "citation": "c", "case_id": "7"}
    path = tmp_path / "l.jsonl"
    rows = [{**pair, "label": False, "annotator": "ana"},
            {**pair, "label": True, "annotator": "bo"},
            {**pair, "label": True, "annotator": "ana"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_pairs(path)
    assert str(exc.value) == (f"{path}, line 3, field 'label': 'ana' labelled this pair false at "
                              "line 1 and true here; keep the one meant")


def test_unnamed_labels_may_disagree_and_a_label_may_repeat(tmp_path: Path) -> None:
    # Records without an annotator may come from several people: their disagreement is data.
    # The same annotator giving the same label twice is not ambiguous; both records are kept.
    pair = {"reference": "r", "citation": "c"}
    path = tmp_path / "l.jsonl"
    rows = [{**pair, "label": True}, {**pair, "label": False},
            {**pair, "label": True, "annotator": "ana"},
            {**pair, "label": True, "annotator": "ana"},
            {**pair, "reference": "r2", "label": False, "annotator": "ana"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [(p.label, p.annotator) for p in load_pairs(path)] == [
        (True, None), (False, None), (True, "ana"), (True, "ana"), (False, "ana")]


def test_an_api_citation_with_a_blank_source_is_an_error_of_its_case() -> None:
    reply = {"answer": "x", "citations": [{"source": "a", "content": "y"},
                                          {"source": "  ", "content": "z"}]}
    assert HttpModel(url="http://127.0.0.1:9").extract(reply).error == (
        "the reply's citations at 'citations', field 'citations[1].source': Value error, must "
        "not be blank (got '  ')")
    with pytest.raises(ValueError) as exc:
        parse_answer(json.dumps({"answer": "x", "citations": [{"source": "", "quote": "y"}]}))
    assert str(exc.value) == ("the reply does not match the answer schema: citations.0.source: "
                              "Value error, must not be blank")

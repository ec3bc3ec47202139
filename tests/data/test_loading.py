"""Loading cases and knowledge bases (SPEC 2): readers, JMESPath mapping, located errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.data.errors import DataError
from runner.data.loading import (
    file_digest,
    iter_cases,
    load_cases,
    load_knowledge_base,
    resolve_path,
)
from runner.data.mapping import FieldMapping
from runner.data.models import Citation, Document, Reference, Response
from runner.data.readers import infer_format, iter_records
from tests.helpers import FIXTURES, REMOTE_REQUEST, SEED_FILE

FOREIGN_MAPPING = {
    "id": "_id",
    "query": "question",
    "references": "evidence[].{source: title, content: fact}",
    "expected_sources": "evidence[].title",
    "citations": "output.refs[].{source: doc, content: quote}",
    "answer": "output.text",
    "metadata": "{field: meta.field}",
}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(path: Path, *records: Any) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in records))


def message(exc: pytest.ExceptionInfo[DataError]) -> str:
    return str(exc.value)


# --- readers -------------------------------------------------------------------------------


def test_jsonl_seed_file_loads_in_order_with_responses() -> None:
    cases = load_cases(SEED_FILE)
    assert [c.id for c in cases] == ["seed-1", "seed-2", "seed-3"]
    first = cases[0]
    assert first.references == [Reference(source="Remote Work Policy.pdf",
                                          content=REMOTE_REQUEST)]
    assert first.expected_sources == ["Remote Work Policy.pdf"]
    assert first.response is not None
    assert first.response.citations == [Citation(source="Remote Work Policy.pdf",
                                                 content=REMOTE_REQUEST)]
    # seed-3 cites 3 passages.
    assert len(cases[2].response.citations) == 3  # type: ignore[union-attr]


def test_iter_cases_streams() -> None:
    it = iter_cases(SEED_FILE)
    assert next(it).id == "seed-1"
    assert next(it).id == "seed-2"


def test_jsonl_skips_blank_lines_and_numbers_ids_by_line_order(tmp_path: Path) -> None:
    # No `id`: the id is the record number (1-based, blank lines not counted).
    path = write(tmp_path / "c.jsonl", '{"query": "a"}\n\n   \n{"query": "b"}\n')
    assert [(c.id, c.query) for c in load_cases(path)] == [("1", "a"), ("2", "b")]


def test_json_list_and_object_with_cases_key(tmp_path: Path) -> None:
    records = [{"id": "a", "query": "qa"}, {"id": "b", "query": "qb"}]
    as_list = write(tmp_path / "l.json", json.dumps(records))
    as_obj = write(tmp_path / "o.json", json.dumps({"cases": records}))
    assert [c.id for c in load_cases(as_list)] == ["a", "b"]
    assert [c.id for c in load_cases(as_obj)] == ["a", "b"]


def test_yaml_file_with_unicode() -> None:
    cases = load_cases(FIXTURES / "cases.yaml")
    assert [c.id for c in cases] == ["y-1", "y-2"]
    assert cases[0].references == [Reference(source="Règlement.pdf",
                                             content="Le café est servi à 8 h.")]
    # y-1 has no expected_sources: derived from its references; y-2 says [] explicitly.
    assert cases[0].expected_sources == ["Règlement.pdf"]
    assert cases[1].expected_sources == []


def test_csv_with_json_encoded_list_columns() -> None:
    cases = load_cases(FIXTURES / "cases.csv")
    assert [c.id for c in cases] == ["c-1", "c-2"]
    assert cases[0].references == [Reference(source="A.pdf", content="the rule")]
    # The empty expected_sources cell means "absent": derived from the references.
    assert cases[0].expected_sources == ["A.pdf"]
    # Top-level `citations` and `answer` columns are folded into the response.
    assert cases[0].response == Response(answer="The rule.",
                                         citations=[Citation(source="A.pdf",
                                                             content="the rule")])
    # c-2: empty citations and answer cells -> no stored response at all.
    assert cases[1].references == []
    assert cases[1].expected_sources == []
    assert cases[1].response is None


def test_format_override_and_inference(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "cases.txt", {"id": "a", "query": "q"})
    assert [c.id for c in load_cases(path, format="jsonl")] == ["a"]
    assert infer_format("x.ndjson") == "jsonl"
    assert infer_format("x.YML") == "yaml"
    assert infer_format("x.json") == "json"
    assert infer_format("x.csv") == "csv"
    assert infer_format("x.bin", "csv") == "csv"


def test_unknown_extension_and_unknown_format(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "cases.txt", {"id": "a", "query": "q"})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}: cannot infer the format from extension '.txt'; set "
                            "`format:` to one of jsonl, json, yaml, csv")
    with pytest.raises(DataError) as exc:
        load_cases(path, format="xml")
    assert message(exc) == f"{path}: unknown format 'xml'; expected one of jsonl, json, yaml, csv"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == f"{path}: file not found"


def test_iter_records_locates_records() -> None:
    wheres = [w for w, _ in iter_records(FIXTURES / "cases.yaml")]
    assert wheres == ["record 1", "record 2"]
    # CSV: the header is line 1, so the rows are lines 2 and 3.
    assert [w for w, _ in iter_records(FIXTURES / "cases.csv")] == ["line 2", "line 3"]


def test_resolve_path_pkg_and_plain(tmp_path: Path) -> None:
    resolved = resolve_path("pkg://runner/data/models.py")
    assert resolved.is_file()
    assert resolved.name == "models.py"
    assert resolve_path(tmp_path / "x.jsonl") == tmp_path / "x.jsonl"


def test_file_digest_is_stable_and_content_sensitive(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", "x\n")
    d1 = file_digest(a)
    assert d1 == file_digest(a)
    assert len(d1) == 16
    write(a, "y\n")
    assert file_digest(a) != d1


def test_foreign_shape_loads_by_mapping_alone() -> None:
    cases = load_cases(FIXTURES / "foreign.jsonl", mapping=FOREIGN_MAPPING)
    assert [c.id for c in cases] == ["f-1", "f-2"]
    first, second = cases
    assert first.query == "Where is the VPN rule?"
    assert first.references == [Reference(source="Data Security Policy.pdf",
                                          content="Remote workers must use a company-approved "
                                                  "VPN.")]
    assert first.expected_sources == ["Data Security Policy.pdf"]
    assert first.response == Response(
        answer="In the security policy.",
        citations=[Citation(source="Data Security Policy.pdf",
                            content="Remote workers must use a company-approved VPN.")])
    # `{field: meta.field}` keeps only `field` ("other" is dropped).
    assert first.metadata == {"field": "security"}
    # f-2: an empty fact is an empty reference passage; `refs: []` is a response citing nothing.
    assert second.references[1] == Reference(source="HR Handbook.pdf", content="")
    assert second.expected_sources == ["Leave Policy.pdf", "HR Handbook.pdf"]
    assert second.response == Response(answer="Your manager.", citations=[])


def test_mapping_leaves_unmapped_canonical_keys_alone(tmp_path: Path) -> None:
    # Only `query` is mapped; `id` and `references` are already canonical.
    path = jsonl(tmp_path / "c.jsonl",
                 {"id": "x", "question": "q?", "references": [{"source": "S", "content": "c"}],
                  "response": {"citations": [{"source": "S", "content": "c"}]}})
    (case,) = load_cases(path, mapping={"query": "question"})
    assert (case.id, case.query, case.expected_sources) == ("x", "q?", ["S"])
    assert case.response == Response(citations=[Citation(source="S", content="c")])


def test_optional_mapped_keys_may_yield_null(tmp_path: Path) -> None:
    # No `meta`, `output` or evidence: metadata {}, no response, no expected sources.
    path = jsonl(tmp_path / "c.jsonl", {"_id": 7, "question": "q", "evidence": []})
    (case,) = load_cases(path, mapping={**FOREIGN_MAPPING, "metadata": "meta"})
    assert case.id == "7"  # an integer id becomes its decimal text
    assert (case.references, case.expected_sources, case.metadata) == ([], [], {})
    assert case.response is None
    # A multi-select hash keeps its keys, with null values (JMESPath semantics).
    (case,) = load_cases(path, mapping=FOREIGN_MAPPING)
    assert case.metadata == {"field": None}


def test_mapping_can_be_a_compiled_field_mapping() -> None:
    fm = FieldMapping(FOREIGN_MAPPING)
    assert [c.id for c in load_cases(FIXTURES / "foreign.jsonl", mapping=fm)] == ["f-1", "f-2"]


def test_transform_runs_before_the_mapping(tmp_path: Path) -> None:
    # A join JMESPath cannot express: citations point at evidence by index.
    path = jsonl(tmp_path / "c.jsonl",
                 {"q": "query", "docs": ["A", "B"], "cited": [1]})

    def transform(raw: dict[str, Any]) -> dict[str, Any]:
        return {"query": raw["q"],
                "references": [{"source": d, "content": ""} for d in raw["docs"]],
                "citations": [{"source": raw["docs"][i], "content": ""} for i in raw["cited"]]}

    (case,) = load_cases(path, transform=transform)
    assert case.expected_sources == ["A", "B"]
    assert case.response == Response(citations=[Citation(source="B", content="")])


def test_transform_failure_is_located(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"q": "a"}, {"x": 1})

    def transform(raw: dict[str, Any]) -> dict[str, Any]:
        return {"query": raw["q"]}

    with pytest.raises(DataError) as exc:
        load_cases(path, transform=transform)
    assert message(exc) == f"{path}, line 2: transform failed: KeyError: 'q'"


def test_unknown_mapping_key_and_bad_expression(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"id": "a", "query": "q"})
    with pytest.raises(DataError) as exc:
        load_cases(path, mapping={"question": "q"})
    assert message(exc) == (
        f"{path} (mapping), field 'question': unknown mapping key; expected one of id, query, "
        "references, expected_sources, citations, answer, documents, metadata")
    with pytest.raises(DataError) as exc:
        load_cases(path, mapping={"query": "a[?"})
    assert message(exc).startswith(
        f"{path} (mapping), field 'query': invalid JMESPath expression 'a[?': ")


# --- located loading errors ----------------------------------------------------------------


def test_malformed_json_line(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", '{"id": "a", "query": "q"}\n{"id": "b", "query": \n')
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == f"{path}, line 2: malformed JSON (Expecting value at column 1)"
    assert (exc.value.path, exc.value.where, exc.value.field) == (str(path), "line 2", None)


def test_malformed_json_document(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", '[{"id": "a", "query": "q"},\n {"id": "b",]')
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, line 2: malformed JSON (Expecting property name enclosed "
                            "in double quotes at column 13)")


def test_malformed_yaml_document(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", 'cases:\n  - id: a\n    query: "q\n')
    with pytest.raises(DataError) as exc:
        load_cases(path)
    # The scanner reports the end of the stream (line 4) where the quote is still open.
    assert message(exc).startswith(f"{path}, line 4: malformed YAML (")


def test_yaml_that_is_not_a_list(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "just: text\n")
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}: expected a list of records (or an object with a 'cases' "
                            "list), got dict")


def test_missing_field(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", '{"id": "a", "query": "q"}\n\n{"id": "b"}\n')
    with pytest.raises(DataError) as exc:
        load_cases(path)
    # The blank line 2 still counts: the bad record is on line 3.
    assert message(exc) == f"{path}, line 3, field 'query': required field is missing"
    assert (exc.value.where, exc.value.field) == ("line 3", "query")


def test_missing_field_in_json_list_names_the_record(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", json.dumps([{"id": "a", "query": "q"}, {"id": "b"}]))
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == f"{path}, record 2, field 'query': required field is missing"


def test_missing_nested_field(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl",
                 {"id": "a", "query": "q", "references": [{"source": "s"}, {"content": "x"}]})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, line 1, field 'references[1].source': required field is "
                            "missing")


def test_wrong_type(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"id": "a", "query": "q"},
                 {"id": "b", "query": "q", "references": [{"source": "s", "content": 5}]})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, line 2, field 'references[0].content': Input should be a "
                            "valid string (got 5)")


def test_wrong_type_in_response(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl",
                 {"id": "a", "query": "q", "response": {"citations": [], "latency_s": "slow"}})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, line 1, field 'response.latency_s': Input should be a valid "
                            "number, unable to parse string as a number (got 'slow')")


def test_wrong_type_in_yaml_record(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "- id: a\n  query: q\n- id: b\n  query: [1]\n")
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, record 2, field 'query': Input should be a valid string "
                            "(got [1])")


def test_unknown_field(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"id": "a", "query": "q", "tags": ["x"]})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, line 1, field 'tags': unknown field (put extra data under "
                            "'metadata', or use a mapping)")


def test_blank_reference_source(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl",
                 {"id": "a", "query": "q", "references": [{"source": " ", "content": ""}]})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, line 1, field 'references[0].source': Value error, must not "
                            "be blank (got ' ')")


def test_long_bad_value_is_shortened(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"id": "a", "query": ["x" * 100]})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    # repr is cut to 57 characters + "...".
    shown = repr(["x" * 100])[:57] + "..."
    assert message(exc) == (f"{path}, line 1, field 'query': Input should be a valid string "
                            f"(got {shown})")


def test_record_that_is_not_an_object(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", '{"id": "a", "query": "q"}\n[1, 2]\n')
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == f"{path}, line 2: expected an object, got list"


def test_duplicate_case_id(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"id": "a", "query": "q"}, {"id": "b", "query": "q"},
                 {"id": "a", "query": "q2"})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, line 3, field 'id': duplicate case id 'a' (first seen at "
                            "line 1)")


def test_duplicate_id_across_int_and_str(tmp_path: Path) -> None:
    # 1 and "1" are the same id once integer ids become text.
    path = jsonl(tmp_path / "c.jsonl", {"id": 1, "query": "q"}, {"id": "1", "query": "q"})
    with pytest.raises(DataError) as exc:
        load_cases(path)
    assert message(exc) == (f"{path}, line 2, field 'id': duplicate case id '1' (first seen at "
                            "line 1)")


def test_partial_file_yields_nothing_past_the_error(tmp_path: Path) -> None:
    # Streaming yields the good case first, then stops at the bad one: no silent skipping.
    path = write(tmp_path / "c.jsonl",
                 '{"id": "a", "query": "q"}\n{bad\n{"id": "c", "query": "q"}\n')
    it = iter_cases(path)
    assert next(it).id == "a"
    with pytest.raises(DataError, match=r", line 2: malformed JSON"):
        next(it)


def test_mapping_yields_wrong_shape_dict_for_list(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"q": "x", "ev": {"t": "A"}})
    with pytest.raises(DataError) as exc:
        load_cases(path, mapping={"query": "q", "references": "ev"})
    assert message(exc) == (f"{path}, line 1, field 'mapping.references': expression 'ev' yielded "
                            "dict; expected a list of {source, content} objects")
    assert exc.value.field == "mapping.references"


def test_mapping_yields_list_of_wrong_items(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"q": "x", "ev": [{"t": "A"}]})
    with pytest.raises(DataError) as exc:
        load_cases(path, mapping={"query": "q", "references": "ev"})
    assert message(exc) == (f"{path}, line 1, field 'mapping.references': expression 'ev' yielded "
                            "a list containing {'t': 'A'}; expected {source, content} objects")


@pytest.mark.parametrize(("key", "expr", "record", "expected"), [
    ("query", "q", {"q": 5}, "yielded int; expected a string"),
    ("query", "missing", {"q": "x"}, "yielded null; expected a string"),
    ("expected_sources", "s", {"q": "x", "s": "A"}, "yielded str; expected a list of strings"),
    ("expected_sources", "s", {"q": "x", "s": ["A", 1]},
     "yielded list; expected a list of strings"),
    ("metadata", "m", {"q": "x", "m": [1]}, "yielded list; expected an object"),
    ("id", "i", {"q": "x", "i": True}, "yielded bool; expected a string or an integer"),
    ("citations", "c", {"q": "x", "c": "text"},
     "yielded str; expected a list of {source, content} objects"),
])
def test_mapping_shape_errors(tmp_path: Path, key: str, expr: str, record: dict[str, Any],
                              expected: str) -> None:
    path = jsonl(tmp_path / "c.jsonl", record)
    mapping = {"query": "q", key: expr}
    with pytest.raises(DataError) as exc:
        load_cases(path, mapping=mapping)
    assert message(exc) == f"{path}, line 1, field 'mapping.{key}': expression {expr!r} {expected}"


def test_csv_bad_json_cell_and_extra_values(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.csv", 'id,query,references\na,q,[]\nb,q,[oops\n')
    with pytest.raises(DataError) as exc:
        load_cases(bad)
    assert message(exc) == (f"{bad}, line 3, field 'references': expected a JSON-encoded value "
                            "(Expecting value)")
    extra = write(tmp_path / "extra.csv", "id,query\na,q,surplus\n")
    with pytest.raises(DataError) as exc:
        load_cases(extra)
    assert message(exc) == (f"{extra}, line 2: 3 values for the header's 2 columns; give each "
                            "column one value (it may be empty)")


def test_data_error_is_a_value_error_and_exported() -> None:
    assert runner.DataError is DataError
    err = DataError("f.jsonl", "line 3", "references[0].source", "bad")
    assert isinstance(err, ValueError)
    assert str(err) == "f.jsonl, line 3, field 'references[0].source': bad"
    assert str(DataError("f.jsonl", None, None, "bad")) == "f.jsonl: bad"


# --- knowledge base ------------------------------------------------------------------------


def test_knowledge_base_jsonl() -> None:
    docs = load_knowledge_base(FIXTURES / "kb.jsonl")
    assert [d.source for d in docs] == ["Remote Work Policy.pdf", "Data Security Policy.pdf"]
    assert docs[0].text == REMOTE_REQUEST


def test_knowledge_base_folder_uses_file_names_and_skips_other_files() -> None:
    # alpha.txt and sub/beta.md are read (sorted by path); notes.pdf is not a text file.
    docs = load_knowledge_base(FIXTURES / "kb_folder")
    assert docs == [Document(source="alpha.txt", text="Alpha text.\n"),
                    Document(source="beta.md", text="# Beta\n")]


def test_knowledge_base_mapping(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "kb.jsonl", {"title": "A", "body": {"text": "alpha"}, "x": 1})
    docs = load_knowledge_base(path, mapping={"source": "title", "text": "body.text"})
    assert docs == [Document(source="A", text="alpha")]


def test_knowledge_base_transform_splits_records(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "kb.jsonl", {"doc": "A", "pages": ["p1", "p2"]})
    docs = load_knowledge_base(path, transform=lambda r: [
        {"source": f"{r['doc']}#{i}", "text": t} for i, t in enumerate(r["pages"], 1)])
    assert docs == [Document(source="A#1", text="p1"), Document(source="A#2", text="p2")]


def test_knowledge_base_missing_text(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "kb.jsonl", {"source": "A", "text": "a"}, {"source": "B"})
    with pytest.raises(DataError) as exc:
        load_knowledge_base(path)
    assert message(exc) == f"{path}, line 2, field 'text': required field is missing"


def test_knowledge_base_mapping_wrong_shape(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "kb.jsonl", {"title": ["A"], "body": "x"})
    with pytest.raises(DataError) as exc:
        load_knowledge_base(path, mapping={"source": "title", "text": "body"})
    assert message(exc) == (f"{path}, line 1, field 'mapping.source': expression 'title' yielded "
                            "list; expected a string")


def test_jsonl_lines_straight_into_pydantic_equal_the_general_path(tmp_path: Path) -> None:
    # Canonical JSONL lines are parsed and validated by pydantic in one step; lines it rejects
    # (no id, top-level citations/answer) take the general path. Both give the cases that the
    # general path (a JSON copy of the same records) gives.
    records: list[dict[str, Any]] = [
        {"id": "a", "query": "q", "references": [{"source": "S", "content": "x"}],
         "metadata": {"big": 2**70, "f": 0.1, "nested": {"k": [1, None]}}},
        {"query": "no id", "references": []},  # id from the record number: "2"
        {"id": "c", "query": "q", "references": [], "answer": "top-level answer",
         "citations": [{"source": "S", "content": "y"}]},
        {"id": "d", "query": "caf\u00e9 \U0001F600", "references": [],
         "response": {"answer": "x", "citations": [], "usage": {"prompt_tokens": 3}}},
    ]
    jsonl = tmp_path / "cases.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    as_json = tmp_path / "cases.json"
    as_json.write_text(json.dumps(records), encoding="utf-8")
    fast, general = load_cases(jsonl), load_cases(as_json)
    assert fast == general
    assert [c.id for c in fast] == ["a", "2", "c", "d"]
    assert fast[0].metadata["big"] == 2**70 and isinstance(fast[0].metadata["big"], int)
    assert fast[2].response is not None and fast[2].response.answer == "top-level answer"


def test_jsonl_invalid_line_error_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "query": "q", "references": []}\n\n'
                    '{"id": "b", "query": 5, "references": []}\n', encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_cases(path)
    assert str(info.value) == (f"{path}, line 3, field 'query': Input should be a valid string "
                               "(got 5)")

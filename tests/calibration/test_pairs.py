"""Labelled pairs read like datasets: every format, the JMESPath mapping, located errors, and
one record per annotator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.calibration.pairs import LabelledPair, load_pairs
from runner.data.errors import DataError

ROWS = [{"reference": "r one", "citation": "c one", "label": True, "annotator": "ana"},
        {"reference": "r one", "citation": "c one", "label": False, "annotator": "bo"}]


def _expected(where: list[str]) -> list[LabelledPair]:
    return [LabelledPair(reference="r one", citation="c one", label=True, annotator="ana",
                         where=where[0]),
            LabelledPair(reference="r one", citation="c one", label=False, annotator="bo",
                         where=where[1])]


def test_jsonl_json_yaml_and_csv_give_the_same_pairs_kept_per_annotator(tmp_path: Path) -> None:
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "l.json").write_text(json.dumps({"records": ROWS}))
    (tmp_path / "l.yaml").write_text("- {reference: r one, citation: c one, label: true, "
                                     "annotator: ana}\n- {reference: r one, citation: c one, "
                                     "label: false, annotator: bo}\n")
    (tmp_path / "l.csv").write_text("reference,citation,label,annotator,note\n"
                                    "r one,c one,TRUE,ana,\nr one,c one,false,bo,\n")
    lines, records = ["line 1", "line 2"], ["record 1", "record 2"]
    assert load_pairs(tmp_path / "l.jsonl") == _expected(lines)
    assert load_pairs(tmp_path / "l.json") == _expected(records)
    assert load_pairs(tmp_path / "l.yaml") == _expected(records)
    assert load_pairs(tmp_path / "l.csv") == _expected(["line 2", "line 3"])


def test_a_jmespath_mapping_reads_another_shape(tmp_path: Path) -> None:
    path = tmp_path / "foreign.jsonl"
    path.write_text(json.dumps({"gold": {"text": "r one"}, "pred": {"text": "c one"},
                                "verdict": {"same": True}, "who": "ana", "extra": 1}) + "\n")
    pairs = load_pairs(path, {"reference": "gold.text", "citation": "pred.text",
                              "label": "verdict.same", "annotator": "who"})
    assert pairs == [LabelledPair(reference="r one", citation="c one", label=True,
                                  annotator="ana", where="line 1")]


@pytest.mark.parametrize(("line", "problem"), [
    ('{"reference": "r", "citation": "c", "label": "yes"}',
     "line 1, field 'label': Input should be a valid boolean (got 'yes')"),
    ('{"reference": "r", "citation": "c", "label": 1}',
     "line 1, field 'label': Input should be a valid boolean (got 1)"),
    ('{"reference": "r", "citation": "c"}',
     "line 1, field 'label': required field is missing"),
    ('{"reference": "  ", "citation": "c", "label": true}',
     "line 1, field 'reference': Value error, must not be blank (got '  ')"),
    ('{"citation": "c", "label": true}',
     "line 1, field 'reference': required field is missing"),
    ('{"reference": "r", "citation": "c", "label": true, "annotator": 7}',
     "line 1, field 'annotator': Input should be a valid string (got 7)"),
    ('["r", "c", true]', "line 1: expected an object, got list"),
    ('{"reference": "r" "citation": "c"}',
     "line 1: malformed JSON (Expecting ',' delimiter at column 19)"),
])
def test_errors_are_located(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DataError) as err:
        load_pairs(path)
    assert str(err.value) == f"{path}, {problem}"


def test_an_empty_file_and_a_bad_mapping_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text("\n")
    with pytest.raises(DataError, match=r"l\.jsonl: no labelled pair in the file$"):
        load_pairs(path)
    with pytest.raises(DataError, match=r"field 'lable': unknown mapping key; expected one of "
                                        r"reference, citation, label,"):
        load_pairs(path, {"lable": "x"})

"""Rows of ambiguous data (issue 23, item 7): data that could be read more than one way is
refused with its place, never resolved silently. A key given twice in one JSON or YAML object
(the reader kept the last), a CSV header naming a column twice, a CSV row with fewer or more
values than the header, an unclosed or stray CSV quote, case ids that differ only by
surrounding whitespace or Unicode normalisation, a blank citation, document or expected
source, a NaN price, and one annotator labelling the same pair both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, check, ids, run_row, write_files
from tests.bad_inputs.test_data_inputs import FILE, JSONL, KB, KB_CASE, KB_LINE, ONE, TWO, err
from tests.conftest import run_cli

TWICE = "the key is given twice in one object; keep one"
QUOTES = 'a quote inside a quoted value is written ""'
LOOKS = ("(ids are compared without surrounding whitespace, after Unicode NFC normalisation); "
         "make them differ")
BLANK = "Value error, must not be blank"
RESPONSES = ["dataset=file", "dataset.path=c.jsonl", "model=precomputed",
             "model.responses=r.jsonl"]
# The stored responses of the two cases of JSONL, as a side file.
ANSWERS = ('{"id": "1", "citations": [{"source": "a", "content": "the cat sat"}]}\n'
           '{"id": "2", "citations": [{"source": "c", "content": "birds sing"}]}\n')
YAML_TWICE = """\
- id: '1'
  query: q1
  answer: x
- id: '2'
  query: q2
  answer: y
  query: q3
"""


def lines(*records: dict[str, object]) -> str:
    """Records as JSON Lines."""
    return "".join(json.dumps(r) + "\n" for r in records)


ROWS = [
    # --- a key given twice in one object: each file a run reads, each format -----------------
    Row("a key twice in a JSONL case", [*FILE, "dataset.path=c.jsonl"], 2,
        err(f"c.jsonl, line 2, field 'query': {TWICE}"),
        {"c.jsonl": JSONL.replace('"query": "q2"', '"query": "q2", "query": "q3"')}),
    Row("a key twice in a nested object of a JSONL case", [*FILE, "dataset.path=c.jsonl"], 2,
        err(f"c.jsonl, line 1, field 'references[0].source': {TWICE}"),
        {"c.jsonl": JSONL.replace('"source": "a", "content": "the cat sat"}]',
                                  '"source": "a", "content": "the cat sat", "source": "b"}]',
                                  1)}),
    Row("a key twice in a JSONL line the general path reads",
        [*FILE, "dataset.path=c.jsonl", "dataset.mapping.query=question"], 2,
        err(f"c.jsonl, line 1, field 'question': {TWICE}"),
        {"c.jsonl": '{"id": "1", "question": "q1", "question": "q2"}\n'}),
    Row("a key twice in a JSON case", [*FILE, "dataset.path=c.json"], 2,
        err(f"c.json, record 2, field 'answer': {TWICE}"),
        {"c.json": json.dumps([ONE, TWO]).replace('"answer": "y"', '"answer": "y", '
                                                  '"answer": "z"')}),
    Row("a key twice in a JSON file's top level", [*FILE, "dataset.path=c.json"], 2,
        err(f"c.json, field 'cases': {TWICE}"),
        {"c.json": '{"cases": ' + json.dumps([ONE]) + ', "cases": ' + json.dumps([TWO]) + "}"}),
    Row("a key twice in a YAML case", [*FILE, "dataset.path=c.yaml"], 2,
        err("c.yaml, line 7: malformed YAML (key 'query' is given twice in one mapping, first "
            "on line 5; keep one)"), {"c.yaml": YAML_TWICE}),
    Row("a key twice in a JSON cell of a CSV file", [*FILE, "dataset.path=c.csv"], 2,
        err(f"c.csv, line 2, field 'metadata.w': {TWICE}"),
        {"c.csv": 'id,query,metadata\n1,q,"{""w"": 1, ""w"": 2}"\n'}),
    Row("a key twice in a stored responses file", RESPONSES, 2,
        err(f"r.jsonl, line 2, field 'citations[0].source': {TWICE}"),
        {"c.jsonl": JSONL,
         "r.jsonl": ANSWERS.replace('"source": "c"', '"source": "c", "source": "a"')}),
    Row("a key twice in a knowledge base", [*KB, "dataset.knowledge_base.path=kb.jsonl"], 2,
        err(f"kb.jsonl, line 1, field 'text': {TWICE}"),
        {"c.jsonl": KB_CASE, "kb.jsonl": KB_LINE.replace('"text"', '"text": "", "text"')}),
    # --- CSV: one value per column, quotes closed ----------------------------------------------
    Row("a CSV header naming a column twice", [*FILE, "dataset.path=c.csv"], 2,
        err("c.csv, line 1, field 'query': the header names this column twice; name each "
            "column once"), {"c.csv": "id,query,query\n1,q1,q2\n"}),
    Row("a CSV row with fewer values than the header", [*FILE, "dataset.path=c.csv"], 2,
        err("c.csv, line 3: 2 values for the header's 3 columns; give each column one value "
            "(it may be empty)"), {"c.csv": "id,query,answer\n1,q1,x\n2,q2\n"}),
    Row("a CSV row with more values than the header", [*FILE, "dataset.path=c.csv"], 2,
        err("c.csv, line 2: 4 values for the header's 3 columns; give each column one value "
            "(it may be empty)"), {"c.csv": "id,query,answer\n1,q1,x,y\n"}),
    Row("a CSV quote never closed", [*FILE, "dataset.path=c.csv"], 2,
        err("c.csv, line 3: a quoted value that is never closed (it runs to the end of the "
            f"file); {QUOTES}"), {"c.csv": 'id,query\n1,q1\n2,"q2\n3,q3\n'}),
    Row("text after a closing CSV quote", [*FILE, "dataset.path=c.csv"], 2,
        err(f"c.csv, line 2: malformed CSV (',' expected after '\"'); {QUOTES}"),
        {"c.csv": 'id,query\n1,"q1"x\n'}),
    # --- case ids that look the same --------------------------------------------------------
    Row("case ids differing by surrounding whitespace", [*FILE, "dataset.path=c.jsonl"], 2,
        err(f"c.jsonl, line 2, field 'id': case id '1 ' looks the same as '1' at line 1 {LOOKS}"),
        {"c.jsonl": JSONL.replace('"id": "2"', '"id": "1 "')}),
    Row("case ids differing by Unicode normalisation", [*FILE, "dataset.path=c.jsonl"], 2,
        err("c.jsonl, line 2, field 'id': case id 'e\\u0301' looks the same as '\\xe9' at "
            f"line 1 {LOOKS}"),
        {"c.jsonl": JSONL.replace('"id": "1"', '"id": "\\u00e9"')
                         .replace('"id": "2"', '"id": "e\\u0301"')}),
    Row("case ids differing by a no-break space in a CSV file", [*FILE, "dataset.path=c.csv"],
        2, err(f"c.csv, line 3, field 'id': case id '\\xa0a' looks the same as 'a' at line 2 "
               f"{LOOKS}"), {"c.csv": "id,query\na,q1\n\u00a0a,q2\n"}),
    Row("response ids differing by surrounding whitespace", RESPONSES, 2,
        err(f"r.jsonl, line 2, field 'id': case id ' 1' looks the same as '1' at line 1 {LOOKS}"),
        {"c.jsonl": JSONL, "r.jsonl": ANSWERS.replace('"id": "2"', '"id": " 1"')}),
    # --- a blank source: one rule for references, citations and documents --------------------
    Row("a blank citation source in a case", [*FILE, "dataset.path=c.jsonl"], 2,
        err(f"c.jsonl, line 2, field 'response.citations[0].source': {BLANK} (got '  ')"),
        {"c.jsonl": JSONL.replace('"source": "c"', '"source": "  "')}),
    Row("an empty citation source in a responses file", RESPONSES, 2,
        err(f"r.jsonl, line 1, field 'response.citations[0].source': {BLANK} (got '')"),
        {"c.jsonl": JSONL, "r.jsonl": ANSWERS.replace('"source": "a"', '"source": ""')}),
    Row("an empty expected source", [*FILE, "dataset.path=c.jsonl"], 2,
        err(f"c.jsonl, line 1, field 'expected_sources[1]': {BLANK} (got '')"),
        {"c.jsonl": JSONL.replace('"query": "q1"', '"query": "q1", "expected_sources": '
                                  '["a", ""]')}),
    Row("a blank document source in a knowledge base",
        [*KB, "dataset.knowledge_base.path=kb.jsonl"], 2,
        err(f"kb.jsonl, line 2, field 'source': {BLANK} (got '\\t')"),
        {"c.jsonl": KB_CASE, "kb.jsonl": KB_LINE + '\n{"source": "\\t", "text": "x"}\n'}),
    # --- prices -----------------------------------------------------------------------------
    Row("a NaN price", ["+prices.my-model.input=nan"], 2,
        "ragcite: error: prices.my-model.input: must be a number >= 0, got nan"),
    Row("a NaN output price", ["+prices.my-model.output=NaN"], 2,
        "ragcite: error: prices.my-model.output: must be a number >= 0, got nan"),
]

CALIBRATE = "runner.calibration.app"
PAIR = {"reference": "a b c", "citation": "a b c", "label": True}
CALIBRATE_ROWS = [
    Row("one annotator labelling a pair both ways", ["calibrate.labels=l.jsonl"], 2,
        "ragcite: error: l.jsonl, line 3, field 'label': 'ana' labelled this pair true at "
        "line 1 and false here; keep the one meant",
        {"l.jsonl": lines({**PAIR, "annotator": "ana"}, {**PAIR, "annotator": "bo"},
                          {**PAIR, "annotator": "ana", "label": False})}),
    Row("a key twice in a labels file", ["calibrate.labels=l.jsonl"], 2,
        f"ragcite: error: l.jsonl, line 1, field 'label': {TWICE}",
        {"l.jsonl": '{"reference": "a", "citation": "a", "label": true, "label": false}\n'}),
    Row("a labels CSV row with fewer values than the header", ["calibrate.labels=l.csv"], 2,
        "ragcite: error: l.csv, line 2: 2 values for the header's 3 columns; give each column "
        "one value (it may be empty)", {"l.csv": "reference,citation,label\na b,a b\n"}),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)


@pytest.mark.parametrize("row", CALIBRATE_ROWS, ids=ids(CALIBRATE_ROWS))
def test_calibrate_row(row: Row, tmp_path: Path) -> None:
    write_files(tmp_path, row.files)
    proc = run_cli(["tracking=none", "progress=false", *row.args], tmp_path,
                   module=CALIBRATE, timeout=120)
    check(row, proc, tmp_path)

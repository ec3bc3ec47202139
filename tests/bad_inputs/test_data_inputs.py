"""Rows of the data files a user gives (issue 17, items 4 and 6a): cases, knowledge bases,
stored responses, their mapping and transform, the folders a run writes to; the good files of
each format (with and without a byte-order mark) and the bad ones, each with its one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bad_inputs.table import BASE_ARGS, Row, check, ids, run_row, write_files
from tests.data.test_bad_data import bomb

FILE = ["dataset=file", "model=precomputed"]  # the stored responses in the cases
BOM = b"\xef\xbb\xbf"
GOOD = ("  source R/P/F1 0.500/0.500/0.500  (means over 2 scored cases, 0 failed; 1 of 2 "
        "ground-truth passages matched; the system answered 2 of the dataset's 2 cases)")
# Two cases: the first cites its reference exactly (every metric 1), the second cites another
# document with other words (every metric 0): each macro mean is 0.5.
ONE = {"id": "1", "query": "q1", "references": [{"source": "a", "content": "the cat sat"}],
       "citations": [{"source": "a", "content": "the cat sat"}], "answer": "x"}
TWO = {"id": "2", "query": "q2", "references": [{"source": "b", "content": "dogs bark loudly"}],
       "citations": [{"source": "c", "content": "birds sing"}], "answer": "y"}
JSONL = json.dumps(ONE) + "\n" + json.dumps(TWO) + "\n"
JSON = json.dumps([ONE, TWO], indent=1)
YAML = """\
- id: '1'
  query: q1
  references: [{source: a, content: the cat sat}]
  citations: [{source: a, content: the cat sat}]
  answer: x
- id: '2'
  query: q2
  references: [{source: b, content: dogs bark loudly}]
  citations: [{source: c, content: birds sing}]
  answer: y
"""


def csv_cell(value: object) -> str:
    """A JSON value as one quoted CSV cell."""
    return '"' + json.dumps(value).replace('"', '""') + '"'


CSV = "id,query,references,citations,answer\n" + "".join(
    f"{c['id']},{c['query']},{csv_cell(c['references'])},{csv_cell(c['citations'])},"
    f"{c['answer']}\n" for c in (ONE, TWO))
# One case, answered by the extractive model from a knowledge base of one passage: its
# reference, so every metric is 1.
KB_CASE = json.dumps({"id": "1", "query": "Where did the cat sit?",
                      "references": [{"source": "a", "content": "The cat sat on the mat."}]})
KB_LINE = json.dumps({"source": "a", "text": "The cat sat on the mat."})
KB_GOOD = ("threshold 0.5: context R/P/F1 1.000/1.000/1.000  source R/P/F1 1.000/1.000/1.000  "
           "(means over 1 scored case, 0 failed; 1 of 1 ground-truth passage matched; the "
           "system answered 1 of the dataset's 1 case)")
KB = ["dataset=file", "dataset.path=c.jsonl"]  # the default model retrieves from the KB
# A folder's documents are named by their file name.
KB_CASE_TXT = KB_CASE.replace('"source": "a"', '"source": "a.txt"')
SHAPES = """\
def as_list(record):
    return [record]


def texts(record):
    return [record["text"]]
"""
UTF8 = "; save the file as UTF-8"
SURROGATE = ("a lone surrogate escape (\\ud800) is not text; escape a whole character (a pair "
             "\\ud83d\\ude00 is fine)")
DEEP = "nested deeper than 100 levels of lists and objects (the limit)"


def err(text: str) -> str:
    return "ragcite: error: " + text


def nan(literal: str) -> str:
    return f"{literal} is not allowed (not a finite number); write null or a number"


def good(name: str, path: str, content: str | bytes) -> Row:
    return Row(name, [*FILE, f"dataset.path={path}"], 0,
               "threshold 0.5: context R/P/F1 0.500/0.500/0.500" + GOOD, {path: content})


ROWS = [
    # --- files that work -------------------------------------------------------------------
    good("a good JSONL file", "c.jsonl", JSONL),
    good("a good JSON file", "c.json", JSON),
    good("a good YAML file", "c.yaml", YAML),
    good("a good CSV file", "c.csv", CSV),
    good("a JSONL file with a BOM", "c.jsonl", BOM + JSONL.encode()),
    good("a JSON file with a BOM", "c.json", BOM + JSON.encode()),
    good("a YAML file with a BOM", "c.yaml", BOM + YAML.encode()),
    good("a CSV file with a BOM", "c.csv", BOM + CSV.encode()),
    good("a JSON file with CRLF line ends", "c.json", JSON.replace("\n", "\r\n")),
    Row("a knowledge base with a BOM", [*KB, "dataset.knowledge_base.path=kb.jsonl"], 0,
        KB_GOOD, {"c.jsonl": KB_CASE, "kb.jsonl": BOM + KB_LINE.encode()}),
    Row("a knowledge-base folder with a BOM'd text file", [*KB, "dataset.knowledge_base.path=kb"],
        0, KB_GOOD, {"c.jsonl": KB_CASE_TXT, "kb/a.txt": BOM + b"The cat sat on the mat."}),
    # --- encodings ---------------------------------------------------------------------------
    Row("invalid UTF-8 in a JSONL file", [*FILE, "dataset.path=c.jsonl"], 2,
        err("c.jsonl, line 2: invalid UTF-8 (byte 0xe9 at column 26)" + UTF8),
        {"c.jsonl": JSONL.split("\n")[0].encode() + b'\n{"id": "2", "query": "caf\xe9"}\n'}),
    Row("invalid UTF-8 in a CSV file", [*FILE, "dataset.path=c.csv"], 2,
        err("c.csv, line 3: invalid UTF-8 (byte 0xe9 at column 6)" + UTF8),
        {"c.csv": b"id,query\n1,q\n2,caf\xe9\n"}),
    Row("invalid UTF-8 in a JSON file", [*FILE, "dataset.path=c.json"], 2,
        err("c.json, line 4: invalid UTF-8 (byte 0xc3 at column 14)" + UTF8),
        {"c.json": JSON.encode().replace(b'"q1"', b'"q\xc3"')}),
    Row("invalid UTF-8 in a YAML file", [*FILE, "dataset.path=c.yaml"], 2,
        err("c.yaml, line 7: invalid UTF-8 (byte 0x80 at column 10)" + UTF8),
        {"c.yaml": YAML.encode().replace(b"q2", b"\x80q")}),
    Row("invalid UTF-8 in a knowledge base", [*KB, "dataset.knowledge_base.path=kb.jsonl"], 2,
        err("kb.jsonl, line 2: invalid UTF-8 (byte 0xe9 at column 29)" + UTF8),
        {"c.jsonl": KB_CASE,
         "kb.jsonl": KB_LINE.encode() + b'\n{"source": "b", "text": "caf\xe9"}\n'}),
    Row("invalid UTF-8 in a knowledge-base text file", [*KB, "dataset.knowledge_base.path=kb"], 2,
        err("kb/b.md, line 2: invalid UTF-8 (byte 0xe9 at column 4)" + UTF8),
        {"c.jsonl": KB_CASE, "kb/a.txt": "fine", "kb/b.md": b"# B\ncaf\xe9\n"}),
    # --- values that are not text or not numbers ---------------------------------------------
    Row("a lone surrogate in a JSONL file", [*FILE, "dataset.path=c.jsonl"], 2,
        err("c.jsonl, line 2, field 'query': " + SURROGATE),
        {"c.jsonl": JSONL.replace('"q2"', '"\\ud800"')}),
    Row("a lone surrogate in a JSON file", [*FILE, "dataset.path=c.json"], 2,
        err("c.json, record 1, field 'references[0].content': " + SURROGATE),
        {"c.json": JSON.replace('"the cat sat"', '"\\ud800"', 1)}),
    Row("a lone surrogate in a YAML file", [*FILE, "dataset.path=c.yaml"], 2,
        err("c.yaml, record 2, field 'answer': " + SURROGATE),
        {"c.yaml": YAML.replace("answer: y", 'answer: "\\ud800"')}),
    Row("a lone surrogate in a stored responses file",
        ["dataset=file", "dataset.path=c.jsonl", "model=precomputed", "model.responses=r.jsonl"],
        2, err("r.jsonl, line 1, field 'citations[0].content': " + SURROGATE),
        {"c.jsonl": JSONL, "r.jsonl": '{"id": "1", "citations": [{"source": "a", '
                                      '"content": "\\ud800"}]}\n'}),
    Row("NaN in a JSONL file", [*FILE, "dataset.path=c.jsonl"], 2,
        err("c.jsonl, line 1, field 'metadata.score': " + nan("NaN")),
        {"c.jsonl": JSONL.replace('"answer": "x"', '"answer": "x", "metadata": {"score": NaN}')}),
    Row("Infinity in a JSON file", [*FILE, "dataset.path=c.json"], 2,
        err("c.json, record 2, field 'metadata.score': " + nan("Infinity")),
        {"c.json": json.dumps([ONE, {**TWO, "metadata": {"score": float("inf")}}])}),
    Row("-Infinity in a CSV cell", [*FILE, "dataset.path=c.csv"], 2,
        err("c.csv, line 2, field 'metadata.w': " + nan("-Infinity")),
        {"c.csv": 'id,query,metadata\n1,q,"{""w"": -Infinity}"\n'}),
    Row(".nan in a YAML file", [*FILE, "dataset.path=c.yaml"], 2,
        err("c.yaml, record 1, field 'metadata.score': " + nan("nan")),
        {"c.yaml": YAML.replace("answer: x", "answer: x\n  metadata: {score: .nan}")}),
    Row("an integer of 5,000 digits", [*FILE, "dataset.path=c.jsonl"], 2,
        err("c.jsonl, line 2: an integer of more than 4300 digits; write it as a string"),
        {"c.jsonl": JSONL.replace('"answer": "y"', '"answer": "y", "metadata": {"n": 1'
                                  + "0" * 5000 + "}")}),
    # --- bounds ------------------------------------------------------------------------------
    Row("JSONL nested 101 levels", [*FILE, "dataset.path=c.jsonl"], 2,
        err("c.jsonl, line 1, field 'metadata.x[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
            "...': " + DEEP),
        {"c.jsonl": '{"id": "1", "query": "q", "metadata": {"x": ' + "[" * 99 + "]" * 99
         + "}}\n"}),
    Row("JSON nested 50,000 levels", [*FILE, "dataset.path=c.json"], 2,
        err("c.json, line 2: " + DEEP), {"c.json": "[\n" + "[" * 50_000 + "]" * 50_000 + "]"}),
    Row("YAML nested 5,000 levels", [*FILE, "dataset.path=c.yaml"], 2,
        err("c.yaml, line 3: " + DEEP),
        {"c.yaml": "- id: '1'\n  query: q\n  metadata: " + "[" * 5000 + "]" * 5000 + "\n"}),
    Row("a YAML alias bomb inside a record", [*FILE, "dataset.path=c.yaml"], 2,
        err("c.yaml, record 1, field 'metadata.g': YAML aliases expand it to more than "
            "1,000,000 values beyond those written (the limit; a 'billion laughs' document?)"),
        {"c.yaml": "- id: '1'\n  query: q\n  metadata:\n" + bomb(9)}),
    Row("a YAML alias bomb at the top level", [*FILE, "dataset.path=c.yaml"], 2,
        err("c.yaml: expected a list of records (or an object with a 'cases' list), got dict"),
        {"c.yaml": bomb(9, indent="")}),
    Row("a YAML record that contains itself", [*FILE, "dataset.path=c.yaml"], 2,
        err("c.yaml, record 1, field 'metadata.self': a YAML alias inside its own anchor: the "
            "record contains itself"),
        {"c.yaml": "- id: '1'\n  query: q\n  metadata: &m {self: *m}\n"}),
    # --- knowledge bases ---------------------------------------------------------------------
    Row("an empty knowledge base", [*KB, "dataset.knowledge_base.path=kb.jsonl"], 2,
        err("kb.jsonl: the knowledge base has no documents; a retrieving model needs at least "
            "one document with text"), {"c.jsonl": KB_CASE, "kb.jsonl": "\n"}),
    Row("a knowledge-base folder without text files", [*KB, "dataset.knowledge_base.path=kb"],
        2, err("kb: the knowledge base has no documents; a retrieving model needs at least one "
               "document with text"), {"c.jsonl": KB_CASE, "kb/notes.pdf": b"%PDF"}),
    Row("a knowledge base of blank documents", [*KB, "dataset.knowledge_base.path=kb.jsonl"], 2,
        err("kb.jsonl: the knowledge base has only blank documents (2); a retrieving model "
            "needs at least one document with text"),
        {"c.jsonl": KB_CASE, "kb.jsonl": '{"source": "a", "text": ""}\n'
                                         '{"source": "b", "text": " \\n"}\n'}),
    Row("a knowledge-base transform giving strings",
        [*KB, "dataset.knowledge_base.path=kb.jsonl",
         "dataset.knowledge_base.transform=shapes.texts"],
        2, err("kb.jsonl, line 1: transform shapes.texts gave str ('The cat sat on the mat.'); "
               "expected dicts (one per document)"),
        {"c.jsonl": KB_CASE, "kb.jsonl": KB_LINE, "shapes.py": SHAPES}),
    # --- mapping and transform ---------------------------------------------------------------
    Row("an unknown JMESPath function", [*FILE, "dataset.path=c.jsonl",
                                          'dataset.mapping.query="lenght(query)"'], 2,
        err("c.jsonl (mapping), field 'query': unknown JMESPath function lenght() in "
            "'lenght(query)'; the functions are abs, avg, ceil, contains, ends_with, floor, "
            "join, keys, length, map, max, max_by, merge, min, min_by, not_null, reverse, sort, "
            "sort_by, starts_with, sum, to_array, to_number, to_string, type, values, zip"),
        {"c.jsonl": JSONL}),
    Row("a JMESPath type error", [*FILE, "dataset.path=c.jsonl",
                                   'dataset.mapping.query="join(`-`, query)"'], 2,
        err("c.jsonl, line 1, field 'mapping.query': expression 'join(`-`, query)' failed: In "
            "function join(), invalid type for value: q1, expected one of: ['array-string'], "
            'received: "string"'), {"c.jsonl": JSONL}),
    Row("a transform returning a list", [*FILE, "dataset.path=c.jsonl",
                                          "dataset.transform=shapes.as_list"], 2,
        err("c.jsonl, line 1: transform shapes.as_list returned list ([{'id': '1', 'query': "
            "'q1', 'referenc...); expected a dict (or None to skip the record)"),
        {"c.jsonl": JSONL, "shapes.py": SHAPES}),
    Row("a transform that does not exist", [*FILE, "dataset.path=c.jsonl",
                                             "dataset.transform=shapes.nope"], 2,
        err("dataset.transform: cannot import shapes.nope: module 'shapes' has no attribute "
            "'nope'"),
        {"c.jsonl": JSONL, "shapes.py": SHAPES}),
    # --- paths -------------------------------------------------------------------------------
    Row("a pkg:// package that does not exist", [*FILE, "dataset.path=pkg://no_such/c.jsonl"],
        2, err("pkg://no_such/c.jsonl: no installed package 'no_such'; a pkg:// path reads "
               "pkg://<package>/<file>, e.g. pkg://runner.datasets/demo/cases.jsonl")),
    Row("a pkg:// path leaving its package",
        [*FILE, "dataset.path=pkg://runner.datasets/../../etc/passwd"], 2,
        err("pkg://runner.datasets/../../etc/passwd: a pkg:// path must stay inside its package "
            "(no '..'); give a plain path for other files")),
    Row("a cases file that does not exist", [*FILE, "dataset.path=missing.jsonl"], 2,
        err("missing.jsonl: file not found")),
    Row("a directory as the cases file", [*FILE, "dataset.path=cases.jsonl"], 2,
        err("cases.jsonl: is a directory; expected a file"), {"cases.jsonl/x.txt": "x"}),
    Row("a directory as the responses file",
        [*FILE, "dataset.path=c.jsonl", "model.responses=responses"], 2,
        err("responses: is a directory; expected a file"),
        {"c.jsonl": JSONL, "responses/r.jsonl": JSONL}),
    Row("cache.dir under a file", [*FILE, "dataset.path=c.jsonl", "cache.dir=notes.txt/cache"],
        2, err("cache.dir: {tmp}/notes.txt/cache is under {tmp}/notes.txt, which is a file; "
               "give a folder (created when missing)"), {"c.jsonl": JSONL, "notes.txt": "x"}),
    Row("output_root under a file", [*FILE, "dataset.path=c.jsonl", "output_root=notes.txt/out"],
        2, err("output_root: notes.txt/out is under notes.txt, which is a file; give a folder "
               "(created when missing)"), {"c.jsonl": JSONL, "notes.txt": "x"}),
    Row("output_root under a file in a sweep",
        ["hydra.mode=MULTIRUN", *FILE, "dataset.path=c.jsonl", "output_root=notes.txt"], 2,
        err("output_root: notes.txt is a file; give a folder (created when missing)"),
        {"c.jsonl": JSONL, "notes.txt": "x"}),
    # --- a bad record further down a streamed file -------------------------------------------
    Row("a lone surrogate in a later batch (refused at open)",
        [*FILE, "dataset.path=c.jsonl", "scoring.batch_size=1"], 2,
        err("c.jsonl, line 3, field 'query': " + SURROGATE),
        {"c.jsonl": JSONL + '{"id": "3", "query": "\\ud800"}\n'}),
    Row("a record without a query in a later batch",
        [*FILE, "dataset.path=c.jsonl", "scoring.batch_size=1"], 2,
        err("c.jsonl, line 3, field 'query': required field is missing"),
        {"c.jsonl": JSONL + '{"id": "3"}\n'}),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)


def test_a_nested_yaml_alias_bomb_is_refused_in_bounded_memory_and_time(tmp_path: Path) -> None:
    # Before: 7 GB and 46 s, as validation expanded the list shared 9^9 times. A wrapper runs
    # the command and reports its peak memory (the largest child's resident set, in kB) and
    # the CPU seconds it used (which, unlike the time on the clock, a loaded machine does not
    # stretch).
    write_files(tmp_path, {"c.yaml": "- id: '1'\n  query: q\n  metadata:\n" + bomb(12)})
    row = ROWS[[r.name for r in ROWS].index("a YAML alias bomb inside a record")]
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.run([sys.executable, '-m', 'runner.cli', *sys.argv[1:]],"
               " capture_output=True, text=True)\n"
               "sys.stderr.write(p.stderr)\n"
               "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime)\n"
               "sys.exit(p.returncode)\n")
    proc = subprocess.run([sys.executable, "-c", wrapper, *BASE_ARGS, *row.args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    check(row, proc, tmp_path)
    peak, cpu = proc.stdout.split()
    assert int(peak) < 500 * 1024, f"peak {peak} kB"
    assert float(cpu) < 20, f"{float(cpu):.1f} CPU s (the command's start-up included)"

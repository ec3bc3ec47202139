"""Rows of other tools' files read by name (issue 26, item 4): `dataset=ragas`, `dataset=alce`,
`dataset=langchain`, each refusing what it cannot score with one located line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, ids, run_row

STORED = ["model=precomputed"]
SAMPLE = {"user_input": "q", "response": "a", "reference_contexts": ["r"],
          "reference_context_ids": ["x"], "retrieved_contexts": [], "retrieved_context_ids": []}

ITEM = {"question": "q", "output": "a [1].", "docs": [{"title": "t", "text": "x"}]}


def err(text: str) -> str:
    return "ragcite: error: " + text


def lines(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


ROWS = [
    *(Row(f"dataset={name} without a path", [f"dataset={name}", *STORED], 2,
          err("dataset.path: required and not set; give it as dataset.path=..."))
      for name in ("ragas", "alce", "langchain")),
    Row("a RAGAS sample whose retrieved contexts have no ids",
        ["dataset=ragas", "dataset.path=s.jsonl", *STORED], 2,
        err("s.jsonl, line 2, field 'mapping.citations': expression 'response && zip("
            "retrieved_context_ids, r….{ source: to_string([0]), content: [1]}' failed: In "
            "function zip(), invalid type for value: None, expected one of: ['array'], "
            'received: "null"'),
        {"s.jsonl": lines(SAMPLE, {**SAMPLE, "retrieved_context_ids": None,
                                   "retrieved_contexts": ["c"]})}),
    Row("a RAGAS sample with more reference ids than contexts",
        ["dataset=ragas", "dataset.path=s.jsonl", *STORED], 2,
        err("s.jsonl, line 1, field 'mapping.references': expression 'zip(reference_context_ids"
            ", reference_con…].{source: to_string([0]), content: [1]}' failed: zip() of lists of "
            "2 and 1 items; give lists of one length"),
        {"s.jsonl": lines({**SAMPLE, "reference_context_ids": ["x", "y"]})}),
    Row("a LangChain source document without metadata.source",
        ["dataset=langchain", "dataset.path=o.jsonl", *STORED], 2,
        err("o.jsonl, line 1, field 'response.citations[0].source': Input should be a valid "
            "string (got None)"),
        {"o.jsonl": lines({"query": "q", "result": "a", "references": [],
                           "source_documents": [{"page_content": "x", "metadata": {}}]})}),
    Row("a LangChain output without ground truth",
        ["dataset=langchain", "dataset.path=o.jsonl", *STORED], 2,
        err("o.jsonl, line 1, field 'mapping.references': expression 'references' yielded "
            "null; expected a list of {source, content} objects"),
        {"o.jsonl": lines({"query": "q", "result": "a", "source_documents": []})}),
    Row("an ALCE item without ground truth", ["dataset=alce", "dataset.path=r.json", *STORED], 2,
        err("r.json, record 2, field 'mapping.references': expression 'references' yielded "
            "null; expected a list of {source, content} objects"),
        {"r.json": json.dumps({"args": {}, "data": [{**ITEM, "references": []}, ITEM]})}),
    Row("an ALCE doc without text", ["dataset=alce", "dataset.path=r.json", *STORED], 2,
        err("r.json, record 1, field 'response.documents[0].text': Input should be a valid "
            "string (got None)"),
        {"r.json": json.dumps({"data": [{**ITEM, "references": [], "docs": [{"title": "t"}]}]})}),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)

"""Rows of the citation shapes of SPEC 2.1 (issue 26): markers past the last document are
counted dangling (not an error), an offset past its document's end and an unknown provider are
one located line each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, ids, run_row

FILE = ["dataset=file", "dataset.path=c.jsonl", "model=precomputed"]
REF = [{"source": "a", "content": "the cat sat on the mat"}]
DOCS = [{"source": "a", "text": "the cat sat on the mat"}]


def line(response: dict[str, object]) -> str:
    return json.dumps({"id": "1", "query": "q", "references": REF, "response": response}) + "\n"


def err(text: str) -> str:
    return "ragcite: error: " + text


ROWS = [
    # [1] cites the reference's own text (every figure 1); [2] and [3] point past the one
    # document: counted dangling (2, in metrics.json), not an error.
    Row("a marker past the last document", FILE, 0,
        "threshold 0.5: context R/P/F1 1.000/1.000/1.000  source R/P/F1 1.000/1.000/1.000  "
        "(means over 1 scored case, 0 failed; 1 of 1 ground-truth passage matched; the system "
        "answered 1 of the dataset's 1 case)",
        {"c.jsonl": line({"answer": "Cats sit [1][2]. Mats [3].", "documents": DOCS})}),
    Row("an offset past the document's end", [*FILE, "dataset.knowledge_base.path=kb.jsonl"], 2,
        err("c.jsonl, case '1', field 'response.citations[0].end': the span 4:99 does not fit "
            "in 'a'; expected 0 <= start <= end <= 22, the document's length"),
        {"c.jsonl": line({"answer": "x", "citations": [{"source": "a", "start": 4, "end": 99}]}),
         "kb.jsonl": json.dumps(DOCS[0]) + "\n"}),
    Row("an offset into no document of the knowledge base", FILE, 2,
        err("c.jsonl, case '1', field 'response.citations[0].source': 'a' is not a document of "
            "the knowledge base, whose text offsets cite"),
        {"c.jsonl": line({"answer": "x", "citations": [{"source": "a", "start": 0, "end": 3}]})}),
    Row("a negative offset", FILE, 2,
        err("c.jsonl, line 1, field 'response.citations[0].start': Input should be greater than "
            "or equal to 0 (got -1)"),
        {"c.jsonl": line({"citations": [{"source": "a", "start": -1, "end": 3}]})}),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)
    if row.status == 0:
        (metrics,) = tmp_path.rglob("metrics.json")
        assert json.loads(metrics.read_text())["dangling"] == {"citations": 2, "answers": 1}


def test_an_unknown_provider(tmp_path: Path) -> None:
    # The providers are the modules of runner.data.citations, listed in the line.
    from runner.data.citations import providers

    run_row(Row("an unknown provider", FILE, 2, err(
        "c.jsonl, line 1, field 'response.provider': unknown provider 'acme'; expected one of "
        + ", ".join(providers())),
        {"c.jsonl": line({"answer": "x", "provider": "acme", "raw": {}})}), tmp_path)

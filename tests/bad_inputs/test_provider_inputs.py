"""Rows of stored provider replies (issue 26, item 2; SPEC 2.1): a reply missing the field that
carries its citations, a reply of another shape, and one with a field missing deeper down each
stop the run with one located line; the first case of each file is good, so the line names the
second."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.bad_inputs.table import Row, ids, run_row
from tests.data.test_providers import _without, fixture

FILE = ["dataset=file", "dataset.path=c.jsonl", "model=precomputed"]


def err(text: str) -> str:
    return "ragcite: error: c.jsonl, line 2, field 'response" + text


def cases(provider: str, raw: Any) -> str:
    """Two cases: the provider's fixture reply, then `raw` in its place."""
    data = fixture(provider)
    return "".join(json.dumps({
        "id": str(k), "query": "How many days of leave?",
        "references": [{"source": "leave-policy.txt", "content": "25 days of paid leave"}],
        "response": {"provider": provider, "raw": reply, "documents": data["documents"]}}) + "\n"
        for k, reply in enumerate((data["raw"], raw), 1))


def _no_segment() -> Any:
    raw = fixture("gemini")["raw"]
    del raw["candidates"][0]["groundingMetadata"]["groundingSupports"][1]["segment"]
    return raw


ROWS = [
    Row("an anthropic reply without citations", FILE, 2,
        err(".raw.content[0].citations': missing; text blocks with citations are read"),
        {"c.jsonl": cases("anthropic", _without("anthropic"))}),
    Row("an openai reply without annotations", FILE, 2,
        err(".raw.output[2].content[0].annotations': missing; an output_text lists its "
            "citations"),
        {"c.jsonl": cases("openai", _without("openai"))}),
    Row("a gemini reply without grounding metadata", FILE, 2,
        err(".raw.candidates[0].groundingMetadata': missing; grounded replies are read"),
        {"c.jsonl": cases("gemini", _without("gemini"))}),
    Row("a cohere reply without citations", FILE, 2,
        err(".raw.message.citations': missing; Chat v2 replies are read (not v1's)"),
        {"c.jsonl": cases("cohere", _without("cohere"))}),
    Row("a cohere v1 reply", FILE, 2,
        err(".raw.message.citations': missing; Chat v2 replies are read (not v1's)"),
        {"c.jsonl": cases("cohere", {"text": "25 days.", "citations": [
            {"start": 0, "end": 7, "text": "25 days", "document_ids": ["doc_0"]}]})}),
    Row("an openai chat completion as a responses reply", FILE, 2,
        err(".raw.output': missing; a Responses API reply is read"),
        {"c.jsonl": cases("openai", {"object": "chat.completion", "choices": []})}),
    Row("a gemini support without its segment", FILE, 2,
        err(".raw': not a gemini API reply (KeyError('segment'))"),
        {"c.jsonl": cases("gemini", _no_segment())}),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)

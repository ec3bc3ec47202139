"""Cases and responses kept for the next job of a sweep (runner.pipeline.LoadedCases,
KeptResponses)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from runner.cache import CacheStats
from runner.data.dataset import Dataset
from runner.data.models import Case, Citation, Response
from runner.pipeline import KeptResponses, LoadedCases, get_responses


def _write(path: Path, ids: list[str]) -> None:
    lines = [json.dumps({"id": i, "query": f"q{i}",
                         "references": [{"source": "a.pdf", "content": "x"}]}) for i in ids]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_kept_cases_come_back_only_for_the_same_contents_and_config(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    _write(data, ["a", "b"])
    cfg = {"name": "file", "path": str(data)}
    loaded = LoadedCases()
    first = Dataset(cfg)
    assert loaded.get(first) is None  # nothing kept yet
    cases = list(first.iter_cases())
    loaded.keep(first, cases)
    assert loaded.get(Dataset(dict(cfg))) is cases  # the same file and config: the same list
    assert loaded.get(Dataset({**cfg, "limit": 1})) is None  # another loading config
    assert loaded.get(Dataset({**cfg, "name": "other"})) is None
    _write(data, ["a", "c"])  # the file changed
    assert loaded.get(Dataset(dict(cfg))) is None
    data.unlink()  # gone: loading reports it, not the lookup
    assert loaded.get(Dataset(dict(cfg))) is None
    loaded.clear()
    _write(data, ["a", "b"])
    assert loaded.get(Dataset(dict(cfg))) is None


class _Counting:
    """An adapter that answers each case with its query as a cited passage, counting calls;
    case "bad" fails."""

    cacheable = False

    def __init__(self, name: str = "count") -> None:
        self.name = name
        self.asked: list[str] = []

    def identity(self) -> dict[str, str]:
        return {"name": self.name}

    def bind(self, context: Any) -> None:
        pass

    async def respond(self, cases: Sequence[Case]) -> list[Response]:
        self.asked.extend(c.id for c in cases)
        return [Response(error="down") if c.id == "bad" else
                Response(citations=[Citation(source="a.pdf", content=c.query)]) for c in cases]


def _responses(adapter: _Counting, cases: list[Case], kept: KeptResponses | None,
               digest: str = "d1") -> tuple[list[Response], dict[str, Any]]:
    # In a thread of its own: get_responses runs the adapter with asyncio.run, which refuses
    # to run where a loop is running (a session's browser fixture keeps one in this thread).
    stats = CacheStats()
    with ThreadPoolExecutor(1) as pool:
        out = pool.submit(get_responses, adapter, cases, digest, None, stats, 10, False,
                          kept).result()
    return out, stats.to_dict()


def test_a_sweep_job_takes_the_responses_to_the_same_cases_from_the_job_before(
        tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    _write(data, ["a", "b"])
    cases = list(Dataset({"name": "file", "path": str(data)}).iter_cases())
    kept = KeptResponses()
    adapter = _Counting()
    first, stats = _responses(adapter, cases, kept)
    assert adapter.asked == ["a", "b"] and stats["computed"]["responses"] == 2
    again, stats = _responses(adapter, cases, kept)
    assert again is first and adapter.asked == ["a", "b"]  # not asked again
    assert stats["hits"]["responses"] == 2 and stats["computed"]["responses"] == 0
    # An equal but other list of cases, another adapter identity or dataset: asked again.
    _responses(adapter, list(cases), kept)
    assert adapter.asked == ["a", "b"] * 2
    _responses(_Counting("other"), list(cases), kept)
    _responses(adapter, cases, kept, digest="d2")
    assert adapter.asked == ["a", "b"] * 3
    # Without `kept` nothing is kept or taken.
    _responses(adapter, cases, None)
    assert adapter.asked == ["a", "b"] * 4
    # A failed response is asked for again, as the response cache does.
    _write(data, ["a", "bad"])
    failing = list(Dataset({"name": "file", "path": str(data)}).iter_cases())
    out, _ = _responses(adapter, failing, kept)
    assert out[1].error == "down"
    _responses(adapter, failing, kept)
    assert adapter.asked == ["a", "b"] * 4 + ["a", "bad"] * 2
    kept.clear()
    assert kept.get("anything", failing) is None

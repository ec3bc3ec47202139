"""Cases kept for the next job of a sweep (runner.pipeline.LoadedCases)."""

from __future__ import annotations

import json
from pathlib import Path

from runner.data.dataset import Dataset
from runner.pipeline import LoadedCases


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

"""Job folders for the tracking tests, written as a job writes them (docs/results.md).

Three cases whose one citation each is similar to its reference by 1.0, 0.47 and 0.19 (ngram):
thresholds 0.15, 0.3 and 0.8 give context recall 1, 2/3 and 1/3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

import runner
from runner.results import PASSAGES_FILE, result_dirs, write_job, write_result
from tests.helpers import REMOTE_REQUEST, VPN, case

DATASET_PATH = Path(__file__).resolve().parent / "cases.jsonl"  # named, never read
DIGEST = "d1g3st"
MIXED = " ".join(REMOTE_REQUEST.split()[:10] + VPN.split()[:8])
FEW = " ".join(REMOTE_REQUEST.split()[:5] + VPN.split()[:12])
RECALL = {0.15: 1.0, 0.3: 2 / 3, 0.8: 1 / 3}


def cases() -> list[Any]:
    """The three cases."""
    return [case([("a.pdf", REMOTE_REQUEST)], [("a.pdf", REMOTE_REQUEST)], id="exact"),
            case([("a.pdf", REMOTE_REQUEST)], [("a.pdf", MIXED)], id="mixed"),
            case([("b.pdf", REMOTE_REQUEST)], [("b.pdf", FEW)], id="few")]


def config(threshold: float | list[float], secret: str = "***") -> dict[str, Any]:
    """A job's composed config (redacted, as the job writes it)."""
    return {
        "dataset": {"name": "trio", "path": str(DATASET_PATH)},
        "model": {"_target_": "runner.adapters.python.PythonAdapter",
                  "function": "tests.tracking.fake_models.stored", "api_key": secret},
        "matcher": {"_target_": "runner.matchers.ngram.NgramMatcher", "n": 3},
        "scoring": {"threshold": threshold, "zero_division": "auto"},
        "tracking": {"_target_": "runner.tracking.mlflow.MlflowTracker", "tags": {}},
        "experiment": "ragcite", "run_name": None, "gate": {},
    }


def extra(threshold: float, index: int, level: str | None, name: str) -> dict[str, Any]:
    """The sections of metrics.json the pipeline adds to a result."""
    return {
        "threshold": {"value": threshold, "level": level, "index": index},
        "run": {"name": name, "ragcite_version": runner.__version__},
        "dataset": {"name": "trio", "path": str(DATASET_PATH), "digest": DIGEST, "n_cases": 3},
        "model": {"name": "python", "identity": {"function": "stored"}},
        "matcher": {"name": "ngram", "identity": {"n": 3}},
        "scoring": {"zero_division": "auto", "bands": {"green": 0.75}},
        "usage": {"model": {"requests": 3, "cost_usd": 0.25}},
        "gates": {"passed": True, "failures": [], "config": {}},
        "execution": {"workers": 1, "timings": {"model_s": 0.5, "score_s": 0.25},
                      "cache": {"enabled": True, "hits": {"responses": 2}}},
    }


def make_job(job_dir: Path, thresholds: list[float], levels: list[str | None] | None = None,
             secret: str = "***", report: bool = False) -> list[Path]:
    """Write a job deciding `thresholds`; returns its result folders (from job.json).

    One threshold: the job folder is the result folder. Several: subfolders ``t<value>``
    sharing ``../passages.parquet``.
    """
    levels = levels or [None] * len(thresholds)
    several = len(thresholds) > 1
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / "config.yaml").write_text(
        yaml.safe_dump(config(thresholds if several else thresholds[0], secret)),
        encoding="utf-8")
    names = []
    for index, (value, level) in enumerate(zip(thresholds, levels)):
        name = f"t{value:g}" if several else "."
        folder = job_dir / name if several else job_dir
        result = runner.evaluate(cases(), matcher="ngram", threshold=value)
        result.extra.update(extra(value, index, level, f"trio_python_ngram_t{value:g}"))
        write_result(folder, result,
                     passages=f"../{PASSAGES_FILE}" if several else PASSAGES_FILE)
        (folder / "config.yaml").write_text(yaml.safe_dump(config(value, secret)),
                                            encoding="utf-8")
        if report:
            (folder / "report.html").write_text(f"<html>t={value}</html>\n", encoding="utf-8")
        names.append(name)
    write_job(job_dir, names)
    return result_dirs(job_dir)

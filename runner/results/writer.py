"""Writing a job's results files (docs/results.md): what no threshold changes once, what each
threshold decides once per threshold; ``job.json`` comes last, after the reports
(runner/pipeline.py).

A file is written under a ``.partial`` name and renamed when complete, and each result's
``metrics.json`` is written after its other files, so an interrupted job never looks finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import yaml

from runner.results import (
    CASES_FILE,
    CONFIG_FILE,
    METRICS_FILE,
    PASSAGES_FILE,
    RunResult,
    write_job,
    write_metrics,
)
from runner.scoring.thresholds import Threshold


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


class ResultWriter:
    """Streams the results files of a job deciding `thresholds`.

    One threshold: the job's folder is its result folder. Several: one subfolder each
    (:attr:`Threshold.folder <runner.scoring.thresholds.Threshold.folder>`), sharing the job's
    ``passages.jsonl``.

    Args:
        job_dir: The job's folder.
        thresholds: The thresholds it decides, in order.
    """

    def __init__(self, job_dir: Path, thresholds: Sequence[Threshold]) -> None:
        self.job_dir = job_dir
        self.thresholds = list(thresholds)
        self.dirs = [job_dir if len(thresholds) == 1 else job_dir / t.folder for t in thresholds]
        for folder in self.dirs:
            folder.mkdir(parents=True, exist_ok=True)
        self._passages: IO[bytes] = _partial(job_dir / PASSAGES_FILE).open("wb")
        self._cases: list[IO[bytes]] = [_partial(d / CASES_FILE).open("wb") for d in self.dirs]
        self.lines = 0  # cases written so far

    def write(self, passages: Sequence[bytes], cases: Sequence[Sequence[bytes]]) -> None:
        """Append lines: each case's passages line, and per threshold each case's line."""
        self._passages.write(b"".join(passages))
        self.lines += len(passages)
        for fh, lines in zip(self._cases, cases):
            fh.write(b"".join(lines))

    def close(self) -> None:
        """Close the open files (what was written stays ``.partial``)."""
        for fh in (self._passages, *self._cases):
            fh.close()

    def finish(self, results: Sequence[RunResult], config: dict[str, Any]) -> None:
        """Complete the results: the lines renamed into place, then per threshold its
        ``config.yaml`` (a subfolder's) and ``metrics.json`` (``job.json`` is the caller's).

        Args:
            results: One result per threshold, in order.
            config: The job's config (secrets redacted); a threshold's folder gets it with
                ``scoring.threshold`` set to that threshold.
        """
        self.close()
        _partial(self.job_dir / PASSAGES_FILE).replace(self.job_dir / PASSAGES_FILE)
        for folder, threshold, result in zip(self.dirs, self.thresholds, results):
            _partial(folder / CASES_FILE).replace(folder / CASES_FILE)
            if folder != self.job_dir:
                scoring = {**config.get("scoring", {}), "threshold": threshold.value}
                write_config(folder / CONFIG_FILE, {**config, "scoring": scoring})
            passages = PASSAGES_FILE if folder == self.job_dir else f"../{PASSAGES_FILE}"
            result.extra["files"] = {"passages": passages, "cases": CASES_FILE}
            write_metrics(folder / METRICS_FILE, result)

    def mark_complete(self) -> None:
        """Write ``job.json``, the job's last file: it lists the result folders."""
        write_job(self.job_dir, [t.folder if d != self.job_dir else "."
                                 for t, d in zip(self.thresholds, self.dirs)])


def write_config(path: Path, config: dict[str, Any]) -> None:
    """Write a (redacted) config as YAML."""
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), "utf-8")

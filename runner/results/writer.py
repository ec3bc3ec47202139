"""Writing a job's results files (docs/results.md): what no threshold changes once, what each
threshold decides once per threshold; ``job.json`` comes last, after the reports
(runner/pipeline.py).

A file is written under a ``.partial`` name and renamed when complete, and each result's
``metrics.json`` is written after its other files, so an interrupted job never looks finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
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
from runner.results.table import PASSAGES_SCHEMA, TableWriter, decisions_schema
from runner.scoring.thresholds import Threshold


class ResultWriter:
    """Streams the results files of a job deciding `thresholds`.

    One threshold: the job's folder is its result folder. Several: one subfolder each
    (:attr:`Threshold.folder <runner.scoring.thresholds.Threshold.folder>`), sharing the job's
    ``passages.parquet``.

    Args:
        job_dir: The job's folder.
        thresholds: The thresholds it decides, in order.
        metrics, counts: The names of the metrics and counts of the cases.
    """

    def __init__(self, job_dir: Path, thresholds: Sequence[Threshold], metrics: Sequence[str],
                 counts: Sequence[str]) -> None:
        self.job_dir = job_dir
        self.thresholds = list(thresholds)
        self.dirs = [job_dir if len(thresholds) == 1 else job_dir / t.folder for t in thresholds]
        for folder in self.dirs:
            folder.mkdir(parents=True, exist_ok=True)
        self._passages = TableWriter(job_dir / PASSAGES_FILE, PASSAGES_SCHEMA)
        schema = decisions_schema(metrics, counts, packed=True)
        self._cases = [TableWriter(d / CASES_FILE, schema, "lz4") for d in self.dirs]
        self.lines = 0  # cases written so far

    def write(self, passages: pa.Table, cases: pa.Table) -> None:
        """Append rows: the cases' passages, and their decisions (`cases`: at each threshold
        in turn, as many rows each)."""
        self._passages.write(passages)
        self.lines += (n := passages.num_rows)
        for k, writer in enumerate(self._cases):
            writer.write(cases.slice(k * n, n))

    def close(self) -> None:
        """Close the open files (what was written stays ``.partial``)."""
        for writer in (self._passages, *self._cases):
            writer.close()

    def finish(self, results: Sequence[RunResult], config: dict[str, Any]) -> None:
        """Complete the results: the tables renamed into place, then per threshold its
        ``config.yaml`` (a subfolder's) and ``metrics.json`` (``job.json`` is the caller's).

        Args:
            results: One result per threshold, in order.
            config: The job's config (secrets redacted); a threshold's folder gets it with
                ``scoring.threshold`` set to that threshold.
        """
        for writer in (self._passages, *self._cases):
            writer.finish()
        for folder, threshold, result in zip(self.dirs, self.thresholds, results):
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

"""The run report: ``report.html`` in a result folder, rendered from its results files only.

Server-rendered (visible without JavaScript), all from ``metrics.json``: the run's identity and
threshold, the six figures with their bands, intervals, micro values, a sentence each true of
its value and counts (:mod:`runner.reports.sentences`; the seed's band texts as a legend), the
diagnosis breakdown, score distributions (``histograms``) and the failed cases (``failed``).
The per-case table is built in the page by vanilla JavaScript from case data embedded as JSON
(gzip-compressed when large), one page of rows at a time; only the first ``max_cases`` cases
are read for it (:mod:`runner.reports.cases`).

Re-render a result folder by hand with ``python -m runner.reports.run RESULT_DIR``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from runner._gc import gc_paused
from runner.config.constraints import COUNT, POSITIVE, OneOf, Range, allows, check_fields
from runner.errors import RagciteError
from runner.reports.cases import blocks, read_decided, read_shared
from runner.reports.common import embed_json, render, stacked_bars, write_html
from runner.reports.sentences import card_sentence, diagnosis
from runner.results import CONFIG_FILE, REPORT_FILE, read_result, require_complete, result_dirs
from runner.scoring.bands import DEFAULT_BANDS
from runner.scoring.labels import CITATION_LABELS, FIDELITY, LABEL_TEXT, REFERENCE_LABELS
from runner.scoring.metrics import declared

EMBED_CHOICES = ("auto", "json", "gzip")


@dataclass
class HtmlOptions:
    """How the HTML reports are rendered.

    Attributes:
        page_size: Rows per page of the run report's per-case table.
        max_cases: Cases embedded in the per-case table (None = all); the figures always cover
            every case (they come from ``metrics.json``).
        max_text_chars: Passages, answers and queries longer than this are cut in the report
            (the results files keep them whole).
        embed: ``json`` (plain JSON), ``gzip`` (compressed, for big runs) or ``auto`` (gzip
            once the JSON exceeds ``gzip_above_mb``).
        gzip_above_mb: The ``auto`` threshold in megabytes.
        max_failed_listed: Failed cases listed in the "Failed cases" section (at most the
            ``failed.listed`` of ``metrics.json``, which scoring bounds the same way).
    """

    page_size: int = field(default=50, metadata=allows(POSITIVE))
    max_cases: int | None = field(default=20_000, metadata=allows(COUNT))
    max_text_chars: int = field(default=10_000, metadata=allows(POSITIVE))
    embed: str = field(default="auto", metadata=allows(OneOf(EMBED_CHOICES, "mode")))
    gzip_above_mb: float = field(default=2.0, metadata=allows(Range(low=0)))
    max_failed_listed: int = field(default=500, metadata=allows(COUNT))

    def __post_init__(self) -> None:
        """The fields' declared ranges, as a plug-in's (runner/config/constraints.py).

        Raises:
            RagciteError: A field out of range (``report.page_size: must be ...``).
        """
        check_fields(self, "report")

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None) -> HtmlOptions:
        """The options from a ``report`` config section (other keys, e.g. ``_target_``,
        ignored; a null option takes its default, except ``max_cases``: null embeds all)."""
        known = {f.name for f in fields(HtmlOptions)}
        return HtmlOptions(**{k: v for k, v in (data or {}).items()
                              if k in known and (v is not None or k == "max_cases")})


def review_key(result_dir: Path, run: Mapping[str, Any]) -> str:
    """The key of the report's pair review marks in the browser's local storage.

    Every report opened from disk shares one storage origin, so the key names the result: its
    folder's name, its start time (``metrics.json``'s ``run.started_at``) and its threshold.
    Re-rendering a result keeps its marks; another run, or another threshold, has its own.
    """
    threshold = run.get("threshold")
    return "ragcite-review:" + "|".join([
        result_dir.resolve().name, str(run.get("started_at") or ""),
        "" if threshold is None else str(threshold)])


def build_context(metrics: Mapping[str, Any], n_embedded: int, opts: HtmlOptions,
                  result_dir: Path, tracking_link: str | None = None,
                  index: int = 0) -> dict[str, Any]:
    """Everything the run template shows of one result (the `index`-th view of its page):
    figures from `metrics` (``metrics.json``); its table holds `n_embedded` cases."""
    sec = {name: metrics.get(name) or {} for name in ("run", "dataset", "model", "matcher",
                                                      "threshold", "scoring", "bootstrap")}
    run = {"name": sec["run"].get("name") or result_dir.name,
           "started_at": sec["run"].get("started_at"), "threshold": sec["threshold"].get("value"),
           "threshold_level": sec["threshold"].get("level")}
    value, level = run["threshold"], run["threshold_level"]
    line = (f"Threshold {value:g}" if isinstance(value, (int, float)) else "Threshold n/a") + (
        f" (level {level})" if level else "")
    metric_list = declared(metrics.get("metrics") or {})
    meta = {
        "metrics": [m.name for m in metric_list], "names": {m.name: m.title for m in metric_list},
        "citation_labels": list(CITATION_LABELS), "reference_labels": list(REFERENCE_LABELS),
        "fidelity_labels": [lab.name for lab in FIDELITY],
        "label_text": LABEL_TEXT, "page_size": opts.page_size,
        "n_cases": int(metrics.get("n_cases") or 0), "n_embedded": n_embedded,
        "threshold": run["threshold"], "review_key": review_key(result_dir, run),
    }
    return {
        "index": index, "sfx": f"-{index}" if index else "", "folder": result_dir.name,
        "threshold_line": line,        "run": run, "m": metrics, "sec": sec, "opts": opts,
        "tracking_link": tracking_link,
        "declared": metric_list, "sentences": {m.name: card_sentence(m.name, metrics)
                                               for m in metric_list},
        "bands": dict((metrics.get("scoring") or {}).get("bands") or DEFAULT_BANDS),
        "label_bars": stacked_bars(metrics), "diagnosis": diagnosis(metrics),
        "meta": meta, "meta_json": embed_json(meta),
    }


def _options(result_dir: Path, options: Mapping[str, Any] | HtmlOptions | None) -> HtmlOptions:
    """The report's options: `options`, or by default the ``report`` section of the folder's
    ``config.yaml``."""
    if options is None:
        from runner.tracking.mlflow import read_config  # as the tracked run reads it

        section = read_config(result_dir / CONFIG_FILE).get("report")
        options = section if isinstance(section, dict) else {}
    return options if isinstance(options, HtmlOptions) else HtmlOptions.from_config(options)


def _page(result_dirs: Sequence[Path], links: Sequence[str | None],
          opts: HtmlOptions) -> Iterator[str]:
    """The page of one or more result folders of a job: one view each; their cases read once
    from the job's passages, each threshold's decisions as a few columns."""
    metrics = [read_result(folder) for folder in result_dirs]
    shared = read_shared(result_dirs[0], metrics[0], opts.max_cases, opts.max_text_chars)
    packed = blocks(shared, (read_decided(folder, shared, opts.max_text_chars) for folder in
                             result_dirs), opts.embed, opts.gzip_above_mb * 2**20)
    views = [build_context(m, len(shared.ids), opts, folder, link, index) for index, (
        m, folder, link) in enumerate(zip(metrics, result_dirs, links))]
    return render("report_run.html.j2", views=views, **views[0], **packed)


def render_run_report(result_dir: str | Path, tracking_link: str | None = None,
                      options: Mapping[str, Any] | HtmlOptions | None = None,
                      output: str | Path | None = None) -> Path:
    """Render ``report.html`` into a result folder from its results files.

    Args:
        result_dir: The result folder (``metrics.json``, ``cases.parquet`` and the passages file
            ``metrics.json`` names).
        tracking_link: A link to the tracked run (e.g. the MLflow UI), shown in the header.
        options: :class:`HtmlOptions` or a ``report`` config section; by default the ``report``
            section of the folder's ``config.yaml``.
        output: Where to write (default ``result_dir/report.html``).

    Returns:
        The path of the report.
    """
    return render_run_reports([result_dir], [tracking_link], options, output)[0]


def render_run_reports(result_dirs: Sequence[str | Path], links: Sequence[str | None],
                       options: Mapping[str, Any] | HtmlOptions | None = None,
                       output: str | Path | None = None) -> list[Path]:
    """Render the report of a job's result folders (one tracking link each).

    One folder: its ``report.html``. Several (a job that decides several thresholds): one
    ``report.html`` in the job folder, with a threshold switch: each threshold's figures, cards,
    charts and case table, the cases' passages (the folders' shared ``passages.parquet``)
    embedded once. Options and `output` as in :func:`render_run_report` (by default the first
    folder's options, and the job folder).

    Returns:
        The path of the report, in a list.
    """
    if len(result_dirs) != len(links):
        raise ValueError(f"{len(result_dirs)} result folders but {len(links)} links")
    dirs = [Path(d) for d in result_dirs]
    folder = dirs[0] if len(dirs) == 1 else dirs[0].parent
    # The page's case data are cycle-free and freed once it is written: with the collector on,
    # its collections walk the growing lists again and again (and a million objects once after).
    with gc_paused():
        return [write_html(Path(output) if output else folder / REPORT_FILE,
                           _page(dirs, links, _options(dirs[0], options)))]


def main(argv: list[str] | None = None) -> int:
    """``python -m runner.reports.run RESULT_DIR [--out FILE]``: (re)render a run report (of a
    job folder of several thresholds: its page with the switch)."""
    parser = argparse.ArgumentParser(prog="python -m runner.reports.run",
                                     description="Render report.html for a ragcite result "
                                                 "folder.")
    parser.add_argument("result_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="default: RESULT_DIR/report.html")
    parser.add_argument("--tracking-link", default=None)
    args = parser.parse_args(argv)
    try:
        dirs = result_dirs(args.result_dir)  # several: a job folder's page with the switch
        if len(dirs) <= 1:
            require_complete(args.result_dir)  # a job's own reports come before its job.json
            dirs = [args.result_dir]
        [path] = render_run_reports(dirs, [args.tracking_link] * len(dirs), output=args.out)
    except (OSError, ValueError, RagciteError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The run report: ``report.html`` in a run folder, rendered from its results files only.

Server-rendered (visible without JavaScript): the run's identity, the six figures with their
bands, intervals, micro values and the seed's band explanations, the diagnosis breakdown, score
distributions and the failed cases. The per-case table is built in the page by vanilla
JavaScript from case data embedded as JSON (gzip-compressed when large), one page of rows at a
time, so a report of 10,000 cases opens quickly.

Re-render a run folder by hand with ``python -m runner.reports.run RUN_DIR``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from runner._gc import gc_paused
from runner.cache import REPORT_TEXTS_DIR
from runner.reports.cases import (
    EXPLANATION_KEYS,
    FragmentMemo,
    ReportCases,
    SplitCase,
    TextsCache,
    clip,
    compact_case,
)
from runner.reports.common import (
    BAND_TEXT,
    CITATION_LABELS,
    LABEL_TEXT,
    METRIC_KEYS,
    METRIC_NAMES,
    REFERENCE_LABELS,
    band_of,
    dumps_compact,
    embed_json,
    embed_packed,
    environment,
    histogram,
    pack_text,
    packed_block,
    page_assets,
    render,
    safe_href,
    write_html,
)
from runner.results import (
    CASES_FILE,
    METRICS_FILE,
    CaseFigures,
    CaseResult,
    read_metrics,
)

REPORT_FILE = "report.html"
HIST_BINS = 20
__all__ = ["EXPLANATION_KEYS", "HtmlOptions", "build_context", "render_run_report",
           "report_cases"]


@dataclass
class HtmlOptions:
    """Options of the HTML reports (``report=html``; schema: ``runner.schema.HtmlReportConf``).

    Attributes:
        page_size: Rows per page of the per-case table.
        max_cases: Cases embedded in the per-case table (None = all); the figures always cover
            every case.
        max_text_chars: Passages, answers and queries longer than this are cut in the report
            (cases.jsonl keeps them whole).
        embed: ``json`` (plain JSON), ``gzip`` (compressed, for big runs) or ``auto`` (gzip
            once the JSON exceeds ``gzip_above_mb``).
        gzip_above_mb: The ``auto`` threshold in megabytes.
        max_failed_listed: Failed cases listed in the "Failed cases" section.
    """

    page_size: int = 50
    max_cases: int | None = 20_000
    max_text_chars: int = 10_000
    embed: str = "auto"
    gzip_above_mb: float = 2.0
    max_failed_listed: int = 500

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None) -> HtmlOptions:
        """The options from a ``report`` config section (unknown keys, e.g. format, ignored)."""
        data = data or {}
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items()
                  if k in known and (v is not None or k == "max_cases")}
        opts = cls(**kwargs)
        if opts.page_size < 1:
            raise ValueError("report.page_size must be at least 1")
        if opts.embed not in ("auto", "json", "gzip"):
            raise ValueError(f"report.embed must be auto, json or gzip, not {opts.embed!r}")
        return opts


def _run_config(run_dir: Path) -> dict[str, Any]:
    """The run's own ``config.yaml`` (empty when absent)."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return data if isinstance(data, dict) else {}


def _section(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    part = config.get(name)
    return part if isinstance(part, dict) else {}


def _texts_cache(config: Mapping[str, Any]) -> TextsCache | None:
    """The passages cache under the run's ``cache.dir`` (None when the cache is off)."""
    cache = _section(config, "cache")
    if not cache.get("dir") or cache.get("enabled") is False:
        return None
    return TextsCache(Path(cache["dir"]) / REPORT_TEXTS_DIR)


# --- figures -------------------------------------------------------------------------------------


def _metric_cards(metrics: Mapping[str, Any], bands: Mapping[str, float]) -> list[dict[str, Any]]:
    cards = []
    for key in METRIC_KEYS:
        value = (metrics.get("metrics") or {}).get(key)
        ci = (metrics.get("ci") or {}).get(key)
        micro = (metrics.get("micro") or {}).get(key)
        name = band_of(value, bands)
        cards.append({
            "key": key, "name": METRIC_NAMES[key], "value": value, "band": name,
            "band_text": BAND_TEXT[key].get(name, "Undefined: no scored case defines this "
                                                  "metric."),
            "ci": ci, "micro": micro, "micro_band": band_of(micro, bands),
            "bar": _interval_bar(value, ci, micro, bands),
        })
    return cards


def _interval_bar(value: float | None, ci: list[float] | None, micro: float | None,
                  bands: Mapping[str, float], width: float = 240.0) -> dict[str, Any]:
    """Geometry of the small 0-1 scale under a figure: band zones, the CI, the mean, micro."""
    def x(v: float) -> float:
        return round(min(max(v, 0.0), 1.0) * width, 2)

    medium, green = float(bands.get("medium", 0.25)), float(bands.get("green", 0.75))
    zones = [{"band": "red", "x": 0.0, "w": x(medium)},
             {"band": "medium", "x": x(medium), "w": round(x(green) - x(medium), 2)},
             {"band": "green", "x": x(green), "w": round(width - x(green), 2)}]
    return {
        "width": width, "zones": zones,
        "ci": None if not ci else {"x": x(ci[0]), "w": max(round(x(ci[1]) - x(ci[0]), 2), 1.0)},
        "mean": None if value is None else x(value),
        "micro": None if micro is None else x(micro),
    }


def _label_bars(labels: Mapping[str, int]) -> list[dict[str, Any]]:
    """A stacked bar each for citation and reference labels."""
    out = []
    for kind, prefix, names in (("Citations", "citation_", CITATION_LABELS),
                                ("References", "reference_", REFERENCE_LABELS)):
        counts = [(name, int(labels.get(prefix + name, 0))) for name in names]
        total = sum(c for _, c in counts)
        x = 0.0
        segments = []
        for name, count in counts:
            w = 100.0 * count / total if total else 0.0
            segments.append({"label": name, "key": prefix + name, "count": count,
                             "share": w, "x": round(x, 3), "w": round(w, 3),
                             "text": LABEL_TEXT[name]})
            x += w
        out.append({"kind": kind, "total": total, "segments": segments})
    return out


def diagnosis(labels: Mapping[str, int]) -> dict[str, str]:
    """Where citations go wrong (the seed's question), as a headline and a sentence of shares:
    wrong documents (retrieval), wrong passages of the right documents, or mostly right."""
    sup = int(labels.get("citation_supported", 0))
    wrong = int(labels.get("citation_wrong_passage", 0))
    unexp = int(labels.get("citation_unexpected_source", 0))
    cited = int(labels.get("reference_cited", 0))
    p_missed = int(labels.get("reference_passage_missed", 0))
    s_missed = int(labels.get("reference_source_missed", 0))
    total, refs = sup + wrong + unexp, cited + p_missed + s_missed
    if total == 0 and refs == 0:
        return {"headline": "Nothing to diagnose", "detail": "No citation or reference was scored."}

    def share(part: int, whole: int) -> str:
        return f"{100.0 * part / whole:.0f}%" if whole else "—"

    detail = (f"{share(sup, total)} of {total} citations are supported, {share(wrong, total)} "
              f"cite an expected document but a wrong passage, and {share(unexp, total)} cite a "
              f"document that is not expected. {share(cited, refs)} of {refs} ground-truth "
              f"passages are cited; {share(p_missed, refs)} are missed although their document "
              f"is cited, {share(s_missed, refs)} belong to documents not cited at all.")
    if total and sup >= 0.75 * total and (not refs or cited >= 0.75 * refs):
        headline = "Mostly right: the model cites the right passages of the right documents."
    elif total == 0:
        headline = "No citations: the responses cite nothing."
    elif unexp >= wrong and unexp > 0 and (unexp >= sup or s_missed >= p_missed):
        headline = ("Main problem: wrong documents. Citations come from documents that are not "
                    "expected, and expected documents go uncited — a retrieval problem.")
    elif wrong > 0 and (wrong >= sup or p_missed >= s_missed):
        headline = ("Main problem: wrong passages. The model cites the expected documents but "
                    "quotes passages of them that do not match the ground truth.")
    elif sup >= 0.75 * total:
        headline = ("Main problem: incomplete citations. What is cited is mostly right, but many "
                    "ground-truth passages are not cited.")
    else:
        headline = "Mixed: right passages, wrong passages and wrong documents all occur."
    return {"headline": headline, "detail": detail}


def _distributions(values: dict[str, list[float]], undefined: dict[str, int],
                   means: Mapping[str, Any], bands: Mapping[str, float]) -> list[dict[str, Any]]:
    width, height = 240.0, 80.0
    bw = width / HIST_BINS
    out = []
    for key in METRIC_KEYS:
        counts = histogram(values[key], HIST_BINS)
        top = max(counts) or 1
        bars = []
        for i, count in enumerate(counts):
            h = round(height * count / top, 2)
            low = i / HIST_BINS
            high = (i + 1) / HIST_BINS
            bars.append({"x": round(i * bw, 2), "y": round(height - h, 2), "w": round(bw - 1, 2),
                         "h": h, "count": count, "band": band_of(low, bands),
                         "range": f"{low:.2f}–{high:.2f}" + ("" if i < HIST_BINS - 1 else
                                                             " (incl. 1.00)")})
        mean = means.get(key)
        out.append({"key": key, "name": METRIC_NAMES[key], "bars": bars, "width": width,
                    "height": height, "n": len(values[key]), "undefined": undefined[key],
                    "mean_x": None if mean is None else round(min(max(mean, 0), 1) * width, 2),
                    "max": top})
    return out


def _identity(metrics: Mapping[str, Any], run_dir: Path,
              tracking_link: str | None) -> dict[str, Any]:
    run = metrics.get("run") or {}
    dataset = metrics.get("dataset") or {}
    model = metrics.get("model") or {}
    matcher = metrics.get("matcher") or {}
    scoring = metrics.get("scoring") or {}
    boot = metrics.get("bootstrap") or {}

    def params(identity: Any) -> str:
        if not isinstance(identity, dict):
            return ""
        return ", ".join(f"{k}={v}" for k, v in identity.items()
                         if k != "class" and v is not None)

    return {
        "name": run.get("name") or run_dir.name,
        "started_at": run.get("started_at"),
        "finished_at": run.get("finished_at"),
        "version": run.get("ragcite_version"),
        "dataset": dataset.get("name") or "unknown",
        "dataset_path": dataset.get("path"),
        "dataset_digest": dataset.get("digest"),
        "model": model.get("name") or "unknown",
        "model_params": params(model.get("identity")),
        "matcher": matcher.get("name") or "unknown",
        "matcher_params": params(matcher.get("identity")),
        "threshold": matcher.get("threshold"),
        "threshold_level": matcher.get("threshold_level"),
        "zero_division": scoring.get("zero_division"),
        "require_same_source": scoring.get("require_same_source"),
        "normalization": ", ".join(scoring.get("source_normalization") or []),
        "bootstrap": (f"{int(boot['resamples'])} resamples, "
                      f"{100 * float(boot['confidence']):g}% percentile"
                      if boot.get("resamples") is not None and boot.get("confidence") is not None
                      else None),
        "confidence": boot.get("confidence"),
        "tracking_link": tracking_link,
        "tracking_href": safe_href(tracking_link),
    }


def build_context(metrics: Mapping[str, Any],
                  cases: Iterable[CaseResult | CaseFigures | SplitCase],
                  opts: HtmlOptions, run_dir: Path, tracking_link: str | None = None,
                  texts_cache: TextsCache | None = None) -> dict[str, Any]:
    """Everything the run template shows, computed from the results files.

    Cases past ``opts.max_cases`` are only counted and binned, so they may come as
    :class:`~runner.results.CaseFigures`; embedded ones as whole records or, from
    :func:`report_cases`, as :class:`~runner.reports.cases.SplitCase`. With a `texts_cache`
    and cases from :func:`report_cases`, a passages block stored for the same lines is embedded
    as it is (:mod:`runner.reports.cases`), and a new one is stored.
    """
    bands = dict((metrics.get("scoring") or {}).get("bands") or {"green": 0.75, "medium": 0.25})
    values: dict[str, list[float]] = {k: [] for k in METRIC_KEYS}
    undefined = dict.fromkeys(METRIC_KEYS, 0)
    limit = opts.max_text_chars
    rows: list[str] = []  # each embedded case's row as JSON
    details: list[str] = []  # ... and its scores
    texts: list[SplitCase | dict[str, Any]] = []  # a SplitCase parses its passages when needed
    failed: list[dict[str, str]] = []
    n_seen = n_failed = 0
    for case in cases:
        n_seen += 1
        if isinstance(case, CaseResult) and case.error is not None:
            n_failed += 1
            if len(failed) < opts.max_failed_listed:
                failed.append({"id": case.id, "query": clip(case.query, 300),
                               "error": clip(case.error, 2000)})
        else:
            for k in METRIC_KEYS:
                v = case.metrics.get(k)
                if v is None:
                    undefined[k] += 1
                else:
                    values[k].append(float(v))
        if opts.max_cases is not None and len(rows) >= opts.max_cases:
            continue
        if isinstance(case, SplitCase):
            rows.append(case.row_json)
            details.append(case.scores_json)
            texts.append(case)
        elif isinstance(case, CaseResult):
            row, scores, text = compact_case(case, limit)
            rows.append(dumps_compact(row))
            details.append(dumps_compact(scores))
            texts.append(text)

    # Each case's records are JSON already: the arrays are joined as dumps_compact writes them.
    rows_text, details_text = "[" + ",".join(rows) + "]", "[" + ",".join(details) + "]"
    del details
    key = getattr(cases, "texts_key", None) if texts_cache is not None else None
    stored = texts_cache.get(key) if texts_cache is not None and key is not None else None

    def dump_texts() -> str:
        return dumps_compact([t.texts(limit) if isinstance(t, SplitCase) else t for t in texts])

    texts_text: str | None = None
    if stored is None:
        texts_text = dump_texts()
        n_texts = len(texts_text.encode("utf-8"))
    else:
        n_texts = stored[0]
    encoding = "json"
    if opts.embed == "gzip" or (opts.embed == "auto" and len(rows_text) + len(details_text)
                                + n_texts > opts.gzip_above_mb * 1024 * 1024):
        encoding = "gzip-base64"
    texts_json = None
    if encoding == "gzip-base64" and stored is not None:
        try:
            texts_json = packed_block(*stored)
        except ValueError:  # a damaged cache file: built again below
            texts_json = None
    if texts_json is None:
        if texts_text is None:
            texts_text = dump_texts()
        if encoding == "json":
            texts_json = embed_packed(texts_text, encoding)
        else:
            packed = pack_text(texts_text)
            if texts_cache is not None and key is not None:
                texts_cache.put(key, *packed)
            texts_json = packed_block(*packed)
    texts.clear()  # the passages are packed: free their records
    labels = metrics.get("labels") or {}
    identity = _identity(metrics, run_dir, tracking_link)
    meta = {
        "metrics": list(METRIC_KEYS),
        "names": METRIC_NAMES,
        "citation_labels": list(CITATION_LABELS),
        "reference_labels": list(REFERENCE_LABELS),
        "label_text": LABEL_TEXT,
        "page_size": opts.page_size,
        "n_cases": n_seen,
        "n_embedded": len(rows),
        "threshold": identity["threshold"],
    }
    return {
        "title": f"ragcite run report — {identity['name']}",
        "run": identity,
        "m": metrics,
        "gates": {"passed": (metrics.get("gates") or {}).get("passed", True),
                  "failures": list((metrics.get("gates") or {}).get("failures") or []),
                  "config": dict((metrics.get("gates") or {}).get("config") or {})},
        "cards": _metric_cards(metrics, bands),
        "bands": bands,
        "label_bars": _label_bars(labels),
        "diagnosis": diagnosis(labels),
        "distributions": _distributions(values, undefined, metrics.get("metrics") or {}, bands),
        "failed": failed,
        "n_failed": n_failed,
        "n_seen": n_seen,
        "n_embedded": len(rows),
        "encoding": encoding,
        "cases_json": embed_packed(rows_text, encoding),
        "details_json": embed_packed(details_text, encoding),
        "texts_json": texts_json,
        "meta_json": embed_json(meta),
        "opts": opts,
    }


def report_cases(path: Path, embedded: int | None,
                 max_text_chars: int = HtmlOptions.max_text_chars,
                 fragments: FragmentMemo | None = None) -> ReportCases:
    """The records of ``cases.jsonl`` as a report reads them (:class:`ReportCases`): the first
    `embedded` (all when None) whole or in parts, then only their figures
    (:func:`runner.results.figures_of_line`; whole when they failed). With `fragments`, lines
    read before by this process's reports are not parsed again."""
    return ReportCases(path, embedded, max_text_chars, fragments)


def render_run_report(run_dir: str | Path, tracking_link: str | None = None,
                      options: Mapping[str, Any] | HtmlOptions | None = None,
                      output: str | Path | None = None,
                      fragments: FragmentMemo | None = None) -> Path:
    """Render ``report.html`` into a run folder from its ``metrics.json`` and ``cases.jsonl``.

    Args:
        run_dir: The run folder.
        tracking_link: A link to the tracked run (e.g. the MLflow UI), shown in the header.
        options: :class:`HtmlOptions` or a ``report`` config section; by default the ``report``
            section of the run's ``config.yaml``.
        output: Where to write (default ``run_dir/report.html``).
        fragments: Rows and scores of lines read before (a sweep's earlier reports); what
            this report builds is added.

    Returns:
        The path of the report.
    """
    run_dir = Path(run_dir)
    metrics = read_metrics(run_dir / METRICS_FILE)
    config = _run_config(run_dir)
    if isinstance(options, HtmlOptions):
        opts = options
    else:
        opts = HtmlOptions.from_config(options if options is not None
                                       else _section(config, "report"))
    cases_path = run_dir / CASES_FILE
    cases: Iterable[Any] = (report_cases(cases_path, opts.max_cases, opts.max_text_chars,
                                         fragments) if cases_path.is_file() else ())
    # The embedded case data are cycle-free: with the collector on, its collections walk the
    # growing row and detail lists again and again (a third of a 10,000-case report's time).
    with gc_paused():
        context = build_context(metrics, cases, opts, run_dir, tracking_link,
                                texts_cache=_texts_cache(config))
    return write_html(Path(output) if output else run_dir / REPORT_FILE,
                      render("report_run.html.j2", **context))


def prepare_templates() -> None:
    """Compile the run report's templates and load its assets now (kept by this process), so
    that report processes forked from it later, one per job of a sweep, do not each do it."""
    environment().get_template("report_run.html.j2")
    page_assets()


def main(argv: list[str] | None = None) -> int:
    """``python -m runner.reports.run RUN_DIR [--out FILE]``: (re)render a run report."""
    parser = argparse.ArgumentParser(prog="python -m runner.reports.run",
                                     description="Render report.html for a ragcite run folder.")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="default: RUN_DIR/report.html")
    parser.add_argument("--tracking-link", default=None)
    args = parser.parse_args(argv)
    try:
        path = render_run_report(args.run_dir, tracking_link=args.tracking_link, output=args.out)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

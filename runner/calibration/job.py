"""A job of ``ragcite mode=calibrate``, top to bottom: the labels, the matcher's similarities
(the run's matcher stage and cache), the figures, ``calibration.json``, the page, the tracked
run (through the run's tracker) and ``job.json``. Knows nothing of Hydra (plain config data
and a folder; :func:`tracked` reads the folder's ``.hydra/config.yaml``)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from runner.api.cache import CacheStats
from runner.calibration.pairs import PAIR_KEYS, LabelledPair, annotators, load_pairs
from runner.config.plugins import build
from runner.data.loading import file_digest
from runner.errors import EXIT_NOTHING_SCORED, RagciteError
from runner.matchers.base import (
    Checked,
    Matcher,
    PairError,
    for_workload,
    similarity_range,
    usage_of,
)
from runner.matchers.cached import cached
from runner.pipeline import open_cache
from runner.redact import env_secrets, redact, redact_override, scrub_files, secret_values
from runner.reports.base import make_reports
from runner.results import write_job
from runner.scoring.thresholds import Threshold, resolve_thresholds
from runner.tracking.base import make_tracker

log = logging.getLogger("ragcite")
JSON_FILE = "calibration.json"
HTML_FILE = "calibration.html"
SCHEMA_VERSION = 1


class NothingScored(RagciteError):
    """No labelled pair could be scored (every similarity failed): exit status 3."""


def _threshold(cfg: dict[str, Any], matcher: Matcher) -> Threshold:
    found = resolve_thresholds(cfg["scoring"]["threshold"], matcher.levels,
                               similarity_range(matcher))
    if len(found) > 1:
        raise RagciteError(f"scoring.threshold: a calibration takes one threshold, got "
                           f"{len(found)}; the best one is found for you (best_threshold)")
    return found[0]


def _labels(cfg: dict[str, Any]) -> str:
    labels = cfg["calibrate"].get("labels")
    if not labels or not str(labels).strip():
        raise RagciteError("calibrate.labels: give the labelled pairs, e.g. "
                           "calibrate.labels=labels.jsonl (docs/calibration.md)")
    return str(labels)


def _scored(cfg: dict[str, Any], matcher: Matcher, pairs: Sequence[LabelledPair],
            stats: CacheStats) -> tuple[list[LabelledPair], np.ndarray, int]:
    """The pairs that were scored, their similarities, and how many failed (said in a
    warning; NothingScored when all did). Each distinct pair is computed once (and, for the
    API matchers, cached on disk like a run's: paid once across runs and calibrations)."""
    distinct = list(dict.fromkeys((p.reference, p.citation) for p in pairs))
    with open_cache(cfg, matcher) as cache:
        scorer = for_workload(cached(matcher, cache, stats), len(distinct), 1)
        found = dict(zip(distinct, scorer.similarities(distinct)))
    sims = [found[(p.reference, p.citation)] for p in pairs]
    failed = [(p, s) for p, s in zip(pairs, sims) if isinstance(s, PairError)]
    kept = [(p, s) for p, s in zip(pairs, sims) if not isinstance(s, PairError)]
    if not kept:
        raise NothingScored(f"no labelled pair could be scored: all {len(pairs)} failed; the "
                            f"first ({failed[0][0].where}): {failed[0][1].message}")
    if failed:
        log.warning("ragcite-calibrate: %d of %d labelled pairs could not be scored and are "
                    "left out; the first (%s): %s", len(failed), len(pairs), failed[0][0].where,
                    failed[0][1].message)
    return [p for p, _ in kept], np.array([s for _, s in kept], dtype=np.float64), len(failed)


def _worst(pairs: Sequence[LabelledPair], sims: np.ndarray, threshold: float,
           limit: int) -> list[dict[str, Any]]:
    """The wrongly decided pairs, the farthest from the threshold first."""
    labels = np.array([p.label for p in pairs])
    wrong = np.flatnonzero(labels != (sims >= threshold))
    order = wrong[np.argsort(-np.abs(sims[wrong] - threshold), kind="stable")][:max(limit, 0)]
    return [{**{k: getattr(pairs[i], k) for k in PAIR_KEYS}, "similarity": float(sims[i]),
             "where": pairs[i].where} for i in order]


def ready_line(name: str, value: float, overrides: Sequence[str]) -> dict[str, str]:
    """What to paste: ``threshold=0.62``, and the whole ``ragcite`` command with the matcher's
    settings of this calibration (a threshold is recommended only when both labels have pairs,
    so there is a best one)."""
    paste = f"threshold={value:g}"
    settings = [o for o in overrides if o.split("=", 1)[0].lstrip("+~").startswith("matcher.")]
    return {"paste": paste,
            "command": " ".join(["ragcite", f"matcher={name}",
                                 *map(redact_override, settings), paste])}


def run_calibration(cfg: dict[str, Any], out: Path, name: str, overrides: Sequence[str] = (),
                    before_calls: Callable[[], None] | None = None) -> dict[str, Any]:
    """Calibrate the configured matcher on the labelled pairs and write ``calibration.json``.

    Args:
        cfg: The composed config as plain data.
        out: The output folder.
        name: The matcher's option name (``ngram``).
        overrides: The command line's overrides (for the ready ``ragcite`` command).
        before_calls: Called once the config and labels are read, before any similarity is
            computed (the tracking store is checked there).

    Returns:
        The content of ``calibration.json``.

    Raises:
        RagciteError: Bad config or labels (before any API call); NothingScored when every
            similarity failed.
    """
    from runner.calibration.figures import annotator_agreement, calibrate  # sklearn: ~1 s
    started = dt.datetime.now(dt.timezone.utc)
    labels_path = _labels(cfg)
    matcher: Matcher = build(cfg["matcher"], "matcher", protocol=Matcher)
    if isinstance(matcher, Checked):
        matcher.check()
    threshold = _threshold(cfg, matcher)
    pairs = load_pairs(labels_path, cfg["calibrate"].get("mapping"),
                       cfg["calibrate"].get("format"))
    if before_calls is not None:
        before_calls()
    stats = CacheStats()
    kept, sims, n_failed = _scored(cfg, matcher, pairs, stats)
    boot = cfg["scoring"]["bootstrap"]
    figures = calibrate(sims, np.array([p.label for p in kept]), threshold.value,
                        similarity_range(matcher), int(boot["resamples"]),
                        float(boot["confidence"]), int(cfg.get("seed", 0)))
    entry = {"name": name, "identity": redact(matcher.identity()),
             "threshold_level": threshold.level, **figures,
             "ready": None if figures["withheld"] else ready_line(name, figures["paste"],
                                                                   overrides),
             "similarity_range": list(similarity_range(matcher)),
             "failed_pairs": n_failed, "usage": usage_of(matcher),
             "cache": stats.to_dict(),
             "similarities": [round(float(s), 6) for s in sims],
             "labels": [p.label for p in kept],
             "worst": _worst(kept, sims, threshold.value,
                             int(cfg["calibrate"].get("worst", 25)))}
    data = {"schema_version": SCHEMA_VERSION,
            "labels": {"path": labels_path, "digest": file_digest(labels_path),
                       "n_records": len(pairs), "n_positive": sum(p.label for p in pairs),
                       "annotators": annotators(pairs)},
            "agreement": annotator_agreement(pairs),
            "matchers": {name: entry},
            "started_at": started.isoformat(),
            "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
            "output_dir": str(out.resolve())}
    out.mkdir(parents=True, exist_ok=True)
    (out / JSON_FILE).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                 encoding="utf-8")
    return data



def _summary(name: str, m: dict[str, Any], out: Path) -> None:
    def f(key: str) -> str:
        return "n/a" if m.get(key) is None else f"{m[key]:.3f}"
    log.info("%s: AUC %s; at threshold %g: balanced accuracy %s, kappa %s; best threshold "
             "%s (balanced accuracy %s)", name, f("auc"), m["threshold"],
             f("balanced_accuracy"), f("kappa"), f("best_threshold"),
             f("best_balanced_accuracy"))
    if m.get("ready"):
        log.info("use it: %s", m["ready"]["command"])
    else:
        log.warning("no threshold recommended: %s", m["withheld"])
    log.info("results: %s", out / HTML_FILE if (out / HTML_FILE).is_file() else out)


def calibrate_job(cfg: dict[str, Any], out: Path, name: str, overrides: Sequence[str]) -> int:
    """A whole calibration job (``ragcite mode=calibrate``): the tracking store checked before
    any similarity, ``calibration.json``, the report, the tracked run, then ``job.json``.

    Args:
        cfg: The composed config as plain data.
        out: The job's folder.
        name: The matcher's option name.
        overrides: The command line's overrides (for the ready ``ragcite`` command).

    Returns:
        The exit status: 0, or 3 when no labelled pair could be scored.

    Raises:
        RagciteError: Bad config or labels, or an unusable tracking store (before any call).
    """
    tracker = make_tracker(cfg)
    try:
        data = run_calibration(cfg, out, name, overrides, before_calls=tracker.check)
    except NothingScored as exc:
        log.error("ragcite: error: %s", exc)
        return EXIT_NOTHING_SCORED
    try:
        make_reports(cfg).render_run(out, tracker.open(out))
        scrub_files(out, secret_values(cfg) | env_secrets())
        tracker.log(out)
        tracker.close("FINISHED", out)
    except BaseException:
        tracker.close("FAILED")
        raise
    write_job(out, ["."])
    _summary(name, data["matchers"][name], out)
    return 0


def tracked(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]] | None:
    """A finished calibration as its tracked run has it (runner/tracking/mlflow.py), or None
    for a folder that holds no calibration: its figures in the shape of a run's
    ``metrics.json`` (the run's name, the metrics, the threshold, the matcher), the settings
    logged as params (``matcher``, ``scoring``, ``calibrate``, ``seed``), and the labels' tags."""
    if not (folder / JSON_FILE).is_file():
        return None
    from runner.calibration.figures import FIGURE_KEYS  # sklearn: loaded by a calibration

    data = json.loads((folder / JSON_FILE).read_text(encoding="utf-8"))
    cfg: dict[str, Any] = OmegaConf.to_container(  # type: ignore[assignment]
        OmegaConf.load(folder / ".hydra" / "config.yaml"), resolve=True)
    (name, m), = data["matchers"].items()
    metrics = {**{k: m[k] for k in FIGURE_KEYS},
               **{f"count_{k}": v for k, v in m["counts"].items()},
               "annotator_kappa": (data.get("agreement") or {}).get("kappa")}
    figures = {"complete": True, "run": {"name": cfg.get("run_name") or f"calibrate_{name}"},
               "metrics": metrics, "matcher": {"name": name},
               "threshold": {"value": m["threshold"], "level": m.get("threshold_level")}}
    tags = {"ragcite.labels": str(data["labels"]["path"]),
            "ragcite.labels_digest": str(data["labels"]["digest"])}
    params = {k: cfg[k] for k in ("matcher", "scoring", "calibrate", "seed") if k in cfg}
    return figures, params, tags


def sweep_entry(folder: Path) -> dict[str, Any] | None:
    """A finished calibration as ``sweep.json`` lists it (runner/sweep.py): its
    ``calibration.json`` less the per-pair lists, with its threshold; None for a folder that
    holds no calibration."""
    if not (folder / JSON_FILE).is_file():
        return None
    data = json.loads((folder / JSON_FILE).read_text(encoding="utf-8"))
    (m,) = data["matchers"].values()
    for key in ("similarities", "labels", "worst"):
        m.pop(key, None)
    return {**data, "complete": True,
            "threshold": {"value": m["threshold"], "level": m.get("threshold_level")}}

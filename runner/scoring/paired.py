"""The paired comparison of two runs: every figure of ``ragcite-compare``'s ``compare.json``.

The figures depend on the pair (A, B), so neither run's scoring can write them: this stage
pairs the cases of two results (``metrics.json`` and the per-case records, read with
:mod:`runner.results` into a :class:`RunData` each) by id and computes, per metric, the paired
mean difference B − A with its interval from the project's one bootstrap
(:func:`runner.scoring.aggregate.bootstrap_ci`), the label shifts and moves, the cases that
changed most and the gates. ``ragcite-compare`` (:mod:`runner.reports.compare`) writes what
:func:`compare_runs` and :func:`check_gates` return as ``compare.json`` and renders its report
from it and the records of the changed cases, computing no figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runner.config.naming import model_text, params_text
from runner.results import CaseResult
from runner.scoring.aggregate import bootstrap_ci
from runner.scoring.explain import signed
from runner.scoring.labels import CHECKED, KINDS
from runner.scoring.metrics import METRIC_KEYS


@dataclass
class RunData:
    """One side of a comparison: its results files, read."""

    label: str
    source: str
    metrics: dict[str, Any]
    cases: dict[str, CaseResult] = field(default_factory=dict)
    link: str | None = None
    config: dict[str, str] = field(default_factory=dict)  # flat: a folder's config.yaml or
    # an MLflow run's params (what differs between the two sides names them)


_STATUS = {(True, True): "scored", (True, False): "newly failed", (False, True): "fixed",
           (False, False): "failed in both"}  # by (A scored, B scored)


def _values(run: RunData, ids: Sequence[str]) -> np.ndarray:
    """The metrics of the cases `ids`, one row each (nan where undefined)."""
    return np.array([[run.cases[cid].metrics.get(k) for k in METRIC_KEYS] for cid in ids],
                    dtype=float).reshape(len(ids), len(METRIC_KEYS))


def _side_summary(run: RunData) -> dict[str, Any]:
    m = run.metrics
    section = {k: m.get(k) or {} for k in ("run", "dataset", "model", "matcher", "threshold")}
    return {"label": run.label, "source": run.source, "link": run.link,
            "name": section["run"].get("name") or run.label,
            "started_at": section["run"].get("started_at"),
            "dataset": section["dataset"].get("name"), "digest": section["dataset"].get("digest"),
            "model": model_text(section["model"]),  # the model and its system
            "model_params": params_text(section["model"].get("identity")),
            "matcher_params": params_text(section["matcher"].get("identity")),
            "matcher": section["matcher"].get("name"),
            "threshold": section["threshold"].get("value"),
            **{k: m.get(k) for k in ("n_cases", "n_scored", "n_errors", "error_rate")},
            **{s: {k: (m.get(s) or {}).get(k) for k in METRIC_KEYS} for s in ("metrics", "ci")},
            "coverage": m.get("coverage") or None}


def compare_runs(a: RunData, b: RunData, resamples: int = 2000, confidence: float = 0.95,
                 seed: int = 0, top: int = 50) -> dict[str, Any]:
    """Pair the cases of two runs by id and compare every metric (the ``compare.json`` data).

    Per metric: the macro means of both runs (from their ``metrics.json``), their difference,
    and the mean of the per-case differences B − A over the paired cases with its percentile
    bootstrap interval (cases resampled with replacement, seeded). ``verdict`` is ``worse`` when
    the whole interval is below 0, ``better`` when it is above 0. ``a_common`` and ``b_common``
    are A's and B's means over those same cases.
    """
    common = [cid for cid in a.cases if cid in b.cases]
    statuses = {cid: _STATUS[a.cases[cid].error is None, b.cases[cid].error is None]
                for cid in common}
    paired = [cid for cid in common if statuses[cid] == "scored"]
    values_a, values_b = _values(a, paired), _values(b, paired)
    diffs = values_b - values_a  # nan where either is undefined
    cis = bootstrap_ci(diffs, resamples, confidence, seed)
    metrics: dict[str, Any] = {}
    for k, (key, ci) in enumerate(zip(METRIC_KEYS, cis)):
        both = ~np.isnan(diffs[:, k])
        n = int(both.sum())
        mean_a, mean_b = ((run.metrics.get("metrics") or {}).get(key) for run in (a, b))
        metrics[key] = {
            "a": mean_a, "b": mean_b,
            "delta": None if mean_a is None or mean_b is None else mean_b - mean_a,
            "n_paired": n, "paired_mean_delta": float(diffs[both, k].mean()) if n else None,
            "ci": ci, "verdict": "undefined" if ci is None else "worse" if ci[1] < 0
            else "better" if ci[0] > 0 else "no significant change",
            # sums in case order, as the means of metrics.json are taken
            "a_common": sum(values_a[both, k].tolist()) / n if n else None,
            "b_common": sum(values_b[both, k].tolist()) / n if n else None}
    count = list(statuses.values()).count
    pairing = {"n_a": len(a.cases), "n_b": len(b.cases), "n_common": len(common),
               "n_paired_scored": len(paired),
               "only_a": len(a.cases) - len(common), "only_b": len(b.cases) - len(common),
               "newly_failed": count("newly failed"), "fixed": count("fixed"),
               "failed_in_both": count("failed in both"),
               "same_cases": ({cid for cid, c in a.cases.items() if c.error is None}
                              == {cid for cid, c in b.cases.items() if c.error is None})}
    side_a, side_b = _side_summary(a), _side_summary(b)
    return {
        "schema_version": 1, "a": side_a, "b": side_b,
        "same_dataset": side_a["digest"] is not None and side_a["digest"] == side_b["digest"],
        "pairing": pairing,
        "bootstrap": {"resamples": resamples, "confidence": confidence, "seed": seed,
                      "method": "paired percentile bootstrap over cases"}, "metrics": metrics,
        "labels": {"shares": share_shifts(_labels(a), _labels(b)),
                   "transitions": label_transitions(a.cases, b.cases, paired)},
        "changed": changed_cases(a, b, common, statuses, top)}


def changed_cases(a: RunData, b: RunData, common: Sequence[str], statuses: Mapping[str, str],
                  top: int) -> list[dict[str, Any]]:
    """The `top` cases that changed most: a change of status (newly failed, fixed) first, then
    by the summed absolute change of the six metrics; ties in id order."""
    ranked = []
    for cid, row in zip(common, (_values(b, common) - _values(a, common)).tolist()):
        deltas = [None if np.isnan(d) else d for d in row]  # B − A; None: either undefined
        total = sum(abs(d) for d in deltas if d is not None)
        status_rank = 0 if statuses[cid] in ("newly failed", "fixed") else 1
        if status_rank == 0 or total != 0.0:
            ranked.append((status_rank, -total, cid, deltas))
    out = []
    for _, neg_total, cid, deltas in sorted(ranked)[:max(top, 0)]:
        status = statuses[cid]
        signs = {d > 0 for d in deltas if d is not None and d != 0.0}
        direction = ("worse" if status == "newly failed" else "better" if status == "fixed"
                     else "mixed" if len(signs) > 1 else "better" if signs == {True} else "worse")
        out.append({"id": cid, "status": status, "change": -neg_total, "direction": direction,
                    "delta": dict(zip(METRIC_KEYS, deltas)),
                    **{side: {k: run.cases[cid].metrics.get(k) for k in METRIC_KEYS}
                       for side, run in (("a", a), ("b", b))}})
    return out


def check_gates(comparison: Mapping[str, Any], gates: Sequence[str],
                max_drop: float | None, max_new_errors: int | None = None) -> dict[str, Any]:
    """Apply the gates: a gated metric fails when B is significantly worse than A by more than
    `max_drop` (the upper end of the paired interval of B − A is below ``-max_drop``), or when no
    paired case defines it. `max_drop` without `gates` gates all six metrics."""
    chosen = list(dict.fromkeys(gates))
    if "all" in chosen or (not chosen and max_drop is not None):
        chosen = list(METRIC_KEYS)
    drop = float(max_drop or 0.0)
    failures = []
    for key in chosen:
        entry = comparison["metrics"][key]
        if (ci := entry["ci"]) is None:
            failures.append(f"{key}: no case defines it in both runs, so B cannot be shown "
                            "to be no worse than A")
        elif ci[1] < -drop:
            failures.append(
                f"{key}: B is worse than A by more than {drop:g} (paired mean difference "
                f"{signed(entry['paired_mean_delta'], 4)}, "
                f"{100 * comparison['bootstrap']['confidence']:g}% CI "
                f"[{signed(ci[0], 4)}, {signed(ci[1], 4)}] over {entry['n_paired']} cases)")
    newly = comparison["pairing"]["newly_failed"]
    if max_new_errors is not None and newly > max_new_errors:
        failures.append(f"{newly} cases fail in B but not in A (max_new_errors {max_new_errors})")
    return {"metrics": chosen, "max_drop": drop if chosen else max_drop,
            "max_new_errors": max_new_errors, "passed": not failures, "failures": failures,
            "active": bool(chosen) or max_new_errors is not None}


def share_text(count: int, total: int, noun: str = "") -> str:
    """``3 of 6 citations (50.0%)``: a count and its share of the total, one decimal."""
    whole = f"{count} of {total}{' ' + noun if noun else ''}"
    return f"{whole} ({100.0 * count / total:.1f}%)" if total else whole


def _pair_items(items_a: Sequence[dict[str, Any]], items_b: Sequence[dict[str, Any]],
                ) -> Iterable[tuple[int, int]]:
    """Positions (i in A, j in B) of the same passage (source and text) in both lists, each
    paired once, in order."""
    free: dict[tuple[str, str], list[int]] = {}
    for j, item in enumerate(items_b):
        free.setdefault((str(item.get("source")), str(item.get("content"))), []).append(j)
    for i, item in enumerate(items_a):
        if slots := free.get((str(item.get("source")), str(item.get("content")))):
            yield i, slots.pop(0)


def _moves(a: CaseResult, b: CaseResult) -> Iterable[tuple[str, str, str]]:
    """(kind, label in A, label in B) of every passage present in both runs of one case."""
    sides = (("citations", (a.response or {}).get("citations") or [],
              (b.response or {}).get("citations") or [], a.citation_labels, b.citation_labels),
             ("references", a.references, b.references, a.reference_labels,
              b.reference_labels))
    for kind, items_a, items_b, labels_a, labels_b in sides:
        for i, j in _pair_items(items_a, items_b):
            if i < len(labels_a) and j < len(labels_b):
                yield kind, labels_a[i], labels_b[j]


def label_transitions(a: Mapping[str, CaseResult], b: Mapping[str, CaseResult],
                      ids: Sequence[str]) -> dict[str, Any]:
    """How the labels moved from A to B over the cases scored in both (`ids`).

    A citation is followed from A to B when B's response cites the same passage (same source
    and text) in the same case; a reference, always (the same ground truth). Returns, per kind,
    the moves between two different labels (``from``, ``to``, ``items``, ``cases``: the case
    ids), most items first, and how many passages were followed and kept their label.
    """
    out: dict[str, Any] = {}
    for kind, _, names in KINDS:
        followed = [(cid, la, lb) for cid in ids for k, la, lb in _moves(a[cid], b[cid])
                    if k == kind]
        moved: dict[tuple[str, str], list[str]] = {}  # (from, to): each moved item's case
        for cid, la, lb in followed:
            if la != lb:
                moved.setdefault((la, lb), []).append(cid)
        order = {name: n for n, name in enumerate(names)}
        rows: list[dict[str, Any]] = [
            {"from": la, "to": lb, "items": len(cases), "cases": list(dict.fromkeys(cases))}
            for (la, lb), cases in moved.items()]
        rows.sort(key=lambda e: (-e["items"], order.get(e["from"], 99), order.get(e["to"], 99)))
        out[kind] = {"followed": len(followed),
                     "kept": sum(la == lb for _, la, lb in followed), "moves": rows}
    return out


def _labels(run: RunData) -> dict[str, Any]:
    """A run's label counts with its fidelity counts keyed as labels (``fidelity_verbatim``)."""
    return {**(run.metrics.get("labels") or {}),
            **{CHECKED[1] + k: v for k, v in (run.metrics.get("fidelity") or {}).items()}}


def share_shifts(labels_a: Mapping[str, Any] | None,
                 labels_b: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Per kind and label: the counts and shares in A and B and the move in percentage points
    (the fidelity labels of checked quotes too, when either counts them)."""
    rows = []
    fidelity = any(k.startswith(CHECKED[1]) for side in (labels_a, labels_b) for k in side or {})
    for kind, prefix, names in (*KINDS, *([CHECKED] if fidelity else [])):
        ca, cb = ({n: int((side or {}).get(prefix + n) or 0) for n in names}
                  for side in (labels_a, labels_b))
        ta, tb = sum(ca.values()), sum(cb.values())
        for name in names:
            pp = 100.0 * cb[name] / tb - 100.0 * ca[name] / ta if ta and tb else None
            text = ("n/a" if pp is None else "0.0 pp" if abs(pp) < 0.05 else f"{pp:+.1f} pp")
            rows.append({"kind": kind, "label": name, "key": prefix + name,
                         "a": share_text(ca[name], ta, kind), "b": share_text(cb[name], tb, kind),
                         "pp": pp, "pp_text": text})
    return rows

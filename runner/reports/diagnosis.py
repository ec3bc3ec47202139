"""The diagnosis across runs: label shares side by side (sweep) and label moves (compare).

A result's bars come from its ``metrics.json`` as scoring wrote it: ``labels``
(``citation_<label>``, ``reference_<label>``), ``label_shares`` and the totals in ``counts``.
The comparison's shifts and moves are still computed here from both runs' label counts and the
``labels`` of each case in ``cases.parquet``, read with :mod:`runner.results`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from runner.results import CaseResult
from runner.scoring.labels import CITATION_LABELS, REFERENCE_LABELS

KINDS = (("citations", "citation_", CITATION_LABELS), ("references", "reference_",
                                                        REFERENCE_LABELS))


def share_text(count: int, total: int, noun: str = "") -> str:
    """``3 of 6 citations (50.0%)``: a count and its share of the total, one decimal."""
    whole = f"{count} of {total}{' ' + noun if noun else ''}"
    return f"{whole} ({100.0 * count / total:.1f}%)" if total else whole


def stacked_bars(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The citation and the reference labels of one result (``metrics.json``), each label in
    order with its count (``labels``) and share (``label_shares``), and their total
    (``counts``): the templates draw each kind as a stacked bar."""
    labels, shares = metrics.get("labels") or {}, metrics.get("label_shares") or {}
    return [{"kind": kind, "total": int((metrics.get("counts") or {}).get(kind) or 0),
             "segments": [{"label": name, "key": prefix + name, "share": shares.get(prefix + name),
                           "count": int(labels.get(prefix + name) or 0)} for name in names]}
            for kind, prefix, names in KINDS]


def _pair_items(items_a: Sequence[dict[str, Any]], items_b: Sequence[dict[str, Any]],
                ) -> list[tuple[int, int]]:
    """Positions (i in A, j in B) of the same passage (source and text) in both lists, each
    paired once, in order."""
    free: dict[tuple[str, str], list[int]] = {}
    for j, item in enumerate(items_b):
        free.setdefault((str(item.get("source")), str(item.get("content"))), []).append(j)
    pairs = []
    for i, item in enumerate(items_a):
        slots = free.get((str(item.get("source")), str(item.get("content"))))
        if slots:
            pairs.append((i, slots.pop(0)))
    return pairs


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
        moved: dict[tuple[str, str], dict[str, Any]] = {}
        for cid, la, lb in followed:
            if la != lb:
                entry = moved.setdefault((la, lb), {"from": la, "to": lb, "items": 0,
                                                    "cases": []})
                entry["items"] += 1
                if cid not in entry["cases"]:
                    entry["cases"].append(cid)
        order = {name: n for n, name in enumerate(names)}
        rows = sorted(moved.values(), key=lambda e: (-e["items"], order.get(e["from"], 99),
                                                     order.get(e["to"], 99)))
        out[kind] = {"followed": len(followed),
                     "kept": sum(la == lb for _, la, lb in followed), "moves": rows}
    return out


def share_shifts(labels_a: Mapping[str, Any] | None,
                 labels_b: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Per kind and label: the counts and shares in A and B and the move in percentage points."""
    rows = []
    for kind, prefix, names in KINDS:
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

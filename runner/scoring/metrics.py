"""Per-case metric math (SPEC 5): pure functions from match results to numbers.

Counting rules: citations are a list, so the same passage cited twice counts twice in context
precision; sources are sets of normalised names.

Empty denominators follow ``zero_division``:

* ``auto`` (default): a recall with nothing expected is 1.0; a precision with nothing cited is
  1.0 when nothing was expected either, else 0.0.
* ``nan``: the value is undefined (``None``) and left out of the means.
* ``zero`` / ``one``: the value is 0.0 / 1.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

ZeroDivision = Literal["auto", "nan", "zero", "one"]
ZERO_DIVISION_POLICIES: tuple[str, ...] = ("auto", "nan", "zero", "one")
METRIC_KEYS: tuple[str, ...] = (
    "context_recall", "context_precision", "context_f1",
    "source_recall", "source_precision", "source_f1",
)
# A case's counts, in this order wherever they are a tuple; the metrics follow from them alone.
COUNT_KEYS: tuple[str, ...] = (
    "references", "references_matched", "citations", "citations_matched",
    "expected_sources", "cited_sources", "sources_hit",
)


def _check_policy(zero_division: str) -> None:
    if zero_division not in ZERO_DIVISION_POLICIES:
        raise ValueError(f"scoring.zero_division must be one of "
                         f"{', '.join(ZERO_DIVISION_POLICIES)}, got {zero_division!r}")


def recall(hits: int, expected: int, zero_division: str = "auto") -> float | None:
    """hits / expected; with nothing expected: 1.0 (auto), None (nan), 0.0 (zero), 1.0 (one)."""
    _check_policy(zero_division)
    if expected:
        return hits / expected
    return {"auto": 1.0, "nan": None, "zero": 0.0, "one": 1.0}[zero_division]


def precision(hits: int, cited: int, expected: int, zero_division: str = "auto") -> float | None:
    """hits / cited; with nothing cited: under ``auto`` 1.0 if nothing was expected, else 0.0."""
    _check_policy(zero_division)
    if cited:
        return hits / cited
    if zero_division == "auto":
        return 1.0 if expected == 0 else 0.0
    return {"nan": None, "zero": 0.0, "one": 1.0}[zero_division]


def f1(p: float | None, r: float | None) -> float | None:
    """2PR / (P + R); 0.0 when P + R = 0; None when either is undefined."""
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def context_metrics(ref_matched: Sequence[bool], cit_matched: Sequence[bool],
                    zero_division: str = "auto") -> dict[str, float | None]:
    """Context recall, precision and F1 from per-reference and per-citation match flags.

    Args:
        ref_matched: For each reference, whether some citation matches it.
        cit_matched: For each citation (duplicates included), whether it matches some reference.
        zero_division: The empty-denominator policy (module docstring).
    """
    r = recall(sum(ref_matched), len(ref_matched), zero_division)
    p = precision(sum(cit_matched), len(cit_matched), len(ref_matched), zero_division)
    return {"context_recall": r, "context_precision": p, "context_f1": f1(p, r)}


def source_metrics(expected: set[str], cited: set[str],
                   zero_division: str = "auto") -> dict[str, float | None]:
    """Source recall |S_exp ∩ S_cit| / |S_exp|, precision |S_cit ∩ S_exp| / |S_cit|, and F1.

    Both arguments are sets of normalised source names.
    """
    hits = len(expected & cited)
    r = recall(hits, len(expected), zero_division)
    p = precision(hits, len(cited), len(expected), zero_division)
    return {"source_recall": r, "source_precision": p, "source_f1": f1(p, r)}

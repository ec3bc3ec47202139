"""The `substring` matcher: exact containment after normalisation (SPEC 4.2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import ClassVar

from runner._gc import gc_paused
from runner.matchers.base import BaseMatcher, Similarity, TextPair
from runner.matchers.text import fold, split_ellipsis


@dataclass
class SubstringMatcher(BaseMatcher):
    """Match iff every ellipsis-separated part of the citation occurs in the reference, or the
    whole reference occurs in the citation. Similarity is 1.0 or 0.0.

    Args:
        normalize: NFKC, case folding and whitespace collapsing before comparing.
    """

    # Binary similarity: every level is 1.0 (any threshold in (0, 1] gives the same matches).
    levels: ClassVar[Mapping[str, float]] = {"strict": 1.0, "default": 1.0, "lenient": 1.0}
    normalize: bool = True

    def for_workload(self, n_pairs: int, processes: int = 1) -> SubstringMatcher:
        """Itself: a local matcher (:class:`~runner.matchers.base.Local`) with nothing to set
        up."""
        return self

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """1.0 for a contained pair, else 0.0. Each distinct text is normalised once per call."""
        with gc_paused():
            texts = dict.fromkeys(chain.from_iterable(pairs))
            norm = {t: fold(t) for t in texts} if self.normalize else {t: t for t in texts}
            parts = {c: split_ellipsis(norm[c]) for c in dict.fromkeys(c for _, c in pairs)}
            return [1.0 if (parts[c] and all(p in norm[r] for p in parts[c]))
                    or (norm[r] and norm[r] in norm[c]) else 0.0 for r, c in pairs]

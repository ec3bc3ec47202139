"""The `substring` matcher: exact containment after normalisation (SPEC 4.2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runner.matchers.base import BaseMatcher, Similarity, TextPair
from runner.matchers.text import fold, split_ellipsis


@dataclass
class SubstringMatcher(BaseMatcher):
    """Match iff every ellipsis-separated part of the citation occurs in the reference, or the
    whole reference occurs in the citation. Similarity is 1.0 or 0.0.

    Args:
        threshold: Any value in (0, 1] gives the same matches; 1.0 by default.
        normalize: NFKC, case folding and whitespace collapsing before comparing.
    """

    threshold: float = 1.0
    normalize: bool = True

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """1.0 for a contained pair, else 0.0."""
        norm: dict[str, str] = {}
        parts: dict[str, list[str]] = {}

        def n(text: str) -> str:
            out = norm.get(text)
            if out is None:
                out = norm[text] = fold(text) if self.normalize else text
            return out

        result: list[Similarity] = []
        for ref, cit in pairs:
            r, c = n(ref), n(cit)
            cit_parts = parts.get(c)
            if cit_parts is None:
                cit_parts = parts[c] = split_ellipsis(c)
            ok = (bool(cit_parts) and all(p in r for p in cit_parts)) or (bool(r) and r in c)
            result.append(1.0 if ok else 0.0)
        return result

"""The `ngram` matcher: token n-gram overlap measured on the shorter passage (SPEC 4.2)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from runner.matchers.base import BaseMatcher, Similarity, TextPair
from runner.matchers.text import token_stretches


class _Grams:
    """The n-grams of one text for one n: a set, plus a Counter when some n-gram repeats."""

    __slots__ = ("counter", "set", "total")

    def __init__(self, stretches: list[list[str]], n: int) -> None:
        grams: list[tuple[str, ...]] = []
        for toks in stretches:
            if len(toks) >= n:
                grams.extend(zip(*(toks[i:] for i in range(n))))
        self.total = len(grams)
        self.set = set(grams)
        # Multiset semantics only matter when an n-gram repeats inside this text.
        self.counter: Counter[tuple[str, ...]] | None = (
            Counter(grams) if len(self.set) != self.total else None)


class _Text:
    __slots__ = ("by_n", "longest", "stretches")

    def __init__(self, text: str) -> None:
        self.stretches = token_stretches(text)
        self.longest = max((len(s) for s in self.stretches), default=0)
        self.by_n: dict[int, _Grams] = {}

    def grams(self, n: int) -> _Grams:
        g = self.by_n.get(n)
        if g is None:
            g = self.by_n[n] = _Grams(self.stretches, n)
        return g


@dataclass
class NgramMatcher(BaseMatcher):
    """Similarity = |G(ref) ∩ G(cit)| / min(|G(ref)|, |G(cit)|) over multisets of token n-grams.

    Tokens are the case-folded ``\\w+`` tokens of the NFKC text; no n-gram crosses an ellipsis.
    When either side's longest ellipsis-free stretch has fewer than `n` tokens, both sides use
    that shorter length (at least 1). A side without tokens gives 0.

    Args:
        threshold: A pair matches when its similarity is ``>=`` this value (default 0.5).
        n: The n-gram length (default 3).
    """

    threshold: float = 0.5
    n: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"NgramMatcher.n must be an integer >= 1, got {self.n!r}")

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Overlap similarity for each pair; each distinct text is tokenised once per call."""
        texts: dict[str, _Text] = {}
        n = self.n
        out: list[Similarity] = []
        append = out.append
        for ref, cit in pairs:
            a = texts.get(ref)
            if a is None:
                a = texts[ref] = _Text(ref)
            b = texts.get(cit)
            if b is None:
                b = texts[cit] = _Text(cit)
            k = min(n, a.longest, b.longest)
            if k == 0:
                append(0.0)
                continue
            ga, gb = a.grams(k), b.grams(k)
            if ga.counter is None and gb.counter is None:
                inter = len(ga.set & gb.set)
            else:
                ca = ga.counter if ga.counter is not None else Counter(ga.set)
                cb = gb.counter if gb.counter is not None else Counter(gb.set)
                inter = sum((ca & cb).values())
            append(inter / min(ga.total, gb.total))
        return out

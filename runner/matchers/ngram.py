"""The `ngram` matcher: token n-gram overlap measured on the shorter passage (SPEC 4.2).

This is the hot path of a run (bench/README.md). How it stays fast and exact:

* Pairs are processed in chunks. The distinct texts of a chunk are tokenised together
  (:func:`runner.matchers.text.token_stream`), each token gets a small integer id, and numpy
  turns every window of `n` ids that crosses no text or ellipsis boundary into one integer key
  (the ids in base V, V the number of distinct tokens), which identifies the n-gram exactly.
* Each text becomes the *set* of its n-gram keys plus their total count; a pair's overlap is one
  C-level set intersection. The multiset intersection Σ min(count_a, count_b) equals the size of
  the set intersection unless an n-gram repeats on *both* sides (a count of 1 on either side caps
  the minimum at 1), so a :class:`~collections.Counter` is built only for a text with a repeated
  n-gram and used only when both texts of a pair have one.
* A pair with a side shorter than `n` tokens (the short-side rule) is rare and takes the plain
  path: :func:`runner.matchers.text.token_stretches` and tuples of tokens.

``tests/matchers/test_ngram_reference.py`` checks every result against a literal implementation
of the SPEC.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count, islice
from typing import Any

import numpy as np

from runner._gc import gc_paused
from runner.matchers.base import BaseMatcher, Similarity, TextPair
from runner.matchers.text import BREAK_MARK, TEXT_MARK, token_stream, token_stretches

CHUNK_PAIRS = 1 << 15
"""Pairs whose texts are tokenised together; bounds the memory of one chunk."""

# A text's n-grams for one n: (total count, set of distinct n-grams, Counter when one repeats,
# min(n, longest ellipsis-free stretch in tokens)).
_Grams = tuple[int, "set[Any]", "Counter[Any] | None", int]

_KEY_LIMIT = 1 << 62


def _grams(text: str, n: int) -> _Grams:
    """The n-grams of one text, by the plain path: unigrams are tokens, longer ones tuples."""
    stretches = token_stretches(text)
    longest = max(map(len, stretches), default=0)
    seq: list[Any] = []
    for s in stretches:
        if len(s) >= n:
            seq.extend(s if n == 1 else zip(*(s[i:] for i in range(n))))
    grams = set(seq)
    total = len(seq)
    return total, grams, (Counter(seq) if len(grams) != total else None), min(n, longest)


def _chunk_grams(texts: dict[str, None], n: int) -> dict[str, _Grams] | None:
    """The n-grams of every text as sets of integer keys (None if the keys would overflow)."""
    order, tokens = token_stream(texts)
    vocab = {TEXT_MARK: 0, BREAK_MARK: 1}
    vocab.update(zip(set(tokens).difference(vocab), count(2)))
    v = len(vocab)
    if v ** n >= _KEY_LIMIT:
        return None
    ids = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    n_tok = len(ids)
    last = n_tok - n + 1  # number of windows
    starts = np.flatnonzero(ids == 0)  # one TEXT_MARK before each text, in `order`
    bounds = np.append(starts, n_tok)
    if last > 0:
        word = ids >= 2
        valid = word[:last].copy()
        keys = ids[:last].copy()
        for j in range(1, n):
            valid &= word[j:last + j]
            keys *= v
            keys += ids[j:last + j]
        # A valid window lies inside one stretch of one text: text i owns the valid windows
        # starting between its mark and the next.
        before = np.zeros(last + 1, dtype=np.int64)
        np.cumsum(valid, out=before[1:])
        offsets = before[np.minimum(bounds, last)].tolist()
        flat: list[int] = keys[valid].tolist()
    else:
        offsets = [0] * len(bounds)
        flat = []
    out: dict[str, _Grams] = {}
    for i, text in enumerate(order):
        lo, hi = offsets[i], offsets[i + 1]
        if hi == lo:
            # No n-gram: fewer than n tokens in every stretch (the short-side rule applies).
            out[text] = _grams(text, n)
            continue
        seq = flat[lo:hi]
        grams = set(seq)
        total = hi - lo
        out[text] = (total, grams, Counter(seq) if len(grams) != total else None, n)
    return out


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
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n < 1:
            raise ValueError(f"NgramMatcher.n must be an integer >= 1, got {self.n!r}")

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Overlap similarity for each pair; each distinct text is tokenised once per chunk."""
        out: list[Similarity] = []
        it = iter(pairs)
        with gc_paused():
            while chunk := list(islice(it, CHUNK_PAIRS)):
                out.extend(self._chunk(chunk))
        return out

    def _chunk(self, pairs: list[TextPair]) -> list[Similarity]:
        n = self.n
        texts = dict.fromkeys(t for pair in pairs for t in pair)
        grams = _chunk_grams(texts, n)
        if grams is None:  # too many distinct tokens for integer keys: tuples of tokens
            grams = {t: _grams(t, n) for t in texts}
        short: dict[tuple[str, int], _Grams] = {}
        out: list[Similarity] = []
        append = out.append
        for ref, cit in pairs:
            a = grams[ref]
            b = grams[cit]
            if a[3] < n or b[3] < n:  # the short-side rule: both sides use the shorter length
                k = min(a[3], b[3])
                if k == 0:
                    append(0.0)
                    continue
                a = short.get((ref, k)) or short.setdefault((ref, k), _grams(ref, k))
                b = short.get((cit, k)) or short.setdefault((cit, k), _grams(cit, k))
            ta, sa, ca, _ = a
            tb, sb, cb, _ = b
            if ca is None or cb is None:
                inter = len(sa & sb)
            else:
                inter = 0
                for g in sa & sb:
                    x, y = ca[g], cb[g]
                    inter += x if x < y else y
            append(inter / (ta if ta < tb else tb))
        return out

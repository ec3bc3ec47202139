"""The `ngram` matcher: token n-gram overlap measured on the shorter passage (SPEC 4.2).

This is the hot path of a run (see bench/README.md). It works on whole chunks of pairs with
numpy, so no Python object is made per token or per n-gram, and stays exact:

1. The distinct texts of a chunk are tokenised together into integer token ids
   (:func:`runner.matchers.text.token_ids`; equal ids ⇔ equal tokens).
2. Every window of `n` consecutive tokens of one ellipsis-free stretch is an n-gram; its key is
   its ids written in base V (V = number of distinct ids), so equal keys ⇔ equal n-grams.
3. ``text * K + key`` (K bounds the keys) is sorted and counted once: per text, the distinct
   n-grams in order, each with its multiplicity (the multiset G of the SPEC).
4. For each pair, every distinct n-gram of the side with fewer is looked up in the other side
   (a binary search in the sorted table); |G(a) ∩ G(b)| = Σ min(count_a, count_b) over the
   n-grams found, and the similarity is that over min(|G(a)|, |G(b)|).

With numba installed (the ``fast`` extra), steps 1-4 can run compiled instead
(:mod:`runner.matchers.ngram_numba`, ``kernel``), with the same results.

A pair with a side shorter than `n` tokens (the short-side rule) is rare: such pairs are scored
again, by the same steps, with n - 1 (then n - 2, ...) until both sides have n-grams; the
length where that first happens is the shorter side's longest stretch, the length the rule asks.
``tests/matchers/test_ngram_reference.py`` checks every result against a literal implementation
of the SPEC.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import chain
from typing import ClassVar

import numpy as np

from runner._gc import gc_paused
from runner.config.constraints import OneOf, Range, allows
from runner.matchers import ngram_numba
from runner.matchers.base import BaseMatcher, Similarity, TextPair
from runner.matchers.text import TOKENIZERS, split_table, token_ids, token_stream, word_table

CHUNK_PAIRS = 12_288
"""Pairs whose texts are processed together; bounds the memory of one chunk."""

_MAX_AUTO_THREADS = 4


def resolve_threads(threads: int) -> int:
    """Threads for a call: `threads` when positive, else one per CPU (at most 4)."""
    return threads if threads > 0 else max(1, min(os.cpu_count() or 1, _MAX_AUTO_THREADS))


def _renumber(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """`keys` renumbered by rank among the distinct ones (0 … k - 1), and k (at least 1)."""
    distinct, rank = np.unique(keys, return_inverse=True)
    return rank.reshape(-1).astype(np.int64, copy=False), max(len(distinct), 1)


def _gram_table(texts: list[str], n: int,
                tokenizer: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The n-gram multisets of the texts of one chunk (the module docstring, step 3).

    Returns:
        ``(entries, counts, start, total, base)``: the sorted distinct ``text * base + key``,
        the multiplicity of each entry, where each text's entries start (those of text t are
        ``entries[start[t]:start[t + 1]]``), and the number of n-grams of each text, repeats
        included.
    """
    tok = token_ids(texts, tokenizer)
    ids = tok.ids
    n_texts = len(texts)
    last = max(len(ids) - n + 1, 0)  # window i covers tokens i .. i + n - 1
    # A window is an n-gram when its first and last tokens are in the same stretch.
    valid = tok.stretch[:last] == tok.stretch[n - 1:]
    v = max(tok.n_ids, 1)
    keys = ids[:last].copy()
    bound = v  # every key < bound
    for j in range(1, n):
        if bound * v >= ngram_numba.KEY_LIMIT:  # renumber the distinct prefixes to stay in int64
            keys, bound = _renumber(keys[:last])
        keys *= v
        keys += ids[j:last + j]
        bound *= v
    keys = keys[valid]
    if bound * (n_texts + 1) >= ngram_numba.KEY_LIMIT:
        keys, bound = _renumber(keys)
    # Owner text of each window: the text at stream position p owns the tokens from
    # tok.first[p] on.
    owner = np.repeat(tok.order, np.diff(np.append(tok.first, len(ids))))[:last][valid]
    entries, counts = np.unique(owner * bound + keys, return_counts=True)
    start = np.searchsorted(entries, np.arange(n_texts + 1, dtype=np.int64) * bound)
    total = np.bincount(owner, minlength=n_texts)
    return entries, counts, start, total, bound


def _local(texts: Sequence[str], a: np.ndarray,
           b: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The texts the pairs (texts[a[p]], texts[b[p]]) use, and the pairs renumbered into them."""
    used, local = np.unique(np.concatenate([a, b]), return_inverse=True)
    local = local.reshape(-1)
    return [texts[i] for i in used.tolist()], local[:len(a)], local[len(a):]


@dataclass
class NgramMatcher(BaseMatcher):
    """Similarity = |G(ref) ∩ G(cit)| / min(|G(ref)|, |G(cit)|) over multisets of token n-grams.

    Tokens are the case-folded word tokens (``\\w`` plus combining marks) of the NFKC text,
    single characters as `tokenizer` says; no n-gram crosses an ellipsis.
    When either side's longest ellipsis-free stretch has fewer than `n` tokens, both sides use
    that shorter length (at least 1). A side without tokens gives 0.

    Args:
        n: The n-gram length (default 3).
        tokenizer: ``auto`` (the default): words, but each character of a script written without
            spaces between words (Han, kana, Hangul, Thai, Lao, Khmer, Myanmar) is a token;
            ``words``: runs of word characters only; ``chars``: every word character is a
            token (:mod:`runner.matchers.text`).
        threads: Threads that compute chunks of pairs at once within this process; 0 (the
            default) means one per CPU, at most 4. It does not change any similarity, so it is
            not part of :meth:`identity`.
        kernel: ``numpy``; ``numba``, the compiled kernel of the ``fast`` extra (about 2.5x
            faster, but loading it costs about a second per process, and compiling it a few
            seconds once after installing); or ``auto`` (the default): ``numba`` when it is
            installed and this process scores at least
            :data:`~runner.matchers.ngram_numba.AUTO_MIN_PAIRS` pairs or has loaded it
            already, else ``numpy``. Same values either way, so not part of :meth:`identity`.
    """

    KERNELS: ClassVar[tuple[str, ...]] = ("auto", "numpy", "numba")

    n: int = field(default=3, metadata=allows(Range(low=1, integer=True)))
    tokenizer: str = field(default="auto", metadata=allows(OneOf(TOKENIZERS, "tokenizer")))
    threads: int = field(default=0, metadata=allows(Range(low=0, integer=True), identity=False))
    kernel: str = field(default="auto", metadata=allows(OneOf(KERNELS, "kernel"),
                                                        identity=False))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kernel == "numba" and not ngram_numba.available():
            raise ValueError("NgramMatcher.kernel=numba needs numba: pip install 'ragcite[fast]' "
                             "(or set matcher.kernel=auto)")

    def for_workload(self, n_pairs: int, processes: int = 1) -> NgramMatcher:
        """This matcher for a job that scores about `n_pairs` pairs in several calls, on
        `processes` processes at once.

        ``kernel=auto`` is decided here, once for the whole workload (a worker sees chunks far
        below what one call needs to pay for the compiled kernel). The compiled kernel is
        loaded here, in the process that forks the workers, so they inherit it instead of each
        loading it again, and so is the Unicode word table (the kernel's warm-up pair is
        ASCII). With several processes each uses one thread (they already use every core).
        """
        changes: dict[str, object] = {}
        if self.kernel == "auto":
            changes["kernel"] = "numba" if ngram_numba.worth_it(n_pairs) else "numpy"
        if processes > 1:
            changes["threads"] = 1
            word_table(), split_table(self.tokenizer)
        adapted = dataclasses.replace(self, **changes) if changes else self  # type: ignore[arg-type]
        if adapted.kernel == "numba" and not ngram_numba.loaded():
            NgramMatcher.similarities(adapted, [("a b c d", "a b c")])  # loads the kernel, once
        return adapted

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Overlap similarity for each pair; each distinct text is tokenised once per chunk."""
        texts = list(dict.fromkeys(chain.from_iterable(pairs)))
        index = dict(zip(texts, range(len(texts))))
        a = np.fromiter((index[r] for r, _ in pairs), dtype=np.int64, count=len(pairs))
        b = np.fromiter((index[c] for _, c in pairs), dtype=np.int64, count=len(pairs))
        # Not through self: a subclass may override either method.
        return NgramMatcher.similarity_array(self, texts, a, b).tolist()

    def similarity_array(self, texts: Sequence[str], a: np.ndarray,
                         b: np.ndarray) -> np.ndarray:
        """Similarities of the pairs (texts[a[p]], texts[b[p]]), as an array.

        The same values as :meth:`similarities`, for callers that already hold their texts as
        ids (the batch scorer): no string pair is built and no text is looked up again.
        """
        def chunk(start: int) -> np.ndarray:
            chunk_texts, ca, cb = _local(texts, a[start:start + CHUNK_PAIRS],
                                         b[start:start + CHUNK_PAIRS])
            if compiled:
                stream, order = token_stream(chunk_texts, self.tokenizer)
                position = np.argsort(order)  # the stream position of each text
                done = ngram_numba.similarities(stream, position, ca, cb, self.n)
                if done is not None:  # else keys beyond int64: the numpy path
                    sims, total = done
                    _short_pairs(chunk_texts, ca, cb, total, sims, self.n, self.tokenizer)
                    return sims
            return _overlap(chunk_texts, ca, cb, self.n, self.tokenizer)

        auto = self.kernel == "auto"  # the compiled kernel for this call?
        compiled = ngram_numba.worth_it(len(a)) if auto else self.kernel == "numba"
        starts = range(0, len(a), CHUNK_PAIRS)
        threads = min(resolve_threads(self.threads), len(starts))
        with gc_paused():
            if threads <= 1:
                parts = [chunk(start) for start in starts]
            else:  # numpy releases the GIL in a chunk's big array calls: chunks run in parallel
                with ThreadPoolExecutor(threads, thread_name_prefix="ragcite-ngram") as pool:
                    parts = list(pool.map(chunk, starts))
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)


def _overlap(texts: list[str], a: np.ndarray, b: np.ndarray, n: int,
             tokenizer: str) -> np.ndarray:
    """Similarities of the pairs (texts[a[p]], texts[b[p]]) by steps 1-4 (the numpy path)."""
    entries, counts, start, total, base = _gram_table(texts, n, tokenizer)
    sims = np.zeros(len(a))
    # Pairs where both sides have an n-gram: step 4 of the module docstring.
    ok = np.flatnonzero((total[a] > 0) & (total[b] > 0))
    if len(ok):
        a_ok, b_ok = a[ok], b[ok]
        n_distinct = np.diff(start)
        swap = n_distinct[a_ok] > n_distinct[b_ok]
        src = np.where(swap, b_ok, a_ok)  # look up the n-grams of the side with fewer
        dst = np.where(swap, a_ok, b_ok)
        # Pairs in order of the looked-up side: the queries then come nearly sorted, which
        # numpy's binary search turns into short, cache-friendly searches.
        by_dst = np.argsort(dst, kind="stable")
        ok, src, dst = ok[by_dst], src[by_dst], dst[by_dst]
        lens = n_distinct[src]
        pair_of = np.repeat(np.arange(len(ok), dtype=np.int64), lens)
        first = np.cumsum(lens) - lens
        at = start[src][pair_of] + (np.arange(len(pair_of)) - first[pair_of])
        query = entries[at] + (dst - src)[pair_of] * base
        pos = np.minimum(np.searchsorted(entries, query), len(entries) - 1)
        shared = np.where(entries[pos] == query,
                          np.minimum(counts[at], counts[pos]), 0)
        inter = np.bincount(pair_of, weights=shared, minlength=len(ok))
        sims[ok] = inter / np.minimum(total[src], total[dst])
    _short_pairs(texts, a, b, total, sims, n, tokenizer)
    return sims


def _short_pairs(texts: list[str], a: np.ndarray, b: np.ndarray, total: np.ndarray,
                 sims: np.ndarray, n: int, tokenizer: str) -> None:
    """Fill in `sims` for the pairs with a side without n-grams (``total`` 0): the short-side
    rule, by scoring them again with n - 1.

    Such a side is shorter than `n` tokens in every stretch (or has no token); where both sides
    have (n - 1)-grams, n - 1 is the shorter side's longest stretch, else n - 2 is tried, and
    so on. A side without tokens keeps the similarity 0 that `sims` holds.
    """
    short = np.flatnonzero((total[a] == 0) | (total[b] == 0))
    if len(short) and n > 1:
        sims[short] = _overlap(*_local(texts, a[short], b[short]), n - 1, tokenizer)

"""The compiled kernel of the `ngram` matcher (``matcher.kernel``; the ``fast`` extra, numba).

It computes exactly what the numpy path of :mod:`runner.matchers.ngram` computes, from the same
byte stream (:func:`runner.matchers.text.token_stream`), in three compiled passes that release
the GIL:

1. :func:`_tokens` scans the bytes once: a token is a run of word bytes (``[0-9A-Za-z_]`` and
   every byte of a non-ASCII character); a run of three or more dots, or a text mark, starts a
   new stretch; each token gets an exact id from an open-addressing hash table of its
   lower-cased bytes (a hash match is confirmed byte by byte).
2. :func:`_grams` gives each text its n-grams (windows of `n` ids within one stretch) as keys
   ``id_1 * V^(n-1) + ... + id_n`` (V distinct ids), sorted, as distinct keys with counts.
3. :func:`_pairs` merges the two sorted lists of each pair: Σ min(count_a, count_b) over the
   shared keys, over min(total_a, total_b).

The kernels are plain module functions until :func:`_compiled` replaces each by its numba
version (cached on disk, ``cache=True``): importing numba costs about a second, so it happens
only in a process that uses the kernel (:func:`worth_it`, ``NgramMatcher.kernel``).
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

KEY_LIMIT = 1 << 62
"""The n-gram keys (of the kernel and of the numpy path) are exact below this bound (int64)."""

AUTO_MIN_PAIRS = 150_000
"""``kernel=auto`` compiles/loads the kernel for a process that will score at least this many
pairs: about a second of loading against about 7 µs saved per pair (bench/README.md)."""

_LOADED = False
_KERNELS: list[str] = []
_F = TypeVar("_F", bound=Callable[..., Any])


@functools.cache
def available() -> bool:
    """True when numba can be imported (the ``fast`` extra is installed)."""
    return importlib.util.find_spec("numba") is not None


def loaded() -> bool:
    """True once this process has loaded the compiled kernel (no further cost to use it)."""
    return _LOADED


def worth_it(n_pairs: int) -> bool:
    """Whether ``kernel=auto`` uses the kernel for `n_pairs` pairs in this process."""
    return available() and (_LOADED or n_pairs >= AUTO_MIN_PAIRS)


def _kernel(fn: _F) -> _F:
    """Mark `fn` for compilation by :func:`_compiled`."""
    _KERNELS.append(fn.__name__)
    return fn


@functools.cache
def _compiled() -> tuple[np.ndarray, np.ndarray]:
    """Compile (or load from numba's cache) the kernels, once per process; the byte tables.

    Each kernel's module name is rebound to its compiled version, so the kernels calling one
    another resolve to compiled code (numba reads globals when it compiles).
    """
    global _LOADED
    import numba

    jit = numba.njit(cache=True, nogil=True)
    module = globals()
    for name in _KERNELS:
        module[name] = jit(module[name])
    lower = np.arange(256, dtype=np.uint8)
    lower[65:91] += 32  # A-Z -> a-z
    word = np.zeros(256, dtype=np.bool_)
    for c in range(256):  # the numpy path's word bytes (runner.matchers.text.token_ids)
        word[c] = c >= 128 or (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95
    _LOADED = True
    return word, lower


@_kernel
def _scan_word(buf: Any, word: Any, lower: Any, i: int) -> Any:
    """The end of the word starting at ``buf[i]`` and the hash of its lower-cased bytes."""
    h = np.uint64(14695981039346656037)  # FNV-1a
    while i < buf.shape[0] and word[buf[i]]:
        h = (h ^ np.uint64(lower[buf[i]])) * np.uint64(1099511628211)
        i += 1
    return i, h ^ (h >> np.uint64(31))


@_kernel
def _find_slot(buf: Any, lower: Any, s: int, n: int, h: Any, t_start: Any, t_len: Any,
               t_hash: Any) -> Any:
    """The slot of the token ``buf[s:s + n]``: its own, or the free slot where it belongs."""
    mask = t_start.shape[0] - 1
    slot = np.int64(h & np.uint64(mask))
    while True:
        rs = t_start[slot]
        if rs < 0:
            return slot
        if t_hash[slot] == h and t_len[slot] == n:
            same = True
            for p in range(n):
                if lower[buf[rs + p]] != lower[buf[s + p]]:
                    same = False
                    break
            if same:
                return slot
        slot = (slot + 1) & mask


@_kernel
def _grow(t_start: Any, t_len: Any, t_hash: Any, t_id: Any) -> Any:
    """The hash table at twice the size, every token moved to its new slot."""
    size = 2 * t_start.shape[0]
    mask = size - 1
    start = np.full(size, -1, np.int64)
    length = np.empty(size, np.int64)
    hashes = np.empty(size, np.uint64)
    ids = np.empty(size, np.int64)
    for old in range(t_start.shape[0]):
        if t_start[old] >= 0:
            slot = np.int64(t_hash[old] & np.uint64(mask))
            while start[slot] >= 0:
                slot = (slot + 1) & mask
            start[slot] = t_start[old]
            length[slot] = t_len[old]
            hashes[slot] = t_hash[old]
            ids[slot] = t_id[old]
    return start, length, hashes, ids


@_kernel
def _tokens(buf: Any, word: Any, lower: Any) -> Any:
    """(token ids, whether each token starts a stretch, each text's first token, n_ids)."""
    size_limit = buf.shape[0] // 2 + 1  # tokens are separated: at most half the bytes
    ids = np.empty(size_limit, np.int64)
    new_stretch = np.empty(size_limit, np.bool_)
    n_texts = np.count_nonzero(buf == 1)
    text_first = np.empty(n_texts + 1, np.int64)
    t_start = np.full(4096, -1, np.int64)
    t_len = np.empty(4096, np.int64)
    t_hash = np.empty(4096, np.uint64)
    t_id = np.empty(4096, np.int64)
    n_ids = nt = dots = i = 0
    t = -1
    brk = False
    while i < buf.shape[0]:
        c = buf[i]
        if word[c]:
            s = i
            i, h = _scan_word(buf, word, lower, i)
            slot = _find_slot(buf, lower, s, i - s, h, t_start, t_len, t_hash)
            if t_start[slot] < 0:  # a new token
                t_start[slot], t_len[slot], t_hash[slot], t_id[slot] = s, i - s, h, n_ids
                n_ids += 1
            ids[nt] = t_id[slot]
            if 2 * n_ids > t_start.shape[0]:  # keep the table at most half full
                t_start, t_len, t_hash, t_id = _grow(t_start, t_len, t_hash, t_id)
            new_stretch[nt] = brk
            brk = False
            nt += 1
            dots = 0
            continue
        if c == 1:  # the mark before a text
            t += 1
            text_first[t] = nt
            brk = True
            dots = 0
        elif c == 46:  # "."
            dots += 1
            brk = brk or dots >= 3
        else:
            dots = 0
        i += 1
    text_first[n_texts] = nt
    return ids[:nt], new_stretch[:nt], text_first, n_ids


@_kernel
def _grams(ids: Any, new_stretch: Any, text_first: Any, n: int, v: int) -> Any:
    """Each text's sorted distinct n-gram keys with their counts: (keys, counts, start, total)."""
    n_texts = text_first.shape[0] - 1
    nt = ids.shape[0]
    keys = np.empty(max(nt, 1), np.int64)
    counts = np.empty(max(nt, 1), np.int64)
    start = np.empty(n_texts + 1, np.int64)
    total = np.zeros(n_texts, np.int64)
    used = 0
    for t in range(n_texts):
        start[t] = used
        run = 0
        m = 0
        for k in range(text_first[t], text_first[t + 1]):
            if new_stretch[k]:
                run = 0
            run += 1
            if run >= n:
                key = np.int64(0)
                for q in range(k - n + 1, k + 1):
                    key = key * v + ids[q]
                r = used + m - 1  # insertion sort: a text has few n-grams
                while r >= used and keys[r] > key:
                    keys[r + 1] = keys[r]
                    r -= 1
                keys[r + 1] = key
                m += 1
        total[t] = m
        if m:  # equal keys -> one key with its count
            w = used
            cnt = 1
            for q in range(used + 1, used + m):
                if keys[q] == keys[w]:
                    cnt += 1
                else:
                    counts[w] = cnt
                    w += 1
                    keys[w] = keys[q]
                    cnt = 1
            counts[w] = cnt
            used = w + 1
    start[n_texts] = used
    return keys, counts, start, total


@_kernel
def _pairs(keys: Any, counts: Any, start: Any, total: Any, x_pos: Any, y_pos: Any) -> Any:
    """The similarity of each pair of texts (x_pos[p], y_pos[p]); 0 where a side has none."""
    sims = np.zeros(x_pos.shape[0], np.float64)
    for p in range(x_pos.shape[0]):
        x = x_pos[p]
        y = y_pos[p]
        tx = total[x]
        ty = total[y]
        if tx == 0 or ty == 0:
            continue
        i1, e1, i2, e2 = start[x], start[x + 1], start[y], start[y + 1]
        inter = 0
        while i1 < e1 and i2 < e2:
            k1 = keys[i1]
            k2 = keys[i2]
            if k1 == k2:
                inter += min(counts[i1], counts[i2])
                i1 += 1
                i2 += 1
            elif k1 < k2:
                i1 += 1
            else:
                i2 += 1
        sims[p] = inter / min(tx, ty)
    return sims


def similarities(stream: bytes, position: np.ndarray, a: np.ndarray, b: np.ndarray,
                 n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Similarities of the pairs (text a[p], text b[p]) of one chunk, and each text's n-grams.

    Args:
        stream: The texts as one byte stream (:func:`runner.matchers.text.token_stream`).
        position: For each text (input index), its position in the stream.
        a, b: Input text index of each pair's two sides.
        n: The n-gram length.

    Returns:
        ``(similarities, total)``: the similarity of each pair (0 where a side has no n-gram),
        and the number of n-grams of each text (input index); None when the n-gram keys
        would not be exact (``V ** n >= 2 ** 62``).
    """
    word, lower = _compiled()
    ids, new_stretch, text_first, n_ids = _tokens(np.frombuffer(stream, dtype=np.uint8), word,
                                                  lower)
    v = max(int(n_ids), 1)
    if v ** n >= KEY_LIMIT:
        return None
    keys, counts, start, total = _grams(ids, new_stretch, text_first, n, v)
    sims = _pairs(keys, counts, start, total, position[a], position[b])
    return sims, total[position]

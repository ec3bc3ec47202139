"""Embedding vectors: compact storage (base64 float32), the checks that a vector is a usable
number, and cosine similarities of many pairs at once."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from runner.matchers.base import PairError, Similarity, TextPair

Vector = np.ndarray
_PAIR_CHUNK = 8192


def encode_vector(vec: Any) -> str:
    """A vector as base64 of little-endian float32 (compact cache storage)."""
    return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(data: str) -> Vector:
    """The inverse of :func:`encode_vector`."""
    return np.frombuffer(base64.b64decode(data), dtype="<f4")


def vector_problem(vec: Vector) -> str | None:
    """Why a vector is not a usable embedding (NaN or infinite values, all zeros, empty), or
    None for a good one."""
    if vec.ndim != 1 or vec.size == 0:
        return "an empty vector"
    if not np.isfinite(vec).all():
        return "a vector with NaN or infinite values"
    if not vec.any():
        return "an all-zero vector"
    return None


def usual_length(lengths: Sequence[int], expected: int | None = None) -> int | None:
    """The length vectors must have: `expected` (``dimensions``) when set, else the most common
    length (the longer on a tie), or None when there are no vectors."""
    if expected is not None:
        return int(expected)
    counts = Counter(lengths)
    return max(counts, key=lambda n: (counts[n], n)) if counts else None


def wrong_length(n: int, usual: int) -> PairError:
    """The error of a text whose vector has `n` values where the others have `usual`."""
    return PairError(f"embedding vector of length {n}, the others have {usual} (a server "
                     "that changed the model behind the same name? rerun with cache.clear=true)")


def cosine_pairs(pairs: Sequence[TextPair], vectors: dict[str, Vector | PairError]
                 ) -> list[Similarity]:
    """Cosine similarity per pair (a PairError where either text has no usable vector, or one
    whose length differs from the others')."""
    usual = usual_length([len(v) for v in vectors.values() if not isinstance(v, PairError)])
    ok = {t: v for t, v in vectors.items() if not isinstance(v, PairError) and len(v) == usual}
    errors = {t: v if isinstance(v, PairError) else wrong_length(len(v), usual or 0)
              for t, v in vectors.items() if t not in ok}
    out: list[Similarity] = [errors.get(a) or errors.get(b) or 0.0 for a, b in pairs]
    good = [i for i, sim in enumerate(out) if not isinstance(sim, PairError)]
    row = {t: i for i, t in enumerate(ok)}
    matrix = np.array(list(ok.values()), dtype=np.float32).reshape(len(ok), usual or 0)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)  # in place; zero rows stay 0
    for start in range(0, len(good), _PAIR_CHUNK):
        idx = good[start:start + _PAIR_CHUNK]
        ia = np.fromiter((row[pairs[i][0]] for i in idx), dtype=np.int64, count=len(idx))
        ib = np.fromiter((row[pairs[i][1]] for i in idx), dtype=np.int64, count=len(idx))
        sims = np.einsum("ij,ij->i", matrix[ia], matrix[ib])
        for i, sim in zip(idx, np.clip(sims, -1.0, 1.0).tolist()):
            out[i] = sim
    return out

"""The similarity cache: a matcher whose similarities are looked up on disk before computing.

Only matchers that say the cache pays (``cacheable``: the API matchers) are cached; the offline
ones compute faster than a lookup and are simply called. The cache key is the matcher's identity
(which carries no threshold) and both texts, so every unique pair is paid once across runs,
reruns and sweeps. Failed pairs are not cached: a rerun retries them. A similarity that is not a
finite number is a failed pair (never cached; one found in an older cache is computed again).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from runner.cache import CACHE_VERSION, CacheStats, DiskCache, digest, text_key
from runner.matchers.base import Matcher, PairError, Similarity, TextPair


class CachedMatcher:
    """Wraps a matcher (a :class:`Matcher` itself) so each similarity is computed once, ever.

    Args:
        inner: The matcher.
        cache: The on-disk cache, or None (caching off).
        stats: Counts similarities found and computed.
    """

    def __init__(self, inner: Matcher, cache: DiskCache | None, stats: CacheStats) -> None:
        self.inner = inner
        self.cache = cache if inner.cacheable else None
        self.stats = stats
        self.namespace = "sim-" + digest({"v": CACHE_VERSION, "m": inner.identity()})[:32]

    @property
    def levels(self) -> Mapping[str, float]:
        """The wrapped matcher's levels."""
        return self.inner.levels

    @property
    def similarity_range(self) -> tuple[float, float]:
        """The wrapped matcher's similarity range."""
        return self.inner.similarity_range

    @property
    def cacheable(self) -> bool:
        """The wrapped matcher's ``cacheable``."""
        return self.inner.cacheable

    def identity(self) -> dict[str, Any]:
        """The wrapped matcher's identity."""
        return self.inner.identity()

    def for_workload(self, n_pairs: int, processes: int = 1) -> Matcher:
        """The same cache around the wrapped matcher set up for this workload."""
        return CachedMatcher(self.inner.for_workload(n_pairs, processes), self.cache,
                             self.stats)

    def bind_cache(self, directory: Path | None) -> None:
        """Passed to the wrapped matcher."""
        self.inner.bind_cache(directory)

    def check(self) -> None:
        """Passed to the wrapped matcher."""
        self.inner.check()

    def usage(self) -> dict[str, Any] | None:
        """The wrapped matcher's usage."""
        return self.inner.usage()

    def similarity_array(self, texts: Sequence[str], a: np.ndarray,
                         b: np.ndarray) -> np.ndarray | None:
        """The wrapped matcher's fast path when nothing is cached (else None)."""
        if self.cache is not None:
            return None
        return self.inner.similarity_array(texts, a, b)

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Cached similarities; only missing pairs reach the wrapped matcher."""
        if self.cache is None:  # not cached: nothing to count
            return self.inner.similarities(pairs)
        keys = [text_key(r, c) for r, c in pairs]
        with self.cache.lock(self.namespace):
            found = {k: v for k, v in self.cache.get_many(self.namespace, keys).items()
                     if isinstance(v, (int, float)) and math.isfinite(v)}
            missing = [i for i, k in enumerate(keys) if k not in found]
            new: list[Similarity] = []
            if missing:
                new = [_number(v) for v in self.inner.similarities([pairs[i] for i in missing])]
                self.cache.put_many(self.namespace, [
                    (keys[i], v) for i, v in zip(missing, new) if not isinstance(v, PairError)])
        self.stats.add("similarities", len(pairs) - len(missing), len(missing))
        out: list[Similarity] = [found.get(k, 0.0) for k in keys]
        for i, v in zip(missing, new):
            out[i] = v
        return out


def _number(value: Similarity) -> Similarity:
    """A similarity, or the PairError of one that is not a finite number."""
    if isinstance(value, PairError) or math.isfinite(value):
        return value
    return PairError(f"the matcher returned a similarity that is not a number: {value!r}")

"""The similarity cache: a matcher whose similarities are looked up on disk before computing.

Local matchers (:class:`~runner.matchers.base.Local`) compute faster than a lookup and are
simply called; every other matcher is cached. The cache key is the matcher's identity (which
carries no threshold) and both texts, so every unique pair is paid once across runs, reruns and
sweeps. Failed pairs are not cached: a rerun retries them. A similarity that is not a finite
number is a failed pair (never cached; one found in an older cache is computed again).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from runner.api.cache import CACHE_VERSION, CacheStats, DiskCache, digest, text_key
from runner.matchers.base import Local, Matcher, PairError, Similarity, TextPair


def cached(matcher: Matcher, cache: DiskCache | None, stats: CacheStats) -> Matcher:
    """`matcher` behind the on-disk cache, or itself (no cache, or a local matcher)."""
    if cache is None or isinstance(matcher, Local):
        return matcher
    return CachedMatcher(matcher, cache, stats)


class CachedMatcher:
    """Wraps a matcher (a :class:`Matcher` itself) so each similarity is computed once, ever.

    Args:
        inner: The matcher.
        cache: The on-disk cache.
        stats: Counts similarities found and computed.
    """

    def __init__(self, inner: Matcher, cache: DiskCache, stats: CacheStats) -> None:
        self.inner, self.cache, self.stats, self.levels = inner, cache, stats, inner.levels
        self.identity = inner.identity  # the wrapped matcher's
        self.namespace = "sim-" + digest({"v": CACHE_VERSION, "m": inner.identity()})[:32]

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Cached similarities; only missing pairs reach the wrapped matcher."""
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
        computed = dict(zip(missing, new))
        return [computed[i] if i in computed else found[k] for i, k in enumerate(keys)]


def _number(value: Similarity) -> Similarity:
    """A similarity, or the PairError of one that is not a finite number."""
    if isinstance(value, PairError) or math.isfinite(value):
        return value
    return PairError(f"the matcher returned a similarity that is not a number: {value!r}")

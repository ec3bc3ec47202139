"""The matcher protocol: similarities for many (reference, citation) passage pairs at once.

A matcher turns pairs of passage texts into similarities; the threshold is applied afterwards by
the scoring step (SPEC 4.1). Because the similarity never depends on the threshold, the runner
caches it under :meth:`Matcher.identity`, which leaves the threshold out, and a threshold sweep
recomputes nothing.

Any class with these members plugs in through Hydra: ``matcher._target_=my_pkg.MyMatcher``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

TextPair = tuple[str, str]
"""A (reference passage, citation passage) pair; both are non-blank when a matcher sees them."""


@dataclass(frozen=True)
class PairError:
    """A pair the matcher could not score (for example an API call that kept failing).

    The scoring step turns it into an error for every case that needs the pair: a failure is
    never counted as a non-match.
    """

    message: str


Similarity = float | PairError


@runtime_checkable
class Matcher(Protocol):
    """Scores passage pairs.

    Attributes:
        threshold: A pair matches when its similarity is ``>=`` this value.
    """

    threshold: float

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Return one similarity per pair, in order (or a :class:`PairError` for a failed pair).

        Implementations receive every distinct pair of a batch of cases at once, so they can
        batch and parallelise API calls.
        """
        ...

    def identity(self) -> dict[str, Any]:
        """Everything that determines the similarities, without the threshold (a cache key)."""
        ...


@dataclass
class BaseMatcher:
    """Convenience base for dataclass matchers: `identity` from the fields minus `threshold`.

    Attributes:
        cacheable: Whether the run's on-disk similarity cache pays for this matcher (a class
            attribute, optional on other matchers; default True). Matchers that compute a
            similarity faster than the cache can look one up (``substring``, ``ngram``) set it
            to False and are simply called again by every job.
    """

    cacheable: ClassVar[bool] = True
    threshold: float = 0.5

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, (int, float)) or isinstance(self.threshold, bool):
            raise TypeError(f"{type(self).__name__}.threshold must be a number, "
                            f"got {self.threshold!r}")

    def identity(self) -> dict[str, Any]:
        """Class path plus every field except `threshold` and secrets."""
        fields = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "threshold" and f.metadata.get("identity", True)
        }
        cls = type(self)
        return {"class": f"{cls.__module__}.{cls.__qualname__}", **fields}

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        raise NotImplementedError


def for_workload(matcher: Matcher, n_pairs: int) -> Matcher:
    """`matcher` as it should run in a process that will score about `n_pairs` pairs.

    A matcher may define ``for_workload(n_pairs)`` to return a copy set up for that amount of
    work (:class:`~runner.matchers.ngram.NgramMatcher` picks its kernel: loading the compiled
    one only pays on large workloads); any other matcher is returned as it is.
    """
    adapt = getattr(matcher, "for_workload", None)
    if callable(adapt):
        adapted: Matcher = adapt(n_pairs)
        return adapted
    return matcher

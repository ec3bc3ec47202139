"""The matcher protocol: similarities for many (reference, citation) passage pairs at once.

A matcher turns pairs of passage texts into similarities and nothing else; the threshold is a
setting of scoring, applied afterwards (SPEC 4.1). A matcher's identity, and so the cache key of
its similarities, carries no threshold: one job decides any number of thresholds from one pass.

:class:`Matcher` is what a matcher author writes: its ``levels``, its ``identity`` and
``similarities``. Everything else is optional, each declared as its own protocol that the runner
finds with ``isinstance``: :class:`Ranged` (similarities outside [0, 1]), :class:`Checked`
(refuse a setting before any work), :class:`Local` (computed on this machine: never cached,
scored by the worker pool, set up for its workload), :class:`FastPath` (similarities as an
array), :class:`OwnCache` (a cache of its own), :class:`Metered` (API usage) and
:class:`FallsBack` (pairs handed to another matcher, counted).
Any class with the members of :class:`Matcher` plugs in through Hydra
(``matcher._target_=my_pkg.MyMatcher``); a dataclass that subclasses :class:`BaseMatcher` gets
``levels``, ``similarity_range`` and ``identity``, has its fields' declared ranges checked
when it is built, and only writes :meth:`similarities`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from runner.config.constraints import check_fields, identity_of

TextPair = tuple[str, str]
"""A (reference passage, citation passage) pair; both are non-blank when a matcher sees them."""

LEVELS = ("strict", "default", "lenient")
"""The named threshold levels (the ``threshold`` config group)."""


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
    """Scores passage pairs: what every matcher has."""

    @property
    def levels(self) -> Mapping[str, float]:
        """The threshold each named level (``strict``, ``default``, ``lenient``) means for this
        matcher's similarity; ``threshold=strict`` picks ``levels["strict"]``."""

    def identity(self) -> dict[str, Any]:
        """Everything that determines the similarities (a cache key; no secrets)."""

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """One similarity per pair, in order (a :class:`PairError` for a failed pair).

        Implementations receive every distinct pair of a batch of cases at once, so they can
        batch and parallelise API calls.
        """


@runtime_checkable
class Ranged(Protocol):
    """A matcher whose similarities are not in [0, 1] (without it: (0, 1))."""

    @property
    def similarity_range(self) -> tuple[float, float]:
        """The lowest and highest similarity; a threshold outside it is refused before any
        work."""


@runtime_checkable
class Checked(Protocol):
    """A matcher with settings to refuse before any work."""

    def check(self) -> None:
        """Raise :class:`~runner.errors.RagciteError` for a setting that cannot work (a
        missing API key), before any data is loaded or any call is made."""


@runtime_checkable
class Local(Protocol):
    """A matcher computed on this machine, faster than a cache lookup: its similarities are
    never cached, and a big run scores it in forked worker processes (``scoring.workers``)."""

    def for_workload(self, n_pairs: int, processes: int = 1) -> Matcher:
        """This matcher set up for a process that scores about `n_pairs` pairs, one of
        `processes` scoring at once (a copy, or itself)."""


@runtime_checkable
class FastPath(Protocol):
    """A matcher that gives the similarities of pairs of text ids as an array."""

    def similarity_array(self, texts: Sequence[str], a: np.ndarray,
                         b: np.ndarray) -> np.ndarray | None:
        """The similarities of the pairs ``(texts[a[p]], texts[b[p]])``, or None to decline
        (then :meth:`Matcher.similarities` is called)."""


@runtime_checkable
class OwnCache(Protocol):
    """A matcher with a cache of its own (vectors, judgments)."""

    def bind_cache(self, directory: Path | None) -> None:
        """The folder for the matcher's own caches (None: caching is off)."""


@runtime_checkable
class Metered(Protocol):
    """A matcher that spends API requests and tokens."""

    def usage(self) -> dict[str, Any]:
        """API requests and tokens spent so far."""


@runtime_checkable
class FallsBack(Protocol):
    """A matcher that hands the pairs it cannot score to another matcher (``locate``: to
    ``ngram`` where a passage is in no document), and counts them for the run's summary."""

    def fallback(self) -> dict[str, Any]:
        """``{"pairs": n, "fell_back": k, "to": "ngram"}``: pairs scored so far, of them those
        the other matcher (``to``) scored, counted over every process of the job."""


def similarity_range(matcher: Matcher) -> tuple[float, float]:
    """The matcher's :attr:`Ranged.similarity_range`, else (0, 1)."""
    return matcher.similarity_range if isinstance(matcher, Ranged) else (0.0, 1.0)


def usage_of(matcher: Matcher) -> dict[str, Any] | None:
    """The :meth:`Metered.usage` of a metered matcher, else None."""
    return matcher.usage() if isinstance(matcher, Metered) else None


def for_workload(matcher: Matcher, n_pairs: int, processes: int = 1) -> Matcher:
    """:meth:`Local.for_workload` of a local matcher; any other matcher as it is."""
    return matcher.for_workload(n_pairs, processes) if isinstance(matcher, Local) else matcher


class CacheFolder:
    """The :class:`OwnCache` hook of a matcher that keeps its results (vectors, judgments) in the
    run's cache folder, ``_cache_dir`` (None: in memory)."""

    _cache_dir: Path | None = None

    def bind_cache(self, directory: Path | None) -> None:
        """Store results under the run's cache folder (None: keep them in memory)."""
        self._cache_dir = Path(directory) if directory is not None else None


@dataclass
class BaseMatcher:
    """Convenience base for dataclass matchers.

    Gives ``levels`` 0.75 / 0.5 / 0.3 and ``similarity_range`` (0, 1), and checks the fields'
    declared ranges when built (a subclass's ``__post_init__`` calls this one). ``identity``
    is the class path and every field not marked ``field(metadata={"identity": False})``.
    """

    levels: ClassVar[Mapping[str, float]] = {"strict": 0.75, "default": 0.5, "lenient": 0.3}
    similarity_range: ClassVar[tuple[float, float]] = (0.0, 1.0)

    def __post_init__(self) -> None:
        """The fields' declared ranges (runner/config/constraints.py).

        Raises:
            RagciteError: A field out of range (``matcher.n: must be an integer >= 1, got 0``).
        """
        check_fields(self, "matcher")

    identity = identity_of  # the class path plus every field of the identity (no secrets)

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Implemented by each matcher."""
        raise NotImplementedError

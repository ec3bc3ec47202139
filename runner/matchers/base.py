"""The matcher protocol: similarities for many (reference, citation) passage pairs at once.

A matcher turns pairs of passage texts into similarities and nothing else; the threshold is a
setting of scoring, applied afterwards (SPEC 4.1). A matcher's identity, and so the cache key of
its similarities, carries no threshold: one job decides any number of thresholds from one pass.

Any class with the members of :class:`Matcher` plugs in through Hydra
(``matcher._target_=my_pkg.MyMatcher``); :class:`BaseMatcher` gives every optional member its
documented default, so a dataclass that subclasses it only writes :meth:`similarities`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from runner.constraints import check_fields

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
    """Scores passage pairs. Every member the runner uses is declared here.

    Attributes:
        levels: The threshold each named level (``strict``, ``default``, ``lenient``) means
            for this matcher's similarity; ``threshold=strict`` picks ``levels["strict"]``.
        similarity_range: The lowest and highest similarity the matcher gives; a threshold
            outside it is refused before any work.
        cacheable: Whether the on-disk similarity cache pays (False for matchers that compute
            faster than a lookup; they are also the ones scored in worker processes).
    """

    @property
    def levels(self) -> Mapping[str, float]:
        """The threshold of each named level (a class attribute of most matchers)."""
        ...

    @property
    def similarity_range(self) -> tuple[float, float]:
        """The lowest and highest similarity."""
        ...

    @property
    def cacheable(self) -> bool:
        """Whether the on-disk similarity cache pays."""
        ...

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """One similarity per pair, in order (a :class:`PairError` for a failed pair).

        Implementations receive every distinct pair of a batch of cases at once, so they can
        batch and parallelise API calls.
        """
        ...

    def similarity_array(self, texts: Sequence[str], a: np.ndarray,
                         b: np.ndarray) -> np.ndarray | None:
        """The similarities of the pairs ``(texts[a[p]], texts[b[p]])`` as an array, or None
        when the matcher has no such fast path (then :meth:`similarities` is called)."""
        ...

    def identity(self) -> dict[str, Any]:
        """Everything that determines the similarities (a cache key; no secrets)."""
        ...

    def for_workload(self, n_pairs: int, processes: int = 1) -> Matcher:
        """This matcher set up for a process that scores about `n_pairs` pairs, one of
        `processes` scoring at once (a copy, or itself)."""
        ...

    def bind_cache(self, directory: Path | None) -> None:
        """The folder for the matcher's own caches (None: caching is off)."""
        ...

    def check(self) -> None:
        """Raise :class:`~runner.errors.RagciteError` for a setting that cannot work (a
        missing API key), before any data is loaded or any call is made."""
        ...

    def usage(self) -> dict[str, Any] | None:
        """API requests and tokens spent so far, or None for a matcher that calls no API."""
        ...


@dataclass
class BaseMatcher:
    """Convenience base for dataclass matchers: every optional member with its default.

    Defaults: ``levels`` 0.75 / 0.5 / 0.3, ``similarity_range`` (0, 1), ``cacheable`` True,
    no ``similarity_array`` fast path, ``for_workload`` returns the matcher itself,
    ``bind_cache`` does nothing, ``check`` checks the fields' declared ranges, ``usage`` is
    None. ``identity`` is the class path and every field not marked
    ``field(metadata={"identity": False})``.
    """

    levels: ClassVar[Mapping[str, float]] = {"strict": 0.75, "default": 0.5, "lenient": 0.3}
    similarity_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    cacheable: ClassVar[bool] = True

    def identity(self) -> dict[str, Any]:
        """Class path plus every field that is part of the identity (no secrets)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                  if f.metadata.get("identity", True)}
        cls = type(self)
        return {"class": f"{cls.__module__}.{cls.__qualname__}", **fields}

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Implemented by each matcher."""
        raise NotImplementedError

    def similarity_array(self, texts: Sequence[str], a: np.ndarray,
                         b: np.ndarray) -> np.ndarray | None:
        """No fast path by default."""
        return None

    def for_workload(self, n_pairs: int, processes: int = 1) -> Matcher:
        """The matcher itself by default."""
        return self

    def bind_cache(self, directory: Path | None) -> None:
        """No cache of its own by default."""

    def check(self) -> None:
        """The fields' declared ranges (runner/constraints.py)."""
        check_fields(self, "matcher")

    def usage(self) -> dict[str, Any] | None:
        """No API usage by default."""
        return None

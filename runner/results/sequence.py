"""A read-only sequence of scored cases whose records may be built on demand (a batch's
records, a run's cases over its batches)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from runner.results import CaseResult


class CaseSequence(Sequence[CaseResult]):
    """A read-only sequence of scored cases whose records may be built on demand.

    Subclasses implement ``__len__`` and ``_at(pos)`` for ``0 <= pos < len(self)``; indexing
    (negative indexes, slices), iteration and equality with a list of the same cases follow.
    """

    def _at(self, pos: int) -> CaseResult:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> CaseResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[CaseResult]: ...

    def __getitem__(self, index: int | slice) -> CaseResult | list[CaseResult]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        return self._at(range(len(self))[index])  # negative indexes; IndexError out of range

    def __iter__(self) -> Iterator[CaseResult]:
        return map(self._at, range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (CaseSequence, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} cases)"

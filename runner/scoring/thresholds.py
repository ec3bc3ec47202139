"""The thresholds a job decides: numbers or named levels, resolved for the chosen matcher.

``scoring.threshold`` is a number (``0.4``), a level (``strict``, ``default``, ``lenient``: the
matcher's own value, :attr:`Matcher.levels <runner.matchers.base.Matcher.levels>`) or a list
of them. Each becomes a :class:`Threshold`, which also names its result folder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from runner.errors import RagciteError

THRESHOLD_KEYS = ("scoring.threshold", "threshold")
"""Override keys that choose a threshold: the value, and the named level (a config group)."""


@dataclass(frozen=True)
class Threshold:
    """One threshold of a job.

    Attributes:
        value: A pair matches when its similarity is ``>=`` this.
        level: The named level it came from, or None for a number.
        index: Its position in the job's list.
    """

    value: float
    level: str | None = None
    index: int = 0

    @property
    def folder(self) -> str:
        """Its result folder's name in a job of several thresholds: ``t0.5``, ``strict_t0.75``."""
        return f"{self.level}_t{self.value:g}" if self.level else f"t{self.value:g}"

    def to_dict(self) -> dict[str, Any]:
        """As written to metrics.json (``threshold``)."""
        return asdict(self)


def is_number(text: str) -> bool:
    """Whether `text` reads as a number, ``nan`` and ``inf`` included."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _one(spec: Any, levels: Mapping[str, float],
         bounds: tuple[float, float]) -> tuple[float, str | None]:
    """The value and level of one item of ``scoring.threshold``."""
    if isinstance(spec, str) and (name := spec.strip()) in levels:
        return float(levels[name]), name
    if isinstance(spec, bool):
        raise RagciteError(f"scoring.threshold: {spec!r} is not a number or a level")
    try:
        value = float(spec)
    except (TypeError, ValueError):
        raise RagciteError(f"scoring.threshold: {spec!r} is neither a number nor a level "
                           f"({', '.join(levels)})") from None
    low, high = bounds
    if not low <= value <= high:  # NaN included
        what = "is not a number; give one in" if math.isnan(value) else "is outside"
        raise RagciteError(f"scoring.threshold: {spec!r} {what} [{low:g}, {high:g}], the "
                           "similarities this matcher gives")
    return value, None


def resolve_thresholds(spec: Any, levels: Mapping[str, float],
                       bounds: tuple[float, float] = (0.0, 1.0)) -> list[Threshold]:
    """The thresholds `spec` asks for, in order, without repeats.

    Args:
        spec: A number, a level name, or a list of them (``scoring.threshold``).
        levels: The matcher's value of each level.
        bounds: The lowest and highest similarity the matcher gives.

    Raises:
        RagciteError: An empty list, or an item that is neither a number in `bounds` nor a
            level.
    """
    items: Sequence[Any] = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    if not items:
        raise RagciteError("scoring.threshold: the list is empty; give at least one threshold")
    found = dict.fromkeys(_one(item, levels, bounds) for item in items)  # in order, once
    return [Threshold(value, level, index) for index, (value, level) in enumerate(found)]

"""What a config key allows beyond its type, declared once next to the field.

A schema field (``runner/schema.py``) or a plug-in's dataclass field (a matcher's, a model
adapter's: :func:`runner.schema.conf_for` copies it) carries its constraint in its metadata::

    batch_size: int = field(default=1000, metadata=allows(Range(low=1, integer=True)))

and :func:`runner.config_check.check_config` checks the composed config against every schema
before any work: keys the schema does not have (``+gate.context_recal=0.9``), values out of
range, and the checks across keys a schema class declares in a ``config_problem`` classmethod.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any

from omegaconf import ListConfig

CHECK = "check"
"""The field-metadata key holding a constraint."""


@dataclass(frozen=True)
class Range:
    """A number between bounds (``None``: unbounded); NaN is never in range.

    Attributes:
        low, high: The bounds.
        open_low, open_high: Whether the bound itself is excluded.
        integer: Whether the key is an integer (for the message).
    """

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    integer: bool = False

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value`, or None (null is the schema's business)."""
        if value is None:
            return None
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
            and not math.isnan(value)
        if ok and self.low is not None:
            ok = value > self.low if self.open_low else value >= self.low
        if ok and self.high is not None:
            ok = value < self.high if self.open_high else value <= self.high
        return None if ok else f"must be {self.text()}, got {value!r}"

    def argument(self, text: str) -> Any:
        """`text` as a number in range: the ``type`` of a command-line option.

        Raises:
            argparse.ArgumentTypeError: Not a number in range (the message says what is).
        """
        try:
            value: Any = int(text) if self.integer else float(text)
        except ValueError:
            value = None
        if value is None or self.problem(value):
            raise argparse.ArgumentTypeError(f"must be {self.text()}, got {text}")
        return value

    def text(self) -> str:
        """The allowed values in words (``an integer >= 1``, ``a number in (0, 1)``)."""
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            return (f"{kind} in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}"
                    f"{')' if self.open_high else ']'}")
        if self.low is not None:
            return f"{kind} {'>' if self.open_low else '>='} {self.low:g}"
        if self.high is not None:
            return f"{kind} {'<' if self.open_high else '<='} {self.high:g}"
        return kind


@dataclass(frozen=True)
class OneOf:
    """A name from a fixed list, or (for a list-valued key) a list of such names.

    Attributes:
        choices: The allowed names.
        noun: What one name is, for the message (``step``).
    """

    choices: tuple[str, ...]
    noun: str = "value"

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value`, or None."""
        if value is None:
            return None
        values = list(value) if isinstance(value, (list, tuple, ListConfig)) else [value]
        bad = [v for v in values if v not in self.choices]
        if not bad:
            return None
        return f"unknown {self.noun} {bad[0]!r}; choose from: {', '.join(self.choices)}"


def allows(constraint: Range | OneOf, **metadata: Any) -> dict[str, Any]:
    """Field metadata declaring what the key allows (other metadata kept)."""
    return {**metadata, CHECK: constraint}

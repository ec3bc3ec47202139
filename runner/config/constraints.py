"""What a config key allows beyond its type, declared once next to the field.

A schema field (``runner/config/schema.py``) or a plug-in's setting carries its constraint: a
dataclass field in its metadata, a parameter of a plug-in's ``__init__`` as an ``Annotated``
extra (:func:`runner.config.schema.conf_for` derives the plug-in's schema from either)::

    batch_size: int = field(default=1000, metadata=allows(Range(low=1, integer=True)))
    def __init__(self, timeout_s: Annotated[float, SECONDS] = 5.0) -> None: ...

and :func:`runner.config.check.check_config` checks the composed config against every schema
before any work: keys the schema does not have (``+gate.context_recal=0.9``), values out of
range, and the checks across keys a schema class declares (:class:`CrossCheck`).
A plug-in built in Python is checked by :func:`check_fields` (called once, when a
:class:`~runner.matchers.base.BaseMatcher` or :class:`~runner.adapters.base.BaseAdapter` is
built), and a command-line
option by the constraint itself as argparse's ``type``. Every numeric setting declares one
(tests/test_constraints.py walks the schemas).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import sys
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from omegaconf import ListConfig

from runner.errors import RagciteError

CHECK = "check"
"""The field-metadata key holding a constraint."""
EACH = "each"
"""The field-metadata key holding the schema of each entry of a dict-valued key."""


@dataclass(frozen=True)
class Range:
    """A finite number between bounds (``None``: unbounded); NaN and infinities are never in
    range, nor an integer beyond 64 bits (``sys.maxsize``), which no setting needs.

    Attributes:
        low, high: The bounds.
        open_low, open_high: Whether the bound itself is excluded.
        integer: Whether the key is an integer (for the message and the command line).
        unit: What the number counts, for the message (``seconds``).
    """

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    integer: bool = False
    unit: str = ""

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value`, or None (null is the schema's business)."""
        if value is None:
            return None
        ok = isinstance(value, int if self.integer else (int, float)) \
            and not isinstance(value, bool) \
            and (abs(value) <= sys.maxsize if isinstance(value, int) else math.isfinite(value))
        if ok and self.low is not None:
            ok = value > self.low if self.open_low else value >= self.low
        if ok and self.high is not None:
            ok = value < self.high if self.open_high else value <= self.high
        return None if ok else f"must be {self.text()}, got {value!r}"

    def __call__(self, text: str) -> float:
        """A command-line value read and checked: the constraint as argparse's ``type``."""
        value: Any = text
        with contextlib.suppress(ValueError):
            value = int(text) if self.integer else float(text)
        if self.problem(value):
            raise argparse.ArgumentTypeError(f"must be {self.text()}, got {text}")
        return value

    def text(self) -> str:
        """The allowed values in words (``an integer >= 1``, ``a number in (0, 1)``)."""
        kind = ("an integer" if self.integer else "a number") + (f" of {self.unit}"
                                                                  if self.unit else "")
        if self.low is not None and self.high is not None:
            return (f"{kind} in {'(' if self.open_low else '['}{_num(self.low)}, "
                    f"{_num(self.high)}{')' if self.open_high else ']'}")
        if self.low is not None:
            return f"{kind} {'>' if self.open_low else '>='} {_num(self.low)}"
        if self.high is not None:
            return f"{kind} {'<' if self.open_high else '<='} {_num(self.high)}"
        return kind


def _num(bound: float) -> str:
    """A bound as written: ``1000000``, not ``1e+06``."""
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


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


COUNT = Range(low=0, integer=True)
"""A count that may be zero (retries, rows listed) or a seed."""
POSITIVE = Range(low=1, integer=True)
"""A size or a concurrency: at least one."""
SECONDS = Range(0, 86_400, open_low=True, unit="seconds")
"""A timeout: more than none, at most a day."""


@runtime_checkable
class CrossCheck(Protocol):
    """A schema or plug-in class with a check across its keys (``green >= medium``)."""

    @classmethod
    def config_problem(cls, node: Any) -> str | None:
        """What is wrong across the keys of the config node `node`, or None."""


def allows(constraint: Range | OneOf, **metadata: Any) -> dict[str, Any]:
    """Field metadata declaring what the key allows (other metadata kept)."""
    return {**metadata, CHECK: constraint}


def identity_of(obj: Any) -> dict[str, Any]:
    """A dataclass plug-in's identity (the cache key of what it produces): its class path and
    every field not marked ``field(metadata={"identity": False})`` (secrets, transport)."""
    cls = type(obj)
    return {"class": f"{cls.__module__}.{cls.__qualname__}",
            **{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)
               if f.metadata.get("identity", True)}}


def check_fields(obj: Any, prefix: str) -> None:
    """Check a dataclass plug-in against the constraints of its fields, as the config check
    does (a value null where the field's type allows none is refused too).

    Args:
        obj: The plug-in.
        prefix: Its config key (``matcher``), for the message.

    Raises:
        RagciteError: The first field out of range: ``matcher.timeout: must be ...``.
    """
    for f in dataclasses.fields(obj):
        constraint, value = f.metadata.get(CHECK), getattr(obj, f.name)
        problem = constraint.problem(value) if constraint else None
        if constraint and value is None and "None" not in str(f.type):
            problem = "must be set, not null"
        if problem:
            raise RagciteError(f"{prefix}.{f.name}: {problem}")

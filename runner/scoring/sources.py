"""Source normalisation (SPEC 3): the steps are a config list, applied in order."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import reduce

_SPACE = re.compile(r"\s+")


def _basename(source: str) -> str:
    # A path or URL to its last non-empty segment; query strings and fragments are dropped.
    text = source.split("?", 1)[0].split("#", 1)[0].rstrip("/\\")
    return re.split(r"[/\\]", text)[-1] if text else source


STEPS: dict[str, Callable[[str], str]] = {
    "nfc": lambda s: unicodedata.normalize("NFC", s), "strip": str.strip,
    "collapse_whitespace": lambda s: _SPACE.sub(" ", s), "casefold": str.casefold,
    "basename": _basename}
"""The available steps. ``basename`` is off by default."""

DEFAULT_STEPS: tuple[str, ...] = ("nfc", "strip", "collapse_whitespace", "casefold")


class SourceNormalizer:
    """Normalise source names with a configured list of steps.

    Args:
        steps: Names from :data:`STEPS`, applied in order.

    Raises:
        ValueError: A step name is unknown.
    """

    def __init__(self, steps: Sequence[str] = DEFAULT_STEPS) -> None:
        if unknown := [s for s in steps if s not in STEPS]:
            raise ValueError(f"scoring.source_normalization: unknown step(s) {unknown}; "
                             f"expected some of {', '.join(STEPS)}")
        self.steps = tuple(steps)
        self._funcs = [STEPS[s] for s in steps]
        self._memo: dict[str, str] = {}

    def __reduce__(self) -> tuple[type[SourceNormalizer], tuple[tuple[str, ...]]]:
        # Pickled by its step names (the step functions include lambdas); the memo is rebuilt.
        return (SourceNormalizer, (self.steps,))

    def __call__(self, source: str) -> str:
        if (out := self._memo.get(source)) is None:
            out = reduce(lambda text, func: func(text), self._funcs, source)
            if len(self._memo) < 1_000_000:
                self._memo[source] = out
        return out

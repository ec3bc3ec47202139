"""A plug-in outside the repository gets the checks a shipped one gets, with no product file
edited: its schema is derived from the class it names (``matcher._target_=...``), so its keys
are set without ``+`` and a wrong type, a value out of range or an unknown key is one located
line, exit 2. The package is written to a temporary folder on PYTHONPATH and registered
nowhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bad_inputs.table import BASE_ARGS, Row, ids, run_row, write_files
from tests.conftest import run_cli

E = "ragcite: error: "
OUTSIDE = '''\
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from runner.config.constraints import POSITIVE, Range, allows
from runner.matchers.base import BaseMatcher


@dataclass
class JaccardMatcher(BaseMatcher):
    levels: ClassVar[Mapping[str, float]] = {"strict": 0.8, "default": 0.5, "lenient": 0.3}
    lowercase: bool = True
    min_words: int = field(default=1, metadata=allows(Range(low=1, integer=True)))

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out = []
        for a, b in pairs:
            if self.lowercase:
                a, b = a.lower(), b.lower()
            x, y = set(a.split()), set(b.split())
            out.append(len(x & y) / len(x | y) if len(x | y) >= self.min_words else 0.0)
        return out


class PrefixMatcher(BaseMatcher):
    """Not a dataclass: its settings are its __init__'s parameters."""

    def __init__(self, chars: Annotated[int, POSITIVE] = 8, note: str | None = None) -> None:
        self.chars = chars

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [float(a[:self.chars] == b[:self.chars]) for a, b in pairs]


class LevellessMatcher:
    """No levels: not a matcher."""

    def identity(self) -> dict[str, str]:
        return {}

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [1.0 for _ in pairs]


class SilentModel:
    """No respond: not a model adapter."""

    cacheable = False

    def identity(self) -> dict[str, str]:
        return {}

    def bind(self, context: object) -> None:
        pass

    def check(self) -> None:
        pass

    def usage(self) -> None:
        return None


class NoHooksTracker:
    """No sweep hooks, and not a subclass of Tracker: not a tracker."""

    def __init__(self, **settings: object) -> None:
        pass

    def check(self) -> None:
        pass

    def open(self, result_dir: object) -> None:
        return None

    def log(self, result_dir: object) -> None:
        pass

    def close(self, status: str, result_dir: object = None) -> None:
        pass
'''
FILES = {"plugins/outside_pkg/__init__.py": OUTSIDE}
ENV = {"PYTHONPATH": "{tmp}/plugins"}
JACCARD = "matcher._target_=outside_pkg.JaccardMatcher"
PREFIX = "matcher._target_=outside_pkg.PrefixMatcher"
NO_HOOKS = "tracking._target_=outside_pkg.NoHooksTracker"
NOT_A_TRACKER = (f"{E}tracking._target_: outside_pkg.NoHooksTracker is not a tracker: it lacks "
                 "start_sweep, end_sweep (runner.tracking.base.Tracker)")

ROWS = [
    Row("outside matcher: not a boolean", [JACCARD, "matcher.lowercase=maybe"], 2,
        f"{E}matcher.lowercase: must be true or false, got 'maybe'", FILES, ENV),
    Row("outside matcher: out of range", [JACCARD, "matcher.min_words=0"], 2,
        f"{E}matcher.min_words: must be an integer >= 1, got 0", FILES, ENV),
    Row("outside matcher: unknown key", [JACCARD, "matcher.lowercas=false"], 2,
        f"{E}matcher.lowercas: no such key; JaccardMatcher takes: lowercase, min_words",
        FILES, ENV),
    Row("outside matcher: unknown key added with +", [JACCARD, "+matcher.foo=1"], 2,
        f"{E}matcher.foo: no such key; JaccardMatcher takes: lowercase, min_words", FILES, ENV),
    Row("outside matcher: not an integer", [JACCARD, "matcher.min_words=few"], 2,
        f"{E}matcher.min_words: must be an integer, got 'few'", FILES, ENV),
    Row("outside matcher by ~ and +: not a boolean",
        ["~matcher", "+matcher._target_=outside_pkg.JaccardMatcher", "+matcher.lowercase=maybe"],
        2, f"{E}matcher.lowercase: must be true or false, got 'maybe'", FILES, ENV),
    Row("outside matcher by ~ and +: a key of the default matcher",
        ["~matcher", "+matcher._target_=outside_pkg.JaccardMatcher", "+matcher.n=3"],
        2, f"{E}matcher.n: no such key; JaccardMatcher takes: lowercase, min_words", FILES, ENV),
    Row("outside class (not a dataclass): out of range", [PREFIX, "matcher.chars=0"], 2,
        f"{E}matcher.chars: must be an integer >= 1, got 0", FILES, ENV),
    Row("outside class (not a dataclass): unknown key", [PREFIX, "matcher.n=2"], 2,
        f"{E}matcher.n: no such key; PrefixMatcher takes: chars, note", FILES, ENV),
    Row("outside class lacking a matcher's member", ["matcher._target_=outside_pkg."
        "LevellessMatcher"], 2, f"{E}matcher._target_: outside_pkg.LevellessMatcher is not a "
        "matcher: it lacks levels (runner.matchers.base.Matcher)", FILES, ENV),
    Row("outside class lacking an adapter's member", ["model._target_=outside_pkg.SilentModel"],
        2, f"{E}model._target_: outside_pkg.SilentModel is not a model adapter: it lacks respond "
        "(runner.adapters.base.ModelAdapter)", FILES, ENV),
    Row("outside class lacking a tracker's sweep hooks: a run", [NO_HOOKS], 2, NOT_A_TRACKER,
        FILES, ENV),
    Row("outside class lacking a tracker's sweep hooks: a sweep",
        ["-m", "matcher=ngram,substring", NO_HOOKS], 2, NOT_A_TRACKER, FILES, ENV),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_an_outside_plugin_is_checked_like_a_shipped_one(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)


@pytest.mark.parametrize("named", [JACCARD, JACCARD.replace("._target_", "")],
                         ids=["matcher._target_=pkg.Class", "matcher=pkg.Class"])
def test_an_outside_matcher_named_by_its_class_runs_with_its_settings(named: str,
                                                                      tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    proc = run_cli([*BASE_ARGS, named, "matcher.lowercase=false", "dataset.limit=2"], tmp_path,
                   env={"PYTHONPATH": str(tmp_path / "plugins")}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (run,) = (tmp_path / "outputs" / "runs").iterdir()
    assert run.name.endswith("_demo_extractive_outside_pkg.JaccardMatcher")
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["n_cases"] == 2
    assert metrics["matcher"] == {
        "name": "outside_pkg.JaccardMatcher",
        "identity": {"class": "outside_pkg.JaccardMatcher", "lowercase": False, "min_words": 1}}

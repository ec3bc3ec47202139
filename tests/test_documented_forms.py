"""Command lines the README shows work as written: a JMESPath mapping calling a function, and
``scoring.zero_division=nan`` (which Hydra alone reads as a float)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.conftest import REPO, only_run_dir, read_json, run_cli
from tests.helpers import read_passages

ENV = {"PYTHONPATH": str(REPO)}
QUIET = ["tracking=none", "report=none", "progress=false", "cache.enabled=false"]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _readme_command(marker: str) -> list[str]:
    """The README's `ragcite` command line holding `marker` (continuations joined, comment
    dropped), as the shell splits it, without the leading ``ragcite``."""
    lines = README.replace("\\\n", " ").splitlines()
    (line,) = [x for x in lines if x.startswith("ragcite ") and marker in x]
    words = shlex.split(line, comments=True)
    assert words[0] == "ragcite"
    return words[1:]


def test_the_readme_jmespath_mapping_with_a_function_works(tmp_path: Path) -> None:
    records = [
        {"id": "a", "question": "Who wrote it?",
         "gold": [{"doc": "d1", "quote": "Ann wrote the report."}],
         "output": {"refs": [{"doc": "d1", "quote": "Ann wrote the report."}]}},
        {"id": "b", "question": "When?",
         "gold": [{"doc": "d2", "quote": "It was in May."}],
         "output": {"refs": [{"doc": "d3", "quote": "Ann wrote the report."}]}}]
    (tmp_path / "my.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records),
                                       encoding="utf-8")
    args = _readme_command("length(question)")
    assert args[-1] == 'dataset.mapping.metadata="{question_chars: length(question)}"'
    proc = run_cli([*args, *QUIET], cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr
    passages = read_passages(only_run_dir(tmp_path / "outputs"))
    # len("Who wrote it?") = 13, len("When?") = 5
    assert [p["metadata"] for p in passages] == [{"question_chars": 13}, {"question_chars": 5}]


def test_zero_division_nan_as_the_readme_writes_it(tmp_path: Path) -> None:
    args = _readme_command("scoring.zero_division=nan")
    assert args == ["matcher=substring", "scoring.zero_division=nan"]
    proc = run_cli([*args, *QUIET], cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr
    metrics = read_json(only_run_dir(tmp_path / "outputs") / "metrics.json")
    assert metrics["scoring"]["zero_division"] == "nan"


def test_zero_division_nan_in_a_sweep_and_canonical_forms() -> None:
    from runner.cli import canonical_args

    assert canonical_args(["-m", "scoring.zero_division=nan,zero", "+scoring.zero_division=NaN",
                           "scoring.zero_division=one"]) == [
        "-m", "scoring.zero_division='nan',zero", "+scoring.zero_division='nan'",
        "scoring.zero_division=one"]

"""The bad-input suite's harness: one row is one command a user might type, with the files it
reads, the exit status it must give and the one line the user must see.

Every row runs the real ``ragcite`` command line in a subprocess, in its own folder, with
tracking and reports off unless the row turns them on (``tracking=none report=none
progress=false`` come first, so a row's own arguments win). The checks:

* the exit status is exactly ``row.status``;
* stderr holds no Python traceback and no Hydra ``HYDRA_FULL_ERROR`` hint or "Error executing
  job" block;
* ``row.line`` (``{tmp}`` stands for the row's folder) is one of the lines on stderr, exactly;
* when the status is 2 or 3, that line is the only ``ragcite: error:`` line, and stderr has at
  most three lines before it.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import EXIT_INPUT, EXIT_NOTHING_SCORED
from tests.conftest import run_cli

BASE_ARGS = ("tracking=none", "report=none", "progress=false")
ERROR_PREFIX = "ragcite: error: "


@dataclass(frozen=True)
class Row:
    """One bad (or good) input and what the user must see.

    Attributes:
        name: The row's test id.
        args: Command-line arguments after the base ones; ``{tmp}`` is the row's folder.
        status: The exact exit status.
        line: The exact line on stderr; ``{tmp}`` is the row's folder.
        files: Files to write in the row's folder first (text is written as UTF-8).
        env: Extra environment variables.
    """

    name: str
    args: Sequence[str]
    status: int
    line: str
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write each file of a row below `root`."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def run_row(row: Row, tmp: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run a row's command in `tmp` and check everything the module doc lists."""
    write_files(tmp, row.files)
    args = [*BASE_ARGS, *(a.replace("{tmp}", str(tmp)) for a in row.args)]
    env = {k: v.replace("{tmp}", str(tmp)) for k, v in row.env.items()}
    proc = run_cli(args, tmp, env=env, timeout=timeout)
    check(row, proc, tmp)
    return proc


def check(row: Row, proc: subprocess.CompletedProcess[str], tmp: Path) -> None:
    """Assert the status, the line, and that nothing else alarming reached the user."""
    err = proc.stderr
    context = f"\n--- stderr of {row.name} ---\n{err}"
    assert proc.returncode == row.status, f"status {proc.returncode}, not {row.status}{context}"
    assert "Traceback" not in err, context
    assert "HYDRA_FULL_ERROR" not in err and "Error executing job" not in err, context
    lines = [line for line in err.splitlines() if line.strip()]
    expected = row.line.replace("{tmp}", str(tmp))
    assert expected in lines, f"missing line:\n{expected}{context}"
    if row.status in (EXIT_INPUT, EXIT_NOTHING_SCORED):
        errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
        assert errors == [expected], context
        assert lines.index(expected) <= 3, f"more than three lines before the error{context}"


def ids(rows: Sequence[Row]) -> list[str]:
    """The rows' names as pytest ids (checked unique)."""
    names = [row.name for row in rows]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, f"duplicate row names: {dupes}"
    return [re.sub(r"\s+", "-", n) for n in names]

"""The README's exit-status table is the one the code and the bad-input suite use: it lists
exactly the statuses of runner/errors.py (and 0), and every status a bad input can give is
given by at least one row of the suite (the ``ROWS`` of every ``test_*.py`` module here)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from runner import errors
from tests.bad_inputs.table import Row
from tests.conftest import REPO

HERE = Path(__file__).resolve().parent
README_ROW = re.compile(r"^\| (\d+) \| ")


def readme_statuses() -> list[int]:
    """The statuses of the table after the README's ``Exit status`` line, in order."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Exit status"))
    statuses = []
    for line in lines[start + 1:]:
        if statuses and not line.startswith("|"):
            break
        if m := README_ROW.match(line):
            statuses.append(int(m[1]))
    return statuses


def code_statuses() -> set[int]:
    """0 and every ``EXIT_*`` status of runner/errors.py."""
    return {0} | {v for k, v in vars(errors).items() if k.startswith("EXIT_")}


def suite_rows() -> list[Row]:
    """Every row of the bad-input suite, whichever modules hold them."""
    rows: list[Row] = []
    for path in sorted(HERE.glob("test_*.py")):
        module = importlib.import_module(f"tests.bad_inputs.{path.stem}")
        rows += [r for r in getattr(module, "ROWS", []) if isinstance(r, Row)]
    return rows


def test_the_readme_table_lists_exactly_the_statuses_of_the_code() -> None:
    assert readme_statuses() == [0, 1, 2, 3, 130, 141]
    assert set(readme_statuses()) == code_statuses()


def test_every_status_but_an_interrupt_is_given_by_a_bad_input_row() -> None:
    # 130 (Ctrl-C, SIGTERM) is covered by tests/test_cli.py, which sends the signal; 141 (the
    # reader went away) by test_known_inputs.py, which closes the pipe.
    given = {row.status for row in suite_rows()}
    assert code_statuses() - {errors.EXIT_INTERRUPTED, errors.EXIT_BROKEN_PIPE} <= given, given
    assert given <= code_statuses(), given

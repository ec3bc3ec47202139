"""``python -m tests.tracking.paused_migration ARGS``: ``ragcite ARGS``, paused in the middle of
making a new MLflow store. After the ``RAGCITE_TEST_PAUSE_AT``-th SQL statement that begins with
``RAGCITE_TEST_PAUSE_ON``, it leaves the file ``RAGCITE_TEST_MARKER`` and waits to be killed."""

from __future__ import annotations

import os
import runpy
import sys
import threading
from pathlib import Path
from typing import Any

import sqlalchemy
from sqlalchemy import event


def main() -> None:
    """Install the pause on every SQLAlchemy engine, then run the command line."""
    prefix = os.environ["RAGCITE_TEST_PAUSE_ON"].upper()
    left = [int(os.environ["RAGCITE_TEST_PAUSE_AT"])]

    def after(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith(prefix):
            left[0] -= 1
            if left[0] == 0:
                Path(os.environ["RAGCITE_TEST_MARKER"]).touch()
                threading.Event().wait()  # until killed

    event.listen(sqlalchemy.engine.Engine, "after_cursor_execute", after)
    sys.argv = ["ragcite", *sys.argv[1:]]
    runpy.run_module("runner.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

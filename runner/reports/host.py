"""A sweep's job reports, rendered one after another by one forked helper process.

The jobs of a sweep on Hydra's basic launcher run in the sweep's own process, one after
another. Each job's ``report.html`` renders beside the next job instead of holding it up. Forking
the sweep's process for every report did that, but the fork shares the sweep's whole heap (the
loaded cases, the memos): every page the next job then touched, if only to count a reference,
was copied, a third of a second of kernel time per job at 10,000 cases. A report reads only the
run folder, so one helper, forked when the sweep opens (before any case is loaded), renders them
all: in order, each with what the ones before it left (the rows and scores of lines they read,
:data:`~runner.reports.cases.FRAGMENTS`, and the passages cache), its templates compiled once.

The helper ignores Ctrl-C and stops when the sweep's end of the pipe closes. A report that fails
prints its traceback to stderr and is reported to the job that waits for it; it does not stop
the helper.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from pathlib import Path

_HOST: list[ReportHost] = []


def _serve(conn: Connection, main_end: Connection) -> None:
    """The helper's loop: render each requested run folder's report, reply with its error."""
    from runner.reports.cases import FRAGMENTS
    from runner.reports.run import prepare_templates, render_run_report

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main_end.close()  # the sweep's end, inherited: kept open, its death would go unseen
    prepare_templates()
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request[0] == "close":
            return
        _, run_dir, link = request
        error: str | None = None
        try:
            render_run_report(Path(run_dir), tracking_link=link, fragments=FRAGMENTS)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            error = f"{type(exc).__name__}: {exc}"
        try:
            conn.send((run_dir, error))
        except (BrokenPipeError, OSError):
            return


class ReportHost:
    """One forked helper that renders the reports of a sweep's jobs, in request order."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self._conn),
                                 name="ragcite-reports", daemon=True)
        self._proc.start()
        child.close()
        self._pending: list[str] = []  # run folders whose reply is still to come, in order
        self._outcome: dict[str, str | None] = {}  # run folder → error (None: rendered)
        self.owner = os.getpid()
        _HOST[:] = [self]

    def render(self, run_dir: Path, link: str | None = None) -> None:
        """Ask for `run_dir`'s report (with `link` to the tracked run in its header); returns
        at once (see :meth:`wait`).

        Raises:
            RagciteError: The helper is gone.
        """
        try:
            self._conn.send(("render", str(run_dir), link))
        except (BrokenPipeError, OSError):
            self._dead()
        self._pending.append(str(run_dir))

    def _dead(self) -> None:
        from runner.errors import RagciteError

        self._pending.clear()
        self._proc.join(timeout=5)
        raise RagciteError(f"the report process stopped (exit code {self._proc.exitcode}; "
                           "its error is printed above)")

    def wait(self, run_dir: Path) -> None:
        """Wait until `run_dir`'s report is rendered.

        Raises:
            RagciteError: It failed (its traceback is on stderr), or the helper is gone.
        """
        from runner.errors import RagciteError

        key = str(run_dir)
        while key not in self._outcome and key in self._pending:
            try:
                done, error = self._conn.recv()
            except (EOFError, OSError):
                self._dead()
            self._pending.remove(done)
            self._outcome[done] = error
        if key not in self._outcome:
            raise RagciteError(f"the HTML report of {run_dir} was never requested")
        error = self._outcome.pop(key)
        if error is not None:
            raise RagciteError(f"the HTML report of {run_dir} failed ({error}; its traceback "
                               "is printed above)")

    def close(self) -> None:
        """Stop the helper once the reports asked for are rendered; never raises."""
        _HOST.clear()
        with contextlib.suppress(OSError):
            self._conn.send(("close",))
        self._conn.close()
        self._proc.join(timeout=600)
        if self._proc.is_alive():  # pragma: no cover - a hung report
            self._proc.kill()
            self._proc.join()


def active_host() -> ReportHost | None:
    """The :class:`ReportHost` of the sweep open in this very process, if any (a forked child
    inherits the object, not the right to use it)."""
    return _HOST[0] if _HOST and _HOST[0].owner == os.getpid() else None

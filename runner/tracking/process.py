"""A tracker run in a forked helper process, so that opening it overlaps with loading the data.

Importing MLflow and opening its store take about 3 s, all of it Python code that holds the GIL
(a thread does not help: the import then crawls beside the loading). A single ``ragcite`` run
therefore forks one helper process at its start; the helper builds the real tracker
(:class:`runner.tracking.mlflow.MlflowTracker`), opens the run and logs the results, while the
job itself loads and scores the cases on the other core. The job waits for the helper (and sees
its errors, word for word) in :meth:`TrackerProcess.ready`, which the pipeline calls after
loading and before the first model call, and in every later call.

The helper is only used where it pays and is safe (:func:`use_helper`): on Linux (``fork``), in
a process with a single thread, when MLflow is not imported yet. A sweep's jobs in the main
process already have MLflow (the sweep's parent run opened it), and forking a process whose
threads may hold locks (a Ray worker) is not safe; those track in process, as before.

The helper ignores Ctrl-C: the job decides how its run ends (``FAILED``). When the job dies
without ending the run, the helper sees its end of the pipe close and ends the run ``KILLED``.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import signal
import sys
import threading
from collections.abc import Callable, Collection
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from runner.tracking.base import Tracker

log = logging.getLogger("ragcite")

_OK, _ERROR = "ok", "error"


def use_helper() -> bool:
    """True when a tracker should run in a :class:`TrackerProcess` (see the module doc)."""
    return (sys.platform.startswith("linux") and "mlflow" not in sys.modules
            and threading.active_count() == 1)


def _portable(exc: BaseException) -> BaseException:
    """`exc` itself when it pickles, else a RagciteError with its type and message."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        from runner.pipeline import RagciteError

        return RagciteError(f"{type(exc).__name__}: {exc}")


def _reply(conn: Connection, message: tuple[str, BaseException | None, str | None]) -> bool:
    """Send one reply to the job; False when the job is gone (its end of the pipe closed)."""
    try:
        conn.send(message)
    except (BrokenPipeError, OSError):
        return False
    return True


def _serve(factory: Callable[[], Tracker], conn: Connection, job_end: Connection) -> None:
    """The helper's loop: build the tracker, then run each call the job sends, in order.

    When the job is gone without ending its run (its end of the pipe closed), the run is ended
    ``KILLED``.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    job_end.close()  # the job's end, inherited: kept open, the job's death would go unseen
    tracker: Tracker | None = None
    ended = False
    reply: tuple[str, BaseException | None, str | None]
    try:
        tracker = factory()
        reply = (_OK, None, tracker.link)
    except BaseException as exc:
        reply = (_ERROR, _portable(exc), None)
    while _reply(conn, reply):
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            break
        if method == "close":
            return
        if tracker is None:  # its construction failed; the job raised that error
            reply = ((_OK, None, None) if method == "end" else
                     (_ERROR, RuntimeError("the tracker could not be built"), None))
            continue
        try:
            getattr(tracker, method)(*args)
            ended = ended or method == "end"
            reply = (_OK, None, tracker.link)
        except BaseException as exc:
            reply = (_ERROR, _portable(exc), tracker.link)
    if tracker is not None and not ended:
        tracker.end("KILLED")


class TrackerProcess:
    """The :class:`~runner.tracking.base.Tracker` protocol, served by a forked helper process.

    Args:
        factory: Builds the real tracker; called in the helper (it may raise, e.g. an
            unreachable store: the error is raised again by :meth:`ready`).

    Calls that only send (the construction, :meth:`start`) return at once; :meth:`ready`
    waits for them. :meth:`log_results` and :meth:`log_file` wait for their own outcome.
    """

    def __init__(self, factory: Callable[[], Tracker]) -> None:
        ctx = multiprocessing.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(factory, child, self._conn),
                                 name="ragcite-tracker", daemon=True)
        self._proc.start()
        child.close()
        self._pending = 1  # the construction's reply
        self._closed = False
        self.link: str | None = None

    def _send(self, method: str, *args: Any) -> None:
        try:
            self._conn.send((method, args))
        except (BrokenPipeError, OSError):
            self._dead()
        self._pending += 1

    def _dead(self) -> None:
        from runner.pipeline import RagciteError

        self._proc.join(timeout=5)
        raise RagciteError(f"tracking: the tracker process stopped (exit code "
                           f"{self._proc.exitcode}; its error is printed above)")

    def _collect(self) -> None:
        """Wait for every outstanding reply; raise the first error among them."""
        first: BaseException | None = None
        while self._pending:
            try:
                status, exc, link = self._conn.recv()
            except (EOFError, OSError):
                self._pending = 0
                self._dead()
            self._pending -= 1
            if link is not None:
                self.link = link
            if status == _ERROR and first is None:
                first = exc
        if first is not None:
            raise first

    def start(self, names: dict[str, str], run_dir: Path) -> None:
        """Ask the helper to open the run; returns at once (see :meth:`ready`)."""
        self._send("start", names, run_dir)

    def ready(self) -> None:
        """Wait until the tracker is built and its run open; raise their error, if any."""
        self._collect()

    def log_results(self, run_dir: Path, skip: Collection[str] = ()) -> None:
        """Log the results files (in the helper) and wait for it."""
        self._send("log_results", run_dir, tuple(skip))
        self._collect()

    def log_file(self, path: Path) -> None:
        """Log one more file (in the helper) and wait for it."""
        self._send("log_file", path)
        self._collect()

    def end(self, status: str) -> None:
        """Close the run and stop the helper; never raises."""
        if self._closed:
            return
        self._closed = True
        try:
            self._send("end", status)
            self._collect()
        except BaseException as exc:  # the tracker's own end() never raises
            log.error("ragcite: tracking: could not close the run as %s: %s", status, exc)
        with contextlib.suppress(OSError):  # BrokenPipeError: the helper is gone already
            self._conn.send(("close", ()))
        self._conn.close()
        self._proc.join(timeout=30)
        if self._proc.is_alive():  # pragma: no cover - a hung store
            self._proc.kill()
            self._proc.join()

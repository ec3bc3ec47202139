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

import atexit
import contextlib
import logging
import multiprocessing
import os
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
        from runner.errors import RagciteError

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
        from runner.errors import RagciteError

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

    def log_results(self, run_dir: Path, skip: Collection[str] = (), wait: bool = True) -> None:
        """Log the results files (in the helper); wait for it unless `wait` is False."""
        self._send("log_results", run_dir, tuple(skip))
        if wait:
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


# --- A sweep's trackers, all in one helper ------------------------------------------------------

_HOST: list[TrackerHost] = []


@atexit.register
def _abandon_host() -> None:
    """At exit without :meth:`TrackerHost.end_sweep` (Ctrl-C, a crash in Python): close the
    pipe so the host ends the open runs ``KILLED``, and give it time to do so."""
    host = active_host()
    if host is not None:
        host.abandon()


def active_host() -> TrackerHost | None:
    """The :class:`TrackerHost` of the sweep open in this very process, if any (a forked child
    inherits the object, not the right to use it)."""
    return _HOST[0] if _HOST and _HOST[0].owner == os.getpid() else None


def _host_serve(open_sweep: Callable[[], None], build: Callable[[dict[str, Any]], Tracker],
                close_sweep: Callable[[dict[str, Any]], None], on_orphan: Callable[[], None],
                conn: Connection, main_end: Connection) -> None:
    """The host's loop: open the sweep's parent run, then serve the jobs' trackers.

    Requests: ``("new", tid, cfg)`` builds a job's tracker; ``("call", tid, method, args)``
    calls it; ``("end_sweep", summary)`` closes the parent run; ``("close",)`` stops. Each gets
    one reply, in order. When the main process is gone without closing, every open job run
    ends ``KILLED`` and so does the parent run.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main_end.close()
    trackers: dict[int, Tracker] = {}
    open_runs: set[int] = set()
    reply: tuple[str, BaseException | None, str | None]
    try:
        open_sweep()
        reply = (_OK, None, None)
    except BaseException as exc:
        reply = (_ERROR, _portable(exc), None)
    while _reply(conn, reply):
        try:
            request = conn.recv()
        except (EOFError, OSError):
            break
        kind = request[0]
        if kind == "close":
            return
        try:
            if kind == "new":
                tid, cfg = request[1], request[2]
                trackers[tid] = build(cfg)
                reply = (_OK, None, trackers[tid].link)
            elif kind == "call":
                tid, method, args = request[1], request[2], request[3]
                tracker = trackers.get(tid)
                if tracker is None:  # its construction failed; the job raised that error
                    reply = ((_OK, None, None) if method == "end" else
                             (_ERROR, RuntimeError("the tracker could not be built"), None))
                    continue
                if method == "start":
                    open_runs.add(tid)
                getattr(tracker, method)(*args)
                if method == "end":
                    open_runs.discard(tid)
                    del trackers[tid]
                reply = (_OK, None, tracker.link)
            elif kind == "end_sweep":
                close_sweep(request[1])
                reply = (_OK, None, None)
            else:  # pragma: no cover - a programming error
                reply = (_ERROR, RuntimeError(f"unknown request {kind!r}"), None)
        except BaseException as exc:
            reply = (_ERROR, _portable(exc), None)
    for tid in open_runs:
        with contextlib.suppress(Exception):
            trackers[tid].end("KILLED")
    on_orphan()


class TrackerHost:
    """One forked helper that opens a sweep's parent run and serves every job's tracker.

    The sweep's own process (basic launcher) then never imports MLflow: the helper imports it,
    opens the store and the parent run while Hydra prepares the jobs and the first job loads its
    cases, and logs each job's results while the main process goes on. Replies come back in
    request order; an error belongs to the tracker whose request raised it and is raised by
    that tracker's next waiting call.

    Args:
        open_sweep: Opens the parent run (in the helper); its error is raised by the first
            job's :meth:`HostedTracker.ready`.
        build: Builds a job's tracker from the job's plain config (in the helper).
        close_sweep: Closes the parent run with the sweep summary (in the helper).
        on_orphan: Called in the helper when the main process died without closing.
    """

    def __init__(self, open_sweep: Callable[[], None],
                 build: Callable[[dict[str, Any]], Tracker],
                 close_sweep: Callable[[dict[str, Any]], None],
                 on_orphan: Callable[[], None]) -> None:
        ctx = multiprocessing.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_host_serve,
                                 args=(open_sweep, build, close_sweep, on_orphan, child,
                                       self._conn),
                                 name="ragcite-tracker", daemon=True)
        self._proc.start()
        child.close()
        # Whose reply comes next, and to what: tracker id (0 is the host itself) and method.
        self._pending: list[tuple[int, str]] = [(0, "open")]
        self._proven = False  # a job's run opened: the store takes the sweep's runs
        self._errors: dict[int, BaseException] = {}
        self._links: dict[int, str] = {}
        self._next = 1
        self._closed = False
        self.owner = os.getpid()
        _HOST[:] = [self]

    def _send(self, tid: int, request: tuple[Any, ...]) -> None:
        try:
            self._conn.send(request)
        except (BrokenPipeError, OSError):
            self._dead()
        self._pending.append((tid, str(request[2]) if request[0] == "call" else request[0]))

    def _dead(self) -> None:
        from runner.errors import RagciteError

        self._proc.join(timeout=5)
        raise RagciteError(f"tracking: the tracker process stopped (exit code "
                           f"{self._proc.exitcode}; its error is printed above)")

    def _collect(self) -> None:
        """Receive every outstanding reply and file its outcome under its tracker."""
        while self._pending:
            self._receive()

    def _receive(self) -> None:
        """Receive the next reply and file its outcome under its tracker."""
        try:
            status, exc, link = self._conn.recv()
        except (EOFError, OSError):
            self._pending.clear()
            self._dead()
        tid, method = self._pending.pop(0)
        if link is not None:
            self._links[tid] = link
        if status == _ERROR and exc is not None and tid not in self._errors:
            self._errors[tid] = exc
        if method == "start" and status == _OK and 0 not in self._errors:
            self._proven = True  # the parent run and a job's run are open

    def started(self, tid: int) -> None:
        """Receive replies until tracker `tid`'s run is open (or failed to open); the outcome
        is filed, not raised."""
        while (tid, "start") in self._pending:
            self._receive()

    @property
    def proven(self) -> bool:
        """True once a job's run of this sweep has been opened: the store takes runs."""
        return self._proven

    def wait(self, tid: int) -> None:
        """Wait for every outstanding reply; raise the first error of `tid`, if any."""
        self._collect()
        exc = self._errors.pop(tid, None)
        if exc is not None:
            raise exc

    def link(self, tid: int) -> str | None:
        """The link the helper last gave for `tid`."""
        return self._links.get(tid)

    def set_link(self, tid: int, value: str | None) -> None:
        """Set the link of `tid` (as a tracker's ``link`` attribute may be set)."""
        if value is None:
            self._links.pop(tid, None)
        else:
            self._links[tid] = value

    def opened(self) -> None:
        """Wait until the parent run is open; raise its error (as a RagciteError) if any."""
        from runner.errors import RagciteError

        self._collect()
        exc = self._errors.get(0)
        if isinstance(exc, SystemExit):  # the helper already logged why
            raise RagciteError("tracking: the sweep's parent run could not be opened (see "
                               "the error above)")
        if exc is not None:
            raise exc

    def tracker(self, cfg: dict[str, Any]) -> HostedTracker:
        """A new job's tracker, built in the helper from the job's plain config."""
        tid = self._next
        self._next += 1
        self._send(tid, ("new", tid, cfg))
        return HostedTracker(self, tid)

    def call(self, tid: int, method: str, *args: Any) -> None:
        """Send one call of tracker `tid` (its reply is collected by the next wait)."""
        self._send(tid, ("call", tid, method, args))

    def abandon(self) -> None:
        """Close the pipe without closing the sweep: the helper ends the open runs and the
        parent ``KILLED``; wait (up to 30 s) for it to do so."""
        self._closed = True
        _HOST.clear()
        self._conn.close()
        self._proc.join(timeout=30)

    def end_sweep(self, summary: dict[str, Any]) -> None:
        """Close the parent run with the summary, then stop the helper; never raises."""
        if self._closed:
            return
        self._closed = True
        _HOST.clear()
        try:
            self._send(0, ("end_sweep", summary))
            self._collect()
            exc = self._errors.pop(0, None)
            if exc is not None and not isinstance(exc, SystemExit):
                log.error("ragcite: tracking: could not close the sweep run: %s", exc)
        except BaseException as exc:
            log.error("ragcite: tracking: could not close the sweep run: %s", exc)
        with contextlib.suppress(OSError):
            self._conn.send(("close",))
        self._conn.close()
        self._proc.join(timeout=60)
        if self._proc.is_alive():  # pragma: no cover - a hung store
            self._proc.kill()
            self._proc.join()


class HostedTracker:
    """A job's :class:`~runner.tracking.base.Tracker`, served by the sweep's
    :class:`TrackerHost`. Waiting calls raise this tracker's own errors only."""

    def __init__(self, host: TrackerHost, tid: int) -> None:
        self._host = host
        self._tid = tid
        self._closed = False

    @property
    def link(self) -> str | None:
        """The run's link in the tracking UI (waits for the run to be opened)."""
        self._host.started(self._tid)
        return self._host.link(self._tid)

    @link.setter
    def link(self, value: str | None) -> None:
        self._host.set_link(self._tid, value)

    def start(self, names: dict[str, str], run_dir: Path) -> None:
        """Ask the helper to open the run; returns at once (see :meth:`ready`)."""
        self._host.call(self._tid, "start", names, run_dir)

    def ready(self) -> None:
        """Wait until the parent run and this run are open; raise their error, if any.

        Once an earlier job's run of the sweep has opened, the store is known to take runs and
        this returns at once: the helper may still be logging that job's results, and this
        run's opening error, if any, is raised by this tracker's next waiting call.
        """
        if self._host.proven:
            return
        self._host.opened()
        self._host.wait(self._tid)

    def log_results(self, run_dir: Path, skip: Collection[str] = (), wait: bool = True) -> None:
        """Log the results files (in the helper); wait for it unless `wait` is False (its
        error is then raised by this tracker's next waiting call)."""
        self._host.call(self._tid, "log_results", run_dir, tuple(skip))
        if wait:
            self._host.wait(self._tid)

    def log_file(self, path: Path) -> None:
        """Log one more file (in the helper) and wait for it."""
        self._host.call(self._tid, "log_file", path)
        self._host.wait(self._tid)

    def end(self, status: str) -> None:
        """Close the run; never raises."""
        if self._closed:
            return
        self._closed = True
        try:
            self._host.call(self._tid, "end", status)
            self._host.wait(self._tid)
        except BaseException as exc:  # the tracker's own end() never raises
            log.error("ragcite: tracking: could not close the run as %s: %s", status, exc)

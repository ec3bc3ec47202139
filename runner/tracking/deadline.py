"""Deadlines on the calls of a synchronous client (MLflow's): a call runs on a thread of its own
and is waited for at most so long. MLflow's HTTP timeout bounds each read of a reply, not the
call, so a tracking server that stops answering (SIGSTOP) holds a call for its timeout times
its retries, and one that trickles holds it for ever. A late call is left to end alone, on a
daemon thread: the process never waits for it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


def within(seconds: float, call: Callable[[], Any], late: Callable[[], Exception]) -> Any:
    """``call()``, waited for at most `seconds`.

    Raises:
        Exception: ``late()`` when `call` has not returned in time, else whatever it raised.
    """
    future: Future[Any] = Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:  # handed to the caller
            future.set_exception(exc)

    thread = threading.Thread(target=run, name="ragcite-deadline", daemon=True)
    thread.start()
    thread.join(seconds)
    if not future.done():
        raise late()
    return future.result()


class Bounded:
    """`client` with each method call under :func:`within` `seconds`; ``late(name)`` is the
    exception of a call of method `name` that is late."""

    def __init__(self, client: Any, seconds: float, late: Callable[[str], Exception]) -> None:
        self._client, self._seconds, self._late = client, seconds, late

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        return attr if not callable(attr) else lambda *args, **kwargs: within(
            self._seconds, lambda: attr(*args, **kwargs), lambda: self._late(name))

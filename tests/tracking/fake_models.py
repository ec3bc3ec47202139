"""Callables for `model=python` in the tracking tests (imported by the CLI subprocess)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def stored(case: Any) -> Any:
    """Answer with the response stored in the case (the seed examples carry one)."""
    return case.response or {"citations": []}


def marked(case: Any) -> Any:
    """Like :func:`stored`, but first leaves a marker file: proof that the model was called."""
    marker = os.environ.get("RAGCITE_TEST_MARKER")
    if marker:
        Path(marker).write_text("called\n", encoding="utf-8")
    return stored(case)


async def terminated(case: Any) -> Any:
    """Send this process SIGTERM from inside the model's task, then take a minute to answer:
    the signal arrives while a task runs, not while the event loop waits."""
    import asyncio
    import signal

    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.sleep(60)
    return stored(case)


async def held(case: Any) -> Any:
    """Leave the marker file (:func:`marked`), then take a minute to answer: a run to stop."""
    import asyncio

    marked(case)
    await asyncio.sleep(60)
    return stored(case)

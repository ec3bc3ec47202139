"""Pause the cyclic garbage collector around allocation-heavy, cycle-free hot loops.

Scoring creates millions of small containers (n-gram sets, per-case lists and dicts) that are
never part of a reference cycle. With the collector running, every few hundred allocations
trigger a collection, and the occasional full collection walks every object in the process —
including all loaded cases — so scoring 100,000 cases spends seconds in the collector. Pausing it
for a bounded region (one matcher call, one batch of cases) and restoring the previous state
afterwards avoids that; any cyclic garbage made meanwhile is collected once it is re-enabled.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector inside the block; restore its previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

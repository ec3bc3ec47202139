"""Similarities of whole batches, kept in memory for the jobs that follow in the same process.

The jobs of a threshold sweep score the same pairs with the same matcher, and a similarity does
not depend on the threshold. Matchers that compute faster than the on-disk cache can look up
(``cacheable = False``, such as ``ngram``) skip that cache, so without this memo every job of a
sweep computed every similarity again. With it, the first job of a sweep computes them and the
jobs after it in the same process (Hydra's basic launcher runs them one after another) read them.

A batch is keyed by the matcher's cache namespace (its identity without the threshold) and a
digest of the batch's exact texts and pairs, so a hit is always the same computation. Worker
processes (:mod:`runner.parallel`) look up the memo they inherited and send what they computed
back with their results; the job adds it here for the next job's workers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from runner.scoring.batch import PreparedBatches

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""The memo's bound: arrays of about 32 million similarities (100,000 cases take 7 MB)."""


class SimilarityMemo:
    """Similarity arrays of whole batches, by key; the oldest leave first past `max_bytes`.

    Args:
        max_bytes: The most bytes of arrays kept.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._values: dict[bytes, np.ndarray] = {}
        self._bytes = 0

    @staticmethod
    def key(namespace: str, texts: Sequence[str], a: np.ndarray, b: np.ndarray) -> bytes:
        """The key of the pairs (texts[a[p]], texts[b[p]]) under a matcher's `namespace`."""
        h = hashlib.blake2b(namespace.encode("utf-8"), digest_size=20)
        # Every part is preceded by its length, so the input is named exactly.
        h.update(len(texts).to_bytes(8, "little"))
        for text in texts:
            data = text.encode("utf-8", "surrogatepass")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        h.update(len(a).to_bytes(8, "little"))
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(b, dtype=np.int64).tobytes())
        return h.digest()

    def get(self, key: bytes) -> np.ndarray | None:
        """The similarities stored under `key` (read-only), or None."""
        return self._values.get(key)

    def put(self, key: bytes, values: np.ndarray) -> None:
        """Store a copy of `values` (read-only) under `key`."""
        if key in self._values:
            return
        stored = np.array(values, dtype=np.float64)
        stored.setflags(write=False)
        if stored.nbytes > self.max_bytes:
            return
        self._values[key] = stored
        self._bytes += stored.nbytes
        while self._bytes > self.max_bytes:
            oldest = next(iter(self._values))
            self._bytes -= self._values.pop(oldest).nbytes

    def update(self, entries: Mapping[bytes, np.ndarray]) -> None:
        """Store every entry (arrays a worker process computed)."""
        for key, values in entries.items():
            self.put(key, values)

    def keys(self) -> set[bytes]:
        """The keys stored now."""
        return set(self._values)

    def entries_except(self, known: set[bytes]) -> dict[bytes, np.ndarray]:
        """The stored entries whose key is not in `known` (what a worker sends back)."""
        return {k: v for k, v in self._values.items() if k not in known}

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        """Drop everything."""
        self._values.clear()
        self._bytes = 0


MEMO = SimilarityMemo()
"""This process's memo, shared by its jobs and inherited by its worker processes."""


DEFAULT_MAX_LINE_BYTES = 128 * 1024 * 1024
"""The line memo's bound: the lines of about 35,000 cases of 3 references and 3 citations."""


class LineMemo:
    """The ``cases.jsonl`` lines of the previous job, by case position, for the next job.

    A case's line is computed from the case, its response, its similarities and match
    decisions, and the scoring options. The jobs of a threshold sweep share the cases, the
    responses and the similarities, and most cases keep their decisions from one threshold to
    the next, so most lines come out byte for byte the same: building a record (its lists,
    dicts and explanations) and writing it as JSON is most of a job's scoring time once the
    similarities come from the :class:`SimilarityMemo`. A line is reused only for an equal
    case, response and decisions under the same options (the `namespace` of :meth:`begin`).

    Args:
        max_bytes: The most bytes of lines kept (the first cases of a bigger run).
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.namespace: str | None = None
        self._entries: dict[int, tuple[Any, Any, bytes, bytes]] = {}
        self._bytes = 0
        self._dropped = 0  # lines of this job not kept (over max_bytes)
        self._finished = False  # this job offered every line (finish)

    def begin(self, namespace: str) -> bool:
        """Start a job scored under `namespace` (its dataset, matcher and options); a job
        under another namespace starts empty.

        Returns:
            True when the previous job under the same namespace offered every case's line
            (:meth:`finish`) and all were kept: its similarities and lines are all here for
            this job to read (the caller then scores in its own process).
        """
        warm = namespace == self.namespace and self._finished and not self._dropped
        if namespace != self.namespace:
            self.clear()
            self.namespace = namespace
        self._dropped = 0
        self._finished = False
        return warm

    def finish(self) -> None:
        """Mark the job begun last as scored to the end (every case's line offered)."""
        self._finished = True

    def line(self, pos: int, case: Any, response: Any, decisions: bytes) -> bytes | None:
        """The stored line of case `pos` if it was built from equal inputs, else None."""
        entry = self._entries.get(pos)
        if entry is None or entry[2] != decisions:
            return None
        if not (entry[0] is case or entry[0] == case):
            return None
        if not (entry[1] is response or entry[1] == response):
            return None
        return entry[3]

    def store(self, start: int, cases: Sequence[Any], responses: Sequence[Any],
              decisions: Sequence[bytes | None], lines: Sequence[bytes]) -> None:
        """Keep the lines of cases ``start, start + 1, ...`` (failed cases, whose decisions are
        None, are not kept) while within `max_bytes`."""
        for i, (case, response, dec, line) in enumerate(zip(cases, responses, decisions,
                                                            lines)):
            pos = start + i
            old = self._entries.pop(pos, None)
            if old is not None:
                self._bytes -= len(old[3])
            if dec is None:
                continue
            if self._bytes + len(line) > self.max_bytes:
                self._dropped += 1
                continue
            self._entries[pos] = (case, response, dec, line)
            self._bytes += len(line)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop everything."""
        self._entries.clear()
        self._bytes = 0
        self._dropped = 0
        self._finished = False
        self.namespace = None


LINES = LineMemo()
"""This process's line memo, shared by its jobs and inherited by its worker processes."""


PREPARED = PreparedBatches()
"""This process's threshold-free parts of batches scored here (see :class:`PreparedBatches
<runner.scoring.batch.PreparedBatches>`), for its next job scored here."""

"""A content-addressed on-disk cache shared by processes (responses and similarities).

Values live in one SQLite database (WAL mode) under ``cache.dir``. Every entry sits in a
namespace derived from the full identity of what produced it — the matcher's settings without
its threshold, or the adapter's settings plus the dataset digest — so a changed setting or
dataset can never return a stale value. A per-namespace file lock makes concurrent jobs of a
sweep compute each value once: the first job computes, the others wait and then read.
:class:`ResultStore` keeps the results of an API component's calls as they complete.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

CACHE_VERSION = 1


def digest(obj: Any) -> str:
    """Stable SHA-256 hex digest of a JSON-serialisable object."""
    data = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def text_key(*texts: str) -> str:
    """Digest of a tuple of texts (NUL-separated)."""
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    """Counters for one run: what was read from the cache and what had to be computed."""

    hits: dict[str, int] = field(default_factory=dict)
    computed: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, hits: int, computed: int) -> None:
        """Count `hits` reads and `computed` new values of `kind`."""
        self.hits[kind] = self.hits.get(kind, 0) + hits
        self.computed[kind] = self.computed.get(kind, 0) + computed

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counters."""
        return {"hits": dict(self.hits), "computed": dict(self.computed)}


class DiskCache:
    """Key/value store of JSON values by (namespace, key).

    Args:
        directory: Where the database and lock files live (created if missing).
    """

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "locks").mkdir(exist_ok=True)
        self.path = self.dir / "cache.sqlite"
        self._conn = sqlite3.connect(self.path, timeout=120, isolation_level=None)
        # The parallel jobs of a sweep open the same cache at once. Switching to WAL and
        # creating the table upgrade a read to a write, which SQLite refuses at once ("database
        # is locked", without waiting out the timeout) when another process wrote in between:
        # the set-up runs under the inter-process lock of `lock`.
        with self.lock("setup"), self._storage():
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS kv (ns TEXT NOT NULL, key TEXT NOT NULL, "
                "value TEXT NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID")
        self._conn.execute("PRAGMA synchronous=NORMAL")

    @contextlib.contextmanager
    def _storage(self) -> Iterator[None]:
        """SQLite's "disk is full" and "readonly database" as the OSError they stand for,
        naming the database (runner.config.folders.write_problem says what is kept)."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            code = errno.ENOSPC if "disk is full" in str(exc) else \
                errno.EROFS if "readonly database" in str(exc) else None
            if code is None:
                raise
            raise OSError(code, os.strerror(code), str(self.path)) from None

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    def lock(self, namespace: str) -> FileLock:
        """An exclusive inter-process lock on one namespace, held inside ``with``."""
        return FileLock(self.dir / "locks" / f"{namespace}.lock")

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, Any]:
        """The stored values of those `keys` that are present."""
        out: dict[str, Any] = {}
        for start in range(0, len(keys), 900):
            chunk = list(keys[start:start + 900])
            out.update((key, json.loads(value)) for key, value in self._conn.execute(
                f"SELECT key, value FROM kv WHERE ns = ? AND key IN ({','.join('?' * len(chunk))})",
                [namespace, *chunk]))
        return out

    def put_many(self, namespace: str, items: Iterable[tuple[str, Any]]) -> None:
        """Store values (one transaction)."""
        rows = [(namespace, k, json.dumps(v)) for k, v in items]
        if not rows:
            return
        # The connection as a context manager commits the transaction, or rolls it back on
        # any exception (a failed commit too) while one is open.
        with self._storage(), self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", rows)

    def clear(self) -> None:
        """Delete every entry."""
        self._conn.execute("DELETE FROM kv")
        self._conn.execute("VACUUM")


def request_key(*parts: Any) -> str:
    """The cache key of one call: a digest of everything that determines its reply."""
    return digest({"v": CACHE_VERSION, "call": parts})


@dataclass
class ResultStore:
    """Results of individual calls, persisted as they complete.

    Backed by the run's :class:`~runner.api.cache.DiskCache` (``cache.dir``) when a folder is given,
    else by the `memory` dict of the component that owns it (so one object still never pays for
    a call twice). Open it in the thread that uses it (SQLite connections are per thread):
    ``with ResultStore(...) as store``.

    Args:
        directory: The cache folder, or None for memory only.
        namespace: The namespace of this kind of result.
        memory: The dict used when `directory` is None.
        flush_every: Write after this many new results...
        flush_seconds: ...or when this long has passed since the last write.
    """

    directory: str | Path | None
    namespace: str
    memory: dict[tuple[str, str], Any] = field(default_factory=dict)
    flush_every: int = 64
    flush_seconds: float = 1.0
    _disk: DiskCache | None = field(default=None, init=False)
    _pending: list[tuple[str, Any]] = field(default_factory=list, init=False)
    _last: float = field(default_factory=time.monotonic, init=False)

    def __enter__(self) -> ResultStore:
        if self.directory is not None:
            self._disk = DiskCache(self.directory)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.flush()
        finally:
            if self._disk is not None:
                self._disk.close()
                self._disk = None

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The stored results of those keys that have one."""
        keys = list(dict.fromkeys(keys))
        if self._disk is not None:
            return self._disk.get_many(self.namespace, keys)
        return {k: self.memory[(self.namespace, k)] for k in keys
                if (self.namespace, k) in self.memory}

    def put(self, key: str, value: Any) -> None:
        """Store one result; written to disk in small groups (see the class doc)."""
        if self._disk is None:
            self.memory[(self.namespace, key)] = value
            return
        self._pending.append((key, value))
        if (len(self._pending) >= self.flush_every
                or time.monotonic() - self._last >= self.flush_seconds):
            self.flush()

    def flush(self) -> None:
        """Write the pending results."""
        if self._disk is not None and self._pending:
            self._disk.put_many(self.namespace, self._pending)
        self._pending = []
        self._last = time.monotonic()

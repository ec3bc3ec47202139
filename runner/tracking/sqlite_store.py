"""A local sqlite MLflow store that no process ever sees half-made.

MLflow creates and migrates a new sqlite store's schema in many steps when a client first
opens it: a kill or a full disk between two steps leaves a file that every later open refuses
and ``mlflow db upgrade`` cannot mend. So under an inter-process lock (``<store>.lock``) a
missing store is made whole as ``<store>.new`` in the same folder and then renamed into place
(atomic), and an existing one is read (never migrated) and refused in one line unless it is a
whole store of this MLflow's schema.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from runner.tracking.mlflow_store import TrackingError, one_line, quiet_migrations

# Seconds to wait for another process creating (migrating) the same sqlite store.
STORE_LOCK_TIMEOUT = 300.0


def sqlite_file(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for any other store)."""
    if not uri.lower().startswith("sqlite:///"):
        return None
    path = urllib.parse.urlsplit(uri).path[1:]  # what follows sqlite:///, as SQLAlchemy reads it
    return Path(path) if path and path != ":memory:" else None


@contextmanager
def store_lock(uri: str, timeout: float = STORE_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold ``<store>.lock`` while opening a local sqlite store, which is first created whole
    when missing, or checked when present (nothing for other stores).

    Raises:
        TrackingError: Another process held the lock for `timeout` seconds, the store could
            not be created, or the store found is not whole.
    """
    path = sqlite_file(uri)
    if path is None:
        yield
        return
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(f"{path}.lock", timeout=timeout):
            check(path) if os.path.lexists(path) else create(path)
            yield
    except Timeout:
        raise TrackingError(f"the MLflow store {path} stayed locked by another process for "
                            f"{timeout:g} s ({path}.lock)") from None


def create(path: Path) -> None:
    """Create the MLflow store `path`: its schema made in ``<path>.new``, then renamed.

    Raises:
        TrackingError: The schema could not be made (nothing of it is left).
    """
    from mlflow.store.db.utils import _initialize_tables, create_sqlalchemy_engine

    new = Path(f"{path}.new")
    parts = (new, Path(f"{new}-journal"))  # a process killed while making it left them
    for part in parts:
        part.unlink(missing_ok=True)
    quiet_migrations()
    engine = create_sqlalchemy_engine(f"sqlite:///{new}")
    try:
        _initialize_tables(engine)
    except Exception as exc:
        engine.dispose()
        for part in parts:
            part.unlink(missing_ok=True)
        raise TrackingError(f"cannot create the MLflow store {path}: "
                            f"{one_line(getattr(exc, 'orig', None) or exc)}; nothing of it "
                            f"is kept") from None
    engine.dispose()
    os.replace(new, path)


def check(path: Path) -> None:
    """Refuse the store `path` unless it is a whole store of this MLflow's schema.

    Raises:
        TrackingError: It cannot be read as an MLflow store, or its schema is another one.
    """
    from mlflow.store.db.utils import _get_latest_schema_revision
    from mlflow.version import VERSION

    uri = f"{path.absolute().as_uri()}?mode=rw"  # read; a killed writer's journal is undone
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=60)) as db:
            found = db.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error as exc:
        raise TrackingError(f"the MLflow store {path} is damaged or not an MLflow store "
                            f"({one_line(exc)}); move it aside (ragcite deletes nothing) and "
                            f"run again to start a new one") from None
    head = _get_latest_schema_revision()
    if found != [(head,)]:
        raise TrackingError(
            f"the MLflow store {path} has schema {found[0][0] if found else 'none'}, not "
            f"{head} (MLflow {VERSION}): back it up and run 'mlflow db upgrade "
            f"sqlite:///{path}'; if that fails, move it aside (ragcite deletes nothing) and "
            f"run again to start a new one")

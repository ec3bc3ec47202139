"""Rows of damaged local MLflow stores and a full disk while the store is made.

A store that is found damaged (not a database, empty, a folder, half-migrated) stops the run
with one line saying what to do, and is left byte for byte as it was. A new store that cannot be
made whole (a full disk) leaves nothing of itself, and the next run, once there is room,
makes it (runner/tracking/sqlite_store.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, check, ids, run_row, write_files
from tests.calibration.conftest import FIXTURE
from tests.conftest import run_cli

TRACKED = ["tracking=mlflow"]
HINT = "(set tracking.required=false to run without it, or tracking=none)"
STORE = "{tmp}/outputs/mlflow.db"


def damaged(why: str, path: str = STORE) -> str:
    return (f"ragcite: error: tracking: the MLflow store {path} is damaged or not an MLflow "
            f"store ({why}); move it aside (ragcite deletes nothing) and run again to start a "
            f"new one {HINT}")


GARBAGE = {"outputs/mlflow.db": b"SQLite format 2\x00 but not really\n"}
ROWS = [
    Row("the store is not a database", TRACKED, 2, damaged("file is not a database"), GARBAGE),
    Row("sweep: the store is not a database", ["-m", "matcher=substring,ngram", *TRACKED], 2,
        damaged("file is not a database"), GARBAGE),
    Row("the store is an empty file", TRACKED, 2, damaged("no such table: alembic_version"),
        {"outputs/mlflow.db": b""}),
    Row("the store is a folder", TRACKED, 2, damaged("unable to open database file"),
        {"outputs/mlflow.db/runs.txt": b"kept\n"}),
    Row("tracking_uri: a store that is not a database",
        ["tracking=mlflow", "tracking.tracking_uri=sqlite:///{tmp}/my.db"], 2,
        damaged("file is not a database", "{tmp}/my.db"), {"my.db": b"\x00" * 4096}),
]
CALIBRATE_ROWS = [
    Row("calibrate: the store is not a database", [f"calibrate.labels={FIXTURE}", *TRACKED], 2,
        damaged("file is not a database"), GARBAGE),
]


def contents(root: Path) -> dict[str, bytes]:
    """Every file below `root` and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)
    for name, content in row.files.items():
        assert (tmp_path / name).read_bytes() == content, name


@pytest.mark.parametrize("row", CALIBRATE_ROWS, ids=ids(CALIBRATE_ROWS))
def test_calibrate_row(row: Row, tmp_path: Path) -> None:
    write_files(tmp_path, row.files)
    proc = run_cli(["tracking=none", "progress=false", *row.args], tmp_path,
                   module="runner.calibration.app", timeout=120)
    check(row, proc, tmp_path)
    for name, content in row.files.items():
        assert (tmp_path / name).read_bytes() == content, name
    assert not list(tmp_path.glob("**/calibration.json"))  # stopped before any work


def half_migrated(path: Path, revision: str) -> None:
    """A store whose migration stopped at `revision`, as a killed first run left it before."""
    from alembic import command
    from mlflow.store.db.utils import _get_alembic_config, create_sqlalchemy_engine
    from mlflow.store.tracking.dbmodels.initial_models import Base

    uri = f"sqlite:///{path}"
    engine = create_sqlalchemy_engine(uri)
    Base.metadata.create_all(engine)
    config = _get_alembic_config(uri)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    engine.dispose()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # in an old MLflow migration
def test_a_half_migrated_store_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    from mlflow.store.db.utils import _get_latest_schema_revision
    from mlflow.version import VERSION

    store = tmp_path / "outputs" / "mlflow.db"
    store.parent.mkdir()
    half_migrated(store, "27a6a02d2cf1")  # the 11th of MLflow's migrations
    before = store.read_bytes()
    row = Row("a half-migrated store", TRACKED, 2,
              f"ragcite: error: tracking: the MLflow store {store} has schema 27a6a02d2cf1, "
              f"not {_get_latest_schema_revision()} (MLflow {VERSION}): back it up and run "
              f"'mlflow db upgrade sqlite:///{store}'; if that fails, move it aside (ragcite "
              f"deletes nothing) and run again to start a new one {HINT}")
    run_row(row, tmp_path)
    assert store.read_bytes() == before
    assert sorted(os.listdir(store.parent)) == ["mlflow.db", "mlflow.db.lock", "runs"]


@pytest.fixture
def small_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 4 MB tmpfs at ``<tmp>/disk`` (skipped unless root and the mount works)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a small tmpfs needs root to mount")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
                           capture_output=True, text=True, check=False)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mount.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_while_the_store_is_made_leaves_nothing_of_it(
        tmp_path: Path, small_disk: Path) -> None:
    stat = os.statvfs(small_disk)
    filler = small_disk / "filler"
    # 300 kB free: room for the run's config files, not for the store's schema (~1 MB).
    filler.write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - 300 * 1024))
    args = [*TRACKED, "output_root={tmp}/disk/out"]
    run_row(Row("a full disk while the store is made", args, 2,
                "ragcite: error: tracking: cannot create the MLflow store "
                "{tmp}/disk/out/mlflow.db: database or disk is full; nothing of it is kept "
                f"{HINT}"), tmp_path)
    assert sorted(os.listdir(small_disk / "out")) == ["mlflow.db.lock", "runs"]
    filler.unlink()
    run_row(Row("the same once there is room", args, 0,
                "threshold 0.5: context R/P/F1 0.806/0.283/0.408  source R/P/F1 "
                "0.933/0.506/0.613  (means over 30 scored cases, 0 failed; 25 of 34 "
                "ground-truth passages matched; the system answered 30 of the dataset's 30 "
                "cases)"), tmp_path)
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{small_disk / 'out' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("ragcite").experiment_id])
    assert [r.info.status for r in runs] == ["FINISHED"]

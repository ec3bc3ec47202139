"""The two sides of ``ragcite-compare``: result folders, or MLflow runs whose results files are
downloaded and laid out as a result folder; read with :mod:`runner.results`.

A and B are named by what differs between them, read from the two runs' configs (a result
folder's ``config.yaml``, an MLflow run's params): ``system=loose_quotes`` vs
``system=wrong_passages``, ``matcher=ngram`` vs ``matcher=substring``. Each comparison writes to
a folder of its own, so no comparison overwrites another.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner import results
from runner.redact import mask_uri
from runner.scoring.paired import RunData
from runner.tracking import mlflow_store as store
from runner.tracking import sqlite_store
from runner.tracking.deadline import within
from runner.tracking.flatten import flatten_params
from runner.tracking.mlflow import read_config

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
PASSAGES_TAG = "ragcite.passages_run_id"
LOAD_TIMEOUT = 300.0
"""Seconds a lookup of one MLflow run may take, from the first request to the last file."""


class CompareError(Exception):
    """Bad input for a comparison (exit status 2)."""


def _read_folder(folder: Path, label: str, source: str, link: str | None = None,
                 params: dict[str, str] | None = None) -> RunData:
    """A result folder's ``metrics.json`` and its cases, paired by id, and its flat config;
    a local one (no MLflow `params`) only when its job finished (an MLflow run's results were
    logged after ``job.json``)."""
    try:
        several = [] if (folder / results.METRICS_FILE).exists() else [
            str(d.relative_to(folder)) for d in results.result_dirs(folder) if d != folder]
        if several:
            raise CompareError(f"{source}: this job decided several thresholds: compare one of "
                               f"its result folders ({', '.join(several)})")
        if params is None:
            results.require_complete(folder)
        metrics = results.read_result(folder)
        for path in (folder / results.CASES_FILE, results.passages_path(folder, metrics)):
            if not path.is_file():
                raise CompareError(f"{source}: no {path.name}: the per-case results are needed "
                                   "to pair cases")
        cases: dict[str, results.CaseResult] = {}
        for case in results.read_cases(folder):
            if case.id in cases:
                raise CompareError(f"{folder / results.CASES_FILE}: case id {case.id!r} occurs "
                                   "twice; cases are paired by id")
            cases[case.id] = case
    except (ValueError, OSError) as exc:
        raise CompareError(str(exc)) from None
    return RunData(label=label, source=source, metrics=metrics, cases=cases, link=link,
                   config=_flat_config(folder / results.CONFIG_FILE) if params is None else params)


def _flat_config(path: Path) -> dict[str, str]:
    """A result folder's ``config.yaml``, flat as an MLflow run's params are (secrets masked;
    {} when absent or unreadable)."""
    import yaml

    try:
        return flatten_params(read_config(path))
    except (OSError, ValueError, yaml.YAMLError):  # unreadable: named from their figures alone
        return {}


def _download(client: Any, run_id: str, name: str, target: Path, workdir: Path) -> None:
    """Download the run's first artifact called `name` (breadth-first, 3 levels) to `target`."""
    path, level = None, [None]
    try:
        for _ in range(3):
            infos = [info for folder in level for info in client.list_artifacts(run_id, folder)]
            path = next((i.path for i in infos
                         if not i.is_dir and i.path.rsplit("/", 1)[-1] == name), None)
            if path is not None:
                break
            level = [i.path for i in infos if i.is_dir]
    except Exception as exc:
        raise CompareError(f"MLflow run {run_id}: cannot list artifacts: {_text(exc)}") from None
    if path is None:
        raise CompareError(f"MLflow run {run_id} has no {name} artifact")
    fetched = workdir / "fetched" / run_id / name
    fetched.mkdir(parents=True, exist_ok=True)
    try:
        local = client.download_artifacts(run_id, path, str(fetched))
    except Exception as exc:
        raise CompareError(f"MLflow run {run_id}: cannot download {path}: {_text(exc)}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    Path(local).replace(target)


def _text(exc: BaseException) -> str:
    """An MLflow error on one line, without any URI password."""
    return mask_uri(f"{type(exc).__name__}: {store.one_line(exc)}")


def _download_run(client: Any, run_id: str, tracking_uri: str, workdir: Path) -> RunData:
    """An MLflow run's three results artifacts, laid out as a result folder under `workdir`
    (the passages where ``files.passages`` says, from the run its tag
    ``ragcite.passages_run_id`` names: a job's first threshold holds them for all)."""
    base = workdir / run_id
    dst = base / "result"
    try:
        run = client.get_run(run_id)
    except Exception as exc:
        raise CompareError(f"MLflow run {run_id} not found at {mask_uri(tracking_uri)}: "
                           f"{_text(exc)}") from None
    for name in (results.METRICS_FILE, results.CASES_FILE):
        _download(client, run_id, name, dst / name, base)
    try:
        passages = results.passages_path(dst, results.read_result(dst)).resolve()
    except (ValueError, OSError) as exc:
        raise CompareError(f"MLflow run {run_id}: {exc}") from None
    if not passages.is_relative_to(base.resolve()):
        raise CompareError(f"MLflow run {run_id}: its passages file is outside its folder")
    holder = run.data.tags.get(PASSAGES_TAG) or run_id
    _download(client, holder, results.PASSAGES_FILE, passages, base)
    link = store.run_link(tracking_uri, None, run.info.experiment_id, run_id)
    return _read_folder(dst, label=run.info.run_name or run_id[:8], source=f"mlflow run {run_id}",
                        link=link, params=dict(run.data.params or {}))


def load_run(spec: str, tracking_uri: str | None, workdir: Path,
             timeout: float = LOAD_TIMEOUT) -> RunData:
    """A run folder (or its ``metrics.json``), or an MLflow run id (``runs:/ID`` also works)
    from `tracking_uri` (else ``MLFLOW_TRACKING_URI``, else ``outputs/mlflow.db`` if present),
    downloaded within `timeout` seconds."""
    path = Path(spec)
    if path.is_file() and path.name == results.METRICS_FILE:
        path = path.parent
    if path.is_dir():
        return _read_folder(path, label=path.resolve().name, source=str(path))
    run_id = spec[len("runs:/"):].strip("/") if spec.startswith("runs:/") else spec
    if not _RUN_ID.match(run_id):
        raise CompareError(f"{spec}: neither a run folder nor an MLflow run id (32 hex digits)")
    default = Path("outputs") / "mlflow.db"
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or (
        f"sqlite:///{default.resolve()}" if default.is_file() else None)
    if not uri:
        raise CompareError(f"{run_id} is not a folder; to read it as an MLflow run id, set "
                           "--tracking-uri or MLFLOW_TRACKING_URI")
    db = sqlite_store.sqlite_file(uri)
    if db is not None and not db.is_file():  # read, never made here
        raise CompareError(f"{uri}: no such MLflow store (the file does not exist)")
    try:
        store.check_reachable(uri, store.HEALTH_TIMEOUT)
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # quiet stderr
        mlflow = store.client(uri)  # MLflow imported before the deadline starts
    except store.TrackingError as exc:
        raise CompareError(str(exc)) from None
    except Exception as exc:  # a URI MLflow does not take
        raise CompareError(f"MLflow tracking URI {mask_uri(uri)}: {_text(exc)}") from None
    what = f"MLflow run {run_id} at {mask_uri(uri)}"
    return within(timeout, lambda: _download_run(mlflow, run_id, uri, workdir),
                  lambda: CompareError(f"{what}: no answer within {timeout:g} s (--timeout)"))


# Keys that say where and how a run was written, not what was measured.
_QUIET = ("output_root", "progress", "report", "tracking", "cache", "run_name", "experiment",
          "prices", "hydra", "gate", "scoring.workers", "scoring.batch_size")
_NAMED = (("dataset", "name"), ("model", "name"), ("model", "system"), ("matcher", "name"))
MAX_PARTS = 4


def _threshold(metrics: Mapping[str, Any]) -> str | None:
    threshold = metrics.get("threshold") or {}
    level, value = threshold.get("level"), threshold.get("value")
    return str(level) if level else (None if value is None else f"{value:g}")


def side_names(a: tuple[Mapping[str, Any], Mapping[str, str]],
               b: tuple[Mapping[str, Any], Mapping[str, str]]) -> tuple[str, str] | None:
    """What differs between two runs, as each side's ``key=value`` words.

    Args:
        a: Run A's ``metrics.json`` and flat config.
        b: Run B's.

    Returns:
        (A's words, B's words), at most four ``key=value`` each, or None when nothing
        differs (the same config run twice).
    """
    (ma, ca), (mb, cb) = a, b
    parts: list[tuple[str, str, str]] = []
    covered = [*_QUIET, "scoring.threshold"]  # config keys said already, or not worth saying
    for section, name in _NAMED:  # the model's system only when the model is the same
        va, vb = ((m.get(section) or {}).get(name) for m in (ma, mb))
        if section not in covered and va != vb:
            parts.append((section if name == "name" else name, str(va), str(vb)))
            covered.append(section)
    if _threshold(ma) != _threshold(mb):
        parts.append(("threshold", str(_threshold(ma)), str(_threshold(mb))))
    for key in sorted(set(ca) | set(cb)):
        quiet = any(key == c or key.startswith(c + ".") for c in covered)
        if not quiet and ca.get(key) != cb.get(key):
            parts.append((key, str(ca.get(key, "—")), str(cb.get(key, "—"))))
    if not parts:
        return None
    shown = parts[:MAX_PARTS]
    more = f" (+{len(parts) - MAX_PARTS} more)" if len(parts) > MAX_PARTS else ""
    return (" ".join(f"{k}={va}" for k, va, _ in shown) + more,
            " ".join(f"{k}={vb}" for k, _, vb in shown) + more)

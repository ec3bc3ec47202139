"""The MLflow store: where runs go, whether it answers, the client, the experiment, uploads.

Where runs go (first that applies):

1. ``tracking.tracking_uri`` in the config;
2. the ``MLFLOW_TRACKING_URI`` environment variable;
3. ``sqlite:////<abs output_root>/mlflow.db`` (embedded, no server), with artifacts of new
   experiments under ``<output_root>/mlartifacts``.

MLflow's own default is never used: MLflow ≥ 3.17 refuses the old ``./mlruns`` file store and a
stray ``mlruns/`` folder silently switches its default back to it. MLflow is imported inside
the functions that need it, so importing this module stays cheap.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.redact import mask_uri, scrub_files
from runner.tracking.deadline import Bounded, within

log = logging.getLogger("ragcite")

DB_FILE = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"
MAX_TAG = 8000  # MLflow's limit on a tag value
# MLflow's HTTP client defaults for a tracking server, unless set in the environment: a server that
# is gone fails a call after ~3 s instead of retrying for minutes (MLflow's own: 7 retries, backoff
# factor 2, timeout 120 s); the timeout is also the deadline of each call (:func:`client`).
HTTP_LIMITS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
               "MLFLOW_HTTP_REQUEST_TIMEOUT": "60"}
# Tags of every run: the host and process that opened it (to find runs left RUNNING).
HOST_TAG, PID_TAG = "ragcite.host", "ragcite.pid"
# Seconds the health check of a tracking server may take at the end of a sweep.
HEALTH_TIMEOUT = 5.0


class TrackingError(Exception):
    """A store problem found by ragcite itself; its message is one line for the user."""


class Unreachable(TrackingError):
    """A tracking server that does not answer, or answers its health check with an error."""


def one_line(exc: BaseException) -> str:
    """`exc`'s message on one line (at most 300 characters, unless ragcite wrote it)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 or isinstance(exc, TrackingError) else text[:297] + "..."


def logged(what: str, call: Callable[[], Any], default: Any = None) -> Any:
    """``call()``, or `default` after the error line ``ragcite: tracking: <what>: <error>``."""
    try:
        return call()
    except Exception as exc:
        log.error("ragcite: tracking: %s: %s", what, one_line(exc))
        return default


def is_remote(uri: str) -> bool:
    """True for an ``http(s)://`` tracking server."""
    return uri.lower().startswith(("http://", "https://"))


def resolve_tracking_uri(tracking_uri: str | None, output_root: str | os.PathLike[str]) -> str:
    """The tracking URI: `tracking_uri`, else ``MLFLOW_TRACKING_URI``, else the local sqlite."""
    uri = (tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "").strip()
    if not uri:
        return "sqlite:///" + str(Path(output_root).resolve() / DB_FILE)
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        # A relative sqlite path would depend on each process's working directory.
        return "sqlite:///" + str(Path(uri[len("sqlite:///"):]).resolve())
    return uri


def artifact_location(explicit: str | None, output_root: str | os.PathLike[str],
                      uri: str) -> str | None:
    """Where a new experiment keeps its artifacts (None: the server decides)."""
    if explicit:
        return explicit if "://" in explicit else Path(explicit).resolve().as_uri()
    return None if is_remote(uri) else (Path(output_root).resolve() / ARTIFACTS_DIR).as_uri()


def check_reachable(uri: str, timeout: float) -> None:
    """Fail fast when an ``http(s)`` tracking server cannot be reached.

    Raises:
        Unreachable: No connection, a timeout, or a server error.
        TrackingError: A refusal (401/403).
    """
    if not is_remote(uri):
        return
    parts = urllib.parse.urlsplit(uri)  # user-info is not sent by urllib; /health is open
    url = parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1], query="", fragment="",
                         path=parts.path.rstrip("/") + "/health").geturl()

    def health() -> int:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status)

    try:  # urllib's timeout bounds each read: the deadline bounds the whole reply
        status = within(timeout, health, lambda: TimeoutError("timed out"))
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        text = one_line(reason) if isinstance(reason, BaseException) else str(reason)
        raise Unreachable(f"cannot reach the MLflow tracking server at {mask_uri(uri)} "
                            f"({text}; timeout {timeout:g} s)") from None
    if status >= 500:
        raise Unreachable(f"the MLflow tracking server at {mask_uri(uri)} answered HTTP "
                            f"{status} on /health")
    if status in (401, 403):
        raise TrackingError(f"the MLflow tracking server at {mask_uri(uri)} refused the "
                            f"connection (HTTP {status}); check credentials or the server's "
                            f"--allowed-hosts")


def unreachable(uri: str, timeout: float) -> Unreachable | None:
    """Why the tracking server at `uri` does not answer now (None: it does, or `uri` is local)."""
    try:
        check_reachable(uri, timeout)
    except TrackingError as exc:
        return exc if isinstance(exc, Unreachable) else None
    return None


def quiet_migrations() -> None:
    """Keep a new database store's migration chatter (INFO lines) off the console."""
    for name in ("alembic", "alembic.runtime.migration", "mlflow.store.db.utils"):
        logging.getLogger(name).setLevel(logging.WARNING)


def client(uri: str) -> Any:
    """An ``MlflowClient`` on `uri` (a new sqlite store's migration chatter kept quiet); on a
    tracking server, each of its calls ends within ``MLFLOW_HTTP_REQUEST_TIMEOUT`` seconds,
    MLflow's retries included, or raises :class:`Unreachable`."""
    quiet_migrations()
    from mlflow import MlflowClient

    if not is_remote(uri):
        return MlflowClient(tracking_uri=uri)
    # Its retries are bounded below and end in one error line: no "Retrying ..." lines.
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    for name, value in HTTP_LIMITS.items():
        os.environ.setdefault(name, value)  # read by MLflow at each request
    seconds = float(os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"])
    return Bounded(MlflowClient(tracking_uri=uri), seconds, lambda name: Unreachable(
        f"the MLflow tracking server at {mask_uri(uri)} did not complete {name} within "
        f"{seconds:g} s (MLFLOW_HTTP_REQUEST_TIMEOUT)"))


EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
# The experiment's kind for the MLflow UI: runs and metrics ("Machine learning"), not the GenAI
# traces overview. MLflow 3.17's UI opens every experiment on the kind chosen in its header switch
# (remembered by the browser; ``?workflowType=machine_learning`` in the URL).
EXPERIMENT_KIND = "custom_model_development"


def experiment_id(mlflow: Any, name: str, location: str | None) -> str:
    """The id of experiment `name`, created (with `location` for artifacts) when missing; its
    kind (:data:`EXPERIMENT_KIND_TAG`) set to :data:`EXPERIMENT_KIND` unless one is set.

    Raises:
        TrackingError: The experiment is deleted.
    """
    for attempt in range(3):
        exp = mlflow.get_experiment_by_name(name)
        if exp is not None:
            break
        try:
            return str(mlflow.create_experiment(name, artifact_location=location,
                                                tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}))
        except Exception:  # another process created it first: read it back
            if attempt == 2:
                raise
            time.sleep(0.2 * (attempt + 1))
    if exp.lifecycle_stage == "deleted":
        raise TrackingError(f"experiment {name!r} is deleted; restore it "
                            f"(mlflow experiments restore) or choose another name")
    if EXPERIMENT_KIND_TAG not in (exp.tags or {}):  # a kind set by hand stays
        mlflow.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    return str(exp.experiment_id)


def code_tags() -> dict[str, str]:
    """MLflow's usual system tags (user, source), the host and process id (``ragcite.host``,
    ``ragcite.pid``) and the code version of ragcite (its commit, in a git checkout)."""
    from mlflow.tracking.context.registry import resolve_tags
    from mlflow.utils.git_utils import get_git_commit

    from runner import __version__

    root = Path(__file__).resolve().parents[2]
    commit = get_git_commit(str(root)) if (root / ".git").exists() else None
    return {**{k: str(v) for k, v in resolve_tags({}).items()}, HOST_TAG: socket.gethostname(),
            PID_TAG: str(os.getpid()), "ragcite.version": __version__,
            **({"ragcite.git_commit": commit} if commit else {})}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:  # but another user's process, or no way to tell
        return not isinstance(exc, ProcessLookupError)
    return True


def end_dead_runs(mlflow: Any, experiment_id: str) -> None:
    """End KILLED every RUNNING run of the experiment opened on this host by a process that is
    gone (killed, or cut off from a tracking server that has since come back), with a warning
    line each. Runs of other hosts, or without the tags, are left alone. Never raises."""
    host = socket.gethostname()
    try:
        runs = mlflow.search_runs([experiment_id], max_results=1000, filter_string=(
            f"attributes.status = 'RUNNING' and tags.`{HOST_TAG}` = '{host.replace(chr(39), '')}'"))
        for run in runs:
            pid = str(run.data.tags.get(PID_TAG) or "")
            if not pid.isdigit() or _alive(int(pid)):
                continue
            mlflow.set_terminated(run.info.run_id, "KILLED")
            log.warning("ragcite: warning: tracking: run %s (%s) was left RUNNING by process "
                        "%s, which has ended; marked KILLED", run.info.run_id,
                        run.info.run_name, pid)
    except Exception as exc:
        log.warning("ragcite: warning: tracking: could not look for runs left RUNNING: %s",
                    one_line(exc))


def log_batch(mlflow: Any, run_id: str, metrics: dict[str, float] | None = None,
              params: dict[str, str] | None = None, tags: dict[str, str] | None = None) -> None:
    """Log metrics (in their order), params and tags of a run in one request."""
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    mlflow.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in (metrics or {}).items()],
                     params=[Param(k, v) for k, v in (params or {}).items()],
                     tags=[RunTag(k, v[:MAX_TAG]) for k, v in (tags or {}).items()])


def run_link(uri: str, ui_url: str | None, experiment: str, run_id: str) -> str | None:
    """The run's page in an MLflow UI: `ui_url`, else a remote tracking URI; else None."""
    base = ui_url or (uri if is_remote(uri) else None)
    return f"{mask_uri(base).rstrip('/')}/#/experiments/{experiment}/runs/{run_id}" if base \
        else None


def log_artifact(mlflow: Any, run_id: str, path: Path, secrets: set[str]) -> None:
    """``log_artifact`` of one file; a text file holding a secret goes as a scrubbed copy."""
    try:
        text = path.read_text(encoding="utf-8") if any(secrets) else ""
    except (UnicodeDecodeError, OSError):
        text = ""
    if not any(s and s in text for s in secrets):
        mlflow.log_artifact(run_id, str(path))
        return
    with tempfile.TemporaryDirectory(prefix="ragcite-") as tmp:
        (Path(tmp) / path.name).write_text(text, encoding="utf-8")
        scrub_files(tmp, secrets)  # YAML stays YAML (``key: '***'``)
        mlflow.log_artifact(run_id, str(Path(tmp) / path.name))

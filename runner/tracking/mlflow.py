"""MLflow tracking: one run per job, one parent run per sweep, the per-case table.

Everything here reads the results files a job has already written (``metrics.json``,
``cases.jsonl``, ``config.yaml``, ``report.html``) and never recomputes a figure. MLflow itself
is imported lazily, when a tracker is built, so ``ragcite --help`` stays fast.

Where runs go (first that applies):

1. ``tracking.tracking_uri`` in the config;
2. the ``MLFLOW_TRACKING_URI`` environment variable;
3. ``sqlite:////<abs output_root>/mlflow.db`` (embedded, no server), with artifacts of new
   experiments under ``<output_root>/mlartifacts``.

MLflow's own default is never used: an explicit URI is always passed, because MLflow ≥ 3.17
refuses the old ``./mlruns`` file store and a stray ``mlruns/`` folder silently switches its
default back to it.

A sweep (multirun) opens its parent run in the main process (:func:`start_sweep`) and writes
``<sweep_dir>/.ragcite/parent_run.json``; each job, in whatever process or machine runs it, finds
that file above its job folder and logs as a child (``mlflow.parentRunId``). :func:`end_sweep`
logs the sweep summary to the parent, fails any child still RUNNING (a job that crashed hard)
and closes the parent, FAILED when a job failed.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import math
import os
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import orjson

from runner.redact import env_secrets, redact, redact_override, scrub_text, secret_values
from runner.results import CASES_FILE, METRICS_FILE, parse_line

log = logging.getLogger("ragcite")

PARENT_FILE = Path(".ragcite") / "parent_run.json"
"""Where a sweep leaves its parent run id for the jobs, relative to the sweep folder."""
TABLE_FILE = "cases_table.json"
"""The per-case table (``mlflow.log_table``), browsable in the MLflow UI."""
DB_FILE = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"
CONFIG_FILE = "config.yaml"
REPORT_FILE = "report.html"
SWEEP_FILE = "sweep.json"
SWEEP_REPORT = "sweep.html"
METRIC_KEYS = ("context_recall", "context_precision", "context_f1",
               "source_recall", "source_precision", "source_f1")

# Sections of metrics.json that describe the run rather than measure it: no metric is taken
# from them (the config values among them are logged as params).
_NOT_FIGURES = {"schema_version", "complete", "bootstrap", "run", "dataset", "model", "scoring"}
_MAX_PARAM = 6000   # MLflow's limit on a param value
_MAX_TAG = 8000     # ... and on a tag value
_MAX_KEY = 250
_BAD_KEY_CHARS = re.compile(r"[^/\w.\- ]")
_URI_USERINFO = re.compile(
    r"(?P<scheme>[a-zA-Z][\w+.-]*://)(?P<user>[^:/@\s]*):(?P<password>[^@/\s]*)@")


class TrackingError(Exception):
    """Raised inside this module; turned into a RagciteError or a warning by the caller."""


# --- small helpers -----------------------------------------------------------------------------


def mask_uri(uri: str) -> str:
    """`uri` with any password in its user-info replaced by ``***`` (safe to print or log)."""
    return _URI_USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", uri)


def uri_passwords(obj: Any) -> set[str]:
    """Passwords written into URIs (``scheme://user:password@host``) anywhere in `obj`."""
    found: set[str] = set()
    if isinstance(obj, str):
        found |= {m["password"] for m in _URI_USERINFO.finditer(obj) if len(m["password"]) >= 4}
    elif isinstance(obj, dict):
        for value in obj.values():
            found |= uri_passwords(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            found |= uri_passwords(value)
    return found


def all_secrets(cfg: Any) -> set[str]:
    """Every secret value a config carries: secret-named keys, secret env vars, URI passwords."""
    return secret_values(cfg) | env_secrets() | uri_passwords(cfg)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _ragcite_error(message: str) -> Exception:
    from runner.errors import RagciteError

    return RagciteError(message)


def is_remote(uri: str) -> bool:
    """True for an ``http(s)://`` tracking server."""
    return uri.lower().startswith(("http://", "https://"))


def default_tracking_uri(output_root: str | os.PathLike[str]) -> str:
    """``sqlite:////abs/path/<output_root>/mlflow.db``."""
    return "sqlite:///" + str(Path(output_root).resolve() / DB_FILE)


def resolve_tracking_uri(tracking: dict[str, Any], output_root: str | os.PathLike[str]) -> str:
    """The tracking URI: the config key, else ``MLFLOW_TRACKING_URI``, else the local sqlite."""
    uri = tracking.get("tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI") or ""
    uri = uri.strip()
    if not uri:
        return default_tracking_uri(output_root)
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        # A relative sqlite path would depend on each process's working directory.
        return "sqlite:///" + str(Path(uri[len("sqlite:///"):]).resolve())
    return uri


def artifact_location(tracking: dict[str, Any], output_root: str | os.PathLike[str],
                      uri: str) -> str | None:
    """Where a new experiment keeps its artifacts (None: the server decides)."""
    explicit = tracking.get("artifact_location")
    if explicit:
        return str(explicit) if "://" in str(explicit) else Path(explicit).resolve().as_uri()
    if is_remote(uri):
        return None
    return (Path(output_root).resolve() / ARTIFACTS_DIR).as_uri()


def check_reachable(uri: str, timeout: float) -> None:
    """Fail fast when an ``http(s)`` tracking server cannot be reached.

    Raises:
        TrackingError: No connection, a timeout, a server error, or a refusal (401/403).
    """
    if not is_remote(uri):
        return
    parts = urllib.parse.urlsplit(uri)
    netloc = parts.netloc.rsplit("@", 1)[-1]  # user-info is not sent by urllib; /health is open
    url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/health",
                                   "", ""))
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TrackingError(f"cannot reach the MLflow tracking server at {mask_uri(uri)} "
                            f"({_one_line(reason) if isinstance(reason, BaseException) else reason}"
                            f"; timeout {timeout:g} s)") from None
    if status >= 500:
        raise TrackingError(f"the MLflow tracking server at {mask_uri(uri)} answered HTTP "
                            f"{status} on /health")
    if status in (401, 403):
        raise TrackingError(f"the MLflow tracking server at {mask_uri(uri)} refused the "
                            f"connection (HTTP {status}); check credentials or the server's "
                            f"--allowed-hosts")


_GIT_COMMIT: list[str | None] = []


def git_commit() -> str | None:
    """The commit of the ragcite source tree, when it is a git checkout."""
    if not _GIT_COMMIT:
        root = Path(__file__).resolve().parents[2]
        commit = None
        if (root / ".git").exists():
            try:
                out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                     capture_output=True, text=True, timeout=5, check=False)
                if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", out.stdout.strip()):
                    commit = out.stdout.strip()
            except (OSError, subprocess.SubprocessError):
                commit = None
        _GIT_COMMIT.append(commit)
    return _GIT_COMMIT[0]


def _version() -> str:
    from runner import __version__

    return __version__


def _param_value(value: Any) -> str:
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (dict, list, tuple)):
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return text if len(text) <= _MAX_PARAM else text[:_MAX_PARAM - 3] + "..."


def _key(parts: list[str]) -> str:
    key = _BAD_KEY_CHARS.sub("_", ".".join(parts))
    return key[:_MAX_KEY]


def flatten_params(cfg: dict[str, Any], secrets: set[str] | None = None) -> dict[str, str]:
    """The composed config as ``dotted.key → value`` strings, secrets redacted.

    Lists are logged whole (as JSON); an empty mapping is logged as ``{}`` so that every key of
    the config shows up. Any value of `secrets` (default: :func:`all_secrets`) is replaced by
    ``***`` wherever it occurs.
    """
    secrets = all_secrets(cfg) if secrets is None else secrets
    out: dict[str, str] = {}

    def walk(node: Any, parts: list[str]) -> None:
        if isinstance(node, dict) and node:
            for k, v in node.items():
                walk(v, [*parts, str(k)])
            return
        text = _param_value(node)
        if isinstance(node, str) and "://" in node:
            text = mask_uri(text)
        out[_key(parts)] = scrub_text(text, secrets)

    walk(redact(cfg), [])
    return out


def _figures(node: Any, parts: list[str]) -> Iterator[tuple[list[str], float]]:
    if isinstance(node, bool):
        return
    if isinstance(node, (int, float)):
        if isinstance(node, float) and not math.isfinite(node):
            return
        yield parts, float(node)
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _figures(v, [*parts, str(k)])
    elif isinstance(node, list):
        names = ["low", "high"] if len(node) == 2 and parts[:1] == ["ci"] else None
        for i, v in enumerate(node):
            yield from _figures(v, [*parts, names[i] if names else str(i)])


def metrics_from_results(data: dict[str, Any]) -> dict[str, float]:
    """Every run-level figure of a ``metrics.json`` as an MLflow metric.

    Names: the six macro means under their own names (``context_recall``); every other numeric
    leaf under its JSON path joined by ``/`` (``ci/context_recall/low``,
    ``micro/context_recall``, ``labels/citation_supported``, ``counts/references``,
    ``timings/model_s``, ``usage/...`` and ``cost/...`` when present, ``n_cases``,
    ``error_rate``), plus ``matcher/threshold`` and ``gates/passed`` (1 or 0). Undefined
    figures (``null``) are left out.
    """
    out: dict[str, float] = {}
    for top, node in data.items():
        if top in _NOT_FIGURES:
            continue
        if top == "matcher":
            threshold = (node or {}).get("threshold") if isinstance(node, dict) else None
            if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
                out["matcher/threshold"] = float(threshold)
            continue
        if top == "gates":
            if isinstance(node, dict) and isinstance(node.get("passed"), bool):
                out["gates/passed"] = 1.0 if node["passed"] else 0.0
            continue
        for parts, value in _figures(node, [top]):
            if parts[0] == "metrics" and len(parts) == 2:
                parts = parts[1:]
            out["/".join(_BAD_KEY_CHARS.sub("_", p) for p in parts)[:_MAX_KEY]] = value
    return out


TABLE_COLUMNS = ("id", "query", "answer", "n_references", "n_citations", *METRIC_KEYS,
                 "citation_labels", "reference_labels", "error")
"""The columns of the per-case table."""


def case_rows(cases_path: Path) -> Iterator[list[Any]]:
    """The per-case table's rows (:data:`TABLE_COLUMNS`), one per line of ``cases.jsonl``."""
    with cases_path.open("rb") as fh:
        for line in fh:
            if line.strip():
                yield _case_row(parse_line(line))


def _case_row(rec: dict[str, Any]) -> list[Any]:
    response = rec.get("response") or {}
    metrics = rec.get("metrics") or {}
    labels = rec.get("labels") or {}
    return [str(rec.get("id")), rec.get("query"), response.get("answer"),
            len(rec.get("references") or []), len(response.get("citations") or []),
            *(metrics.get(key) for key in METRIC_KEYS),
            ", ".join(labels.get("citations") or []),
            ", ".join(labels.get("references") or []),
            rec.get("error")]


class RowMemo:
    """Table rows (:func:`case_rows`) as JSON by the digest of the line they come from.

    The jobs of a threshold sweep write mostly the same ``cases.jsonl`` lines (the cases whose
    decisions the threshold did not change); the helper process that logs every job of a sweep
    keeps each row it wrote, so a line seen before is not parsed again. Bounded: past
    `max_bytes` of rows no more are kept.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._rows: dict[bytes, bytes] = {}
        self._bytes = 0
        self.built = 0  # rows built (not found)

    def row(self, line: bytes) -> bytes | None:
        """The row of `line` as JSON, or None for a blank line."""
        key = hashlib.blake2b(line, digest_size=16).digest()
        found = self._rows.get(key)
        if found is not None:
            return found
        body = line.strip()
        if not body:
            return None
        made = _row_json(_case_row(parse_line(body)))
        self.built += 1
        if self._bytes + len(made) + 64 <= self.max_bytes:
            self._rows[key] = made
            self._bytes += len(made) + 64
        return made

    def clear(self) -> None:
        """Drop every row."""
        self._rows.clear()
        self._bytes = 0


_ROWS = RowMemo()


def clear_rows() -> None:
    """Forget this process's table rows (a sweep that logged in this process has ended)."""
    _ROWS.clear()


def _row_json(row: list[Any]) -> bytes:
    try:
        return orjson.dumps(row)
    except TypeError:  # a lone surrogate in a text: the standard library escapes it
        return json.dumps(row, separators=(",", ":")).encode("utf-8")


def log_case_table(client: Any, run_id: str, cases_path: Path,
                   rows: RowMemo | None = None) -> None:
    """Log the per-case table as ``mlflow.log_table`` does, without its per-cell pandas work.

    The artifact is the JSON MLflow writes for a table (pandas' ``split`` orientation without
    an index: ``{"columns": [...], "data": [[...], ...]}``), and the run's
    ``mlflow.loggedArtifacts`` tag lists it as a table, so the MLflow UI and
    ``mlflow.load_table`` read it as one. ``log_table`` itself spent 4 s of a 100,000-case run
    checking every cell for images and converting through pandas.

    `rows` (default: this process's) keeps the rows built, for the next job's table.
    """
    memo = rows if rows is not None else _ROWS
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ragcite-table-") as tmp:
        path = Path(tmp) / TABLE_FILE
        with path.open("wb") as fh, cases_path.open("rb") as lines:
            # Row by row (memory stays flat at any number of cases); rows of lines logged
            # before by this process (an earlier job of the sweep) are not built again.
            fh.write(b'{"columns":' + orjson.dumps(list(TABLE_COLUMNS)) + b',"data":[')
            first = True
            for line in lines:
                row = memo.row(line)
                if row is None:
                    continue
                if not first:
                    fh.write(b",")
                fh.write(row)
                first = False
            fh.write(b"]}")
        upload(client, run_id, path)
    tag = "mlflow.loggedArtifacts"
    logged = json.loads(client.get_run(run_id).data.tags.get(tag, "[]"))
    entry = {"path": TABLE_FILE, "type": "table"}
    if entry not in logged:
        client.set_tag(run_id, tag, json.dumps([*logged, entry]))


# --- the store ---------------------------------------------------------------------------------


def _quiet_mlflow_logs() -> None:
    # First use of a new sqlite store prints database-migration chatter at INFO level.
    for name in ("alembic", "alembic.runtime.migration", "mlflow.store.db.utils"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _client(uri: str) -> Any:
    _quiet_mlflow_logs()
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _experiment_id(client: Any, name: str, location: str | None) -> str:
    """The id of experiment `name`, created (with `location` for artifacts) when missing."""
    for attempt in range(3):
        exp = client.get_experiment_by_name(name)
        if exp is not None:
            if exp.lifecycle_stage == "deleted":
                raise TrackingError(f"experiment {name!r} is deleted; restore it "
                                    f"(mlflow experiments restore) or choose another name")
            return str(exp.experiment_id)
        try:
            return str(client.create_experiment(name, artifact_location=location))
        except Exception:  # another process created it first: read it back
            if attempt == 2:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise TrackingError(f"could not open experiment {name!r}")  # pragma: no cover


def _context_tags() -> dict[str, str]:
    """MLflow's usual system tags (user, source name, git commit of the entry point)."""
    try:
        from mlflow.tracking.context.registry import resolve_tags

        return {k: str(v) for k, v in resolve_tags({}).items()}
    except Exception:  # pragma: no cover - best effort only
        return {}


def _base_tags() -> dict[str, str]:
    tags = {"ragcite.version": _version()}
    commit = git_commit()
    if commit:
        tags["ragcite.git_commit"] = commit
    return tags


def _log_batch(client: Any, run_id: str, metrics: dict[str, float] | None = None,
               params: dict[str, str] | None = None, tags: dict[str, str] | None = None) -> None:
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, now, 0) for k, v in (metrics or {}).items()],
        params=[Param(k, v) for k, v in (params or {}).items()],
        tags=[RunTag(k, v[:_MAX_TAG]) for k, v in (tags or {}).items()],
    )


def _run_link(uri: str, ui_url: str | None, experiment_id: str, run_id: str) -> str | None:
    base = ui_url or (uri if is_remote(uri) else None)
    if not base:
        return None
    return f"{mask_uri(base).rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"


def read_parent_file(sweep_dir: Path) -> dict[str, Any] | None:
    """The content of ``<sweep_dir>/.ragcite/parent_run.json`` (None when absent or unreadable)."""
    path = sweep_dir / PARENT_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def find_parent(run_dir: Path, levels: int = 4) -> dict[str, Any] | None:
    """The sweep's ``parent_run.json`` in one of the `levels` folders above `run_dir`, if any."""
    for folder in list(run_dir.resolve().parents)[:levels]:
        if (folder / PARENT_FILE).is_file():
            return read_parent_file(folder)
    return None


# --- one job -----------------------------------------------------------------------------------


class MlflowTracker:
    """Tracks one job as an MLflow run (``tracking=mlflow``).

    Built before any model call: it resolves the tracking URI, checks that a remote server
    answers, and opens (or creates) the experiment, so a bad store fails the job up front. With
    ``tracking.required=false`` any tracking failure is a warning and the job carries on with its
    local outputs.

    Raises:
        RagciteError: The store is unreachable or unusable and ``tracking.required`` is true.
    """

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.tracking: dict[str, Any] = dict(cfg.get("tracking") or {})
        self.required = bool(self.tracking.get("required", True))
        self.output_root = cfg.get("output_root") or "outputs"
        self.uri = resolve_tracking_uri(self.tracking, self.output_root)
        self.experiment = str(cfg.get("experiment") or "ragcite")
        self.link: str | None = None
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self.parent_run_id: str | None = None
        self.client: Any = None
        self.disabled = False
        self._ended = False
        self.secrets = all_secrets(cfg) | uri_passwords(self.uri)
        try:
            check_reachable(self.uri, float(self.tracking.get("timeout_s") or 5.0))
            self.client = _client(self.uri)
            self.experiment_id = _experiment_id(
                self.client, self.experiment,
                artifact_location(self.tracking, self.output_root, self.uri))
        except Exception as exc:
            self._fail("cannot use the MLflow tracking store", exc, up_front=True)

    # Failure policy: required → one-line RagciteError; otherwise warn once and stop tracking.
    def _fail(self, what: str, exc: BaseException, up_front: bool = False) -> None:
        detail = _one_line(exc)
        if isinstance(exc, TrackingError):
            message = f"tracking: {detail}"
        else:
            message = f"tracking: {what} {mask_uri(self.uri)}: {type(exc).__name__}: {detail}"
        self.disabled = True
        if self.required:
            hint = (" (set tracking.required=false to run without it, or tracking=none)"
                    if up_front else "")
            raise _ragcite_error(message + hint) from None
        log.warning("ragcite: warning: %s; continuing without MLflow tracking "
                    "(results stay in the run folder)", message)

    def _run_name(self, names: dict[str, str]) -> str:
        if self.cfg.get("run_name"):
            return str(self.cfg["run_name"])
        base = "_".join(names.get(k, "?") for k in ("dataset", "model", "matcher"))
        threshold = (self.cfg.get("matcher") or {}).get("threshold")
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            base += f"_t{float(threshold):g}"
        return base

    def start(self, names: dict[str, str], run_dir: Path) -> None:
        """Open the run (a child of the sweep's parent run when there is one) and log params."""
        if self.disabled:
            return
        try:
            parent = find_parent(run_dir)
            if parent is not None and parent.get("disabled"):
                self.disabled = True
                return
            if parent is not None and parent.get("run_id"):
                self.parent_run_id = str(parent["run_id"])
                if parent.get("tracking_uri") and parent["tracking_uri"] != self.uri:
                    self.uri = str(parent["tracking_uri"])
                    self.client = _client(self.uri)
                self.experiment_id = str(parent.get("experiment_id") or self.experiment_id)
            tags = {**_context_tags(), **_base_tags(),
                    "ragcite.run_dir": str(run_dir.resolve())}
            for key in ("dataset", "model", "matcher", "threshold"):
                if key in names:
                    tags[f"ragcite.{key}"] = names[key]
            overrides = _job_overrides(run_dir)
            if overrides is not None:
                tags["ragcite.overrides"] = scrub_text(
                    json.dumps([mask_uri(o) for o in overrides], ensure_ascii=False),
                    self.secrets)
            for key, value in (self.tracking.get("tags") or {}).items():
                tags[str(key)] = scrub_text(str(value), self.secrets)
            if parent is not None and self.parent_run_id:
                tags["mlflow.parentRunId"] = self.parent_run_id
                tags["ragcite.sweep_dir"] = str(parent.get("sweep_dir") or
                                                run_dir.resolve().parent)
            run = self.client.create_run(self.experiment_id,
                                         run_name=scrub_text(self._run_name(names), self.secrets),
                                         tags=tags)
            self.run_id = run.info.run_id
            self.link = _run_link(self.uri, self.tracking.get("ui_url"), str(self.experiment_id),
                                  str(self.run_id))
            _log_batch(self.client, str(self.run_id),
                       params=flatten_params(self.cfg, self.secrets))
        except Exception as exc:
            self._fail("cannot open a run on", exc)

    def ready(self) -> None:
        """Nothing to wait for: :meth:`start` opened the run (or failed) in this process."""

    def log_results(self, run_dir: Path, skip: Collection[str] = (), wait: bool = True) -> None:
        """Log metrics, artifacts, the per-case table and the dataset from the results files.

        Files named in `skip` are left for :meth:`log_file`. Always done before returning
        (`wait` is for trackers that log in a helper process).
        """
        if self.disabled or self.run_id is None:
            return
        try:
            self._log_results(run_dir, skip)
        except Exception as exc:
            self._fail("cannot log the results to", exc)

    def log_file(self, path: Path) -> None:
        """Upload one more file of the run folder as an artifact (scrubbed of secrets)."""
        if self.disabled or self.run_id is None or self.client is None or not path.is_file():
            return
        try:
            log_artifact(self.client, str(self.run_id), path, None, self.secrets)
        except Exception as exc:
            self._fail("cannot log the results to", exc)

    def _log_results(self, run_dir: Path, skip: Collection[str] = ()) -> None:
        client, run_id = self.client, str(self.run_id)
        data = json.loads((run_dir / METRICS_FILE).read_text(encoding="utf-8"))
        dataset = data.get("dataset") or {}
        tags = {"ragcite.complete": str(bool(data.get("complete"))).lower()}
        if dataset.get("digest"):
            tags["ragcite.dataset_digest"] = str(dataset["digest"])
        gates = data.get("gates") or {}
        if isinstance(gates.get("passed"), bool):
            tags["ragcite.gates_passed"] = str(gates["passed"]).lower()
        _log_batch(client, run_id, metrics=metrics_from_results(data), tags=tags)
        for name in (METRICS_FILE, CASES_FILE, CONFIG_FILE, REPORT_FILE):
            if name not in skip and (run_dir / name).is_file():
                log_artifact(client, run_id, run_dir / name, None, self.secrets)
        if (run_dir / ".hydra").is_dir():
            for path in sorted((run_dir / ".hydra").iterdir()):
                if path.is_file():
                    log_artifact(client, run_id, path, "hydra", self.secrets)
        if self.tracking.get("log_table", True) and (run_dir / CASES_FILE).is_file():
            log_case_table(client, run_id, run_dir / CASES_FILE)
        if dataset:
            _log_dataset(client, run_id, dataset)

    def end(self, status: str) -> None:
        """Close the run (``FINISHED``, ``FAILED`` or ``KILLED``); never raises."""
        if self._ended or self.run_id is None or self.client is None:
            return
        self._ended = True
        try:
            self.client.set_terminated(self.run_id, status)
            if status == "FINISHED" and not self.parent_run_id:
                where = self.link or (f"mlflow ui --backend-store-uri {mask_uri(self.uri)}"
                                      if not is_remote(self.uri) else mask_uri(self.uri))
                log.info("MLflow run %s: %s", self.run_id, where)
        except Exception as exc:
            log.error("ragcite: tracking: could not close MLflow run %s as %s: %s",
                      self.run_id, status, _one_line(exc))


_LOCAL_DIRS: dict[str, str | None] = {}  # run id → its local artifact folder (None: not local)


def _local_artifact_dir(client: Any, run_id: str) -> str | None:
    """The folder of `run_id`'s artifacts when its store is MLflow's local one, else None."""
    if run_id not in _LOCAL_DIRS:
        uri = str(client.get_run(run_id).info.artifact_uri)
        folder = None
        if urllib.parse.urlparse(uri).scheme in ("", "file"):  # not a server's, nor a cloud's
            from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository

            folder = str(LocalArtifactRepository(uri).artifact_dir)
        if len(_LOCAL_DIRS) >= 256:
            _LOCAL_DIRS.clear()
        _LOCAL_DIRS[run_id] = folder
    return _LOCAL_DIRS[run_id]


def upload(client: Any, run_id: str, path: Path, artifact_path: str | None = None) -> None:
    """``client.log_artifact`` of one file. Into a local artifact store the file is laid down
    as MLflow's local repository does (a staged copy with the source's times and mode,
    renamed into place), the bytes copied by the kernel instead of through Python (a tenth of
    the time for a run's ``cases.jsonl``)."""
    folder = _local_artifact_dir(client, run_id)
    if folder is None or not path.is_file():
        client.log_artifact(run_id, str(path), artifact_path)
        return
    import shutil
    import tempfile

    target = Path(folder) / artifact_path if artifact_path else Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    fd, staged = tempfile.mkstemp(dir=target, prefix=".artifact.uploading.")
    os.close(fd)
    try:
        shutil.copyfile(path, staged)
        shutil.copystat(path, staged)
        os.replace(staged, target / path.name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise


def log_artifact(client: Any, run_id: str, path: Path, artifact_path: str | None,
                 secrets: set[str]) -> None:
    """Upload one file; a text file holding a secret is uploaded as a scrubbed copy."""
    secrets = {s for s in secrets if s}
    if secrets:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            text = None
        if text is not None and any(s in text for s in secrets):
            import tempfile

            with tempfile.TemporaryDirectory(prefix="ragcite-") as tmp:
                copy = Path(tmp) / path.name
                copy.write_text(scrub_text(text, secrets), encoding="utf-8")
                upload(client, run_id, copy, artifact_path)
            return
    upload(client, run_id, path, artifact_path)


def _job_overrides(run_dir: Path) -> list[str] | None:
    path = run_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(data, list):
        return None
    return [redact_override(str(x)) for x in data]


def _log_dataset(client: Any, run_id: str, dataset: dict[str, Any]) -> None:
    """Dataset lineage (``mlflow.log_input``): name, digest and source of the test set."""
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    path = str(dataset.get("path") or "")
    source: Any
    if path.lower().startswith(("http://", "https://")):
        from mlflow.data.http_dataset_source import HTTPDatasetSource

        source = HTTPDatasetSource(url=path)
    else:
        from mlflow.data.dataset_source_registry import get_dataset_source_from_json

        from runner.data.loading import resolve_path

        # MLflow defines its local source class at run time; build it through the registry.
        uri = str(resolve_path(path).resolve()) if path else "."
        source = get_dataset_source_from_json(json.dumps({"uri": uri}), source_type="local")
    meta = MetaDataset(  # type: ignore[abstract]
        source, name=str(dataset.get("name") or "dataset"),
        digest=str(dataset.get("digest") or "") or None)
    tags = [InputTag("mlflow.data.context", "evaluation"), InputTag("ragcite.path", path)]
    if dataset.get("n_cases") is not None:
        tags.append(InputTag("ragcite.n_cases", str(dataset["n_cases"])))
    inputs = [DatasetInput(meta._to_mlflow_entity(), tags)]
    for attempt in range(3):
        try:
            client.log_inputs(run_id, datasets=inputs)
            return
        except Exception as exc:
            # Jobs of a parallel sweep (Ray, Submitit) log the same dataset at the same moment:
            # the store creates its dataset row once, and the job that loses the race gets a
            # UNIQUE-constraint error. Again, the store finds the row and links it.
            if attempt == 2 or "UNIQUE constraint" not in str(exc):
                raise
            time.sleep(0.2 * (attempt + 1))


# --- a sweep -----------------------------------------------------------------------------------

_parent: dict[str, Any] = {}


def _sweep_settings(config: Any) -> tuple[dict[str, Any], str, str]:
    """(tracking section, output_root, experiment) of a sweep-level config."""
    from omegaconf import OmegaConf

    def get(key: str, default: Any) -> Any:
        try:
            node = OmegaConf.select(config, key, default=default)
            return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) \
                else node
        except Exception:
            return default

    tracking = get("tracking", {}) or {}
    return (tracking if isinstance(tracking, dict) else {}, str(get("output_root", "outputs")),
            str(get("experiment", "ragcite")))


def _write_parent_file(sweep_dir: Path, data: dict[str, Any]) -> None:
    path = sweep_dir / PARENT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def sweep_is_local(config: Any) -> bool:
    """True when a sweep-level config tracks to a local store (sqlite or files), not a server."""
    tracking, output_root, _ = _sweep_settings(config)
    return not is_remote(resolve_tracking_uri(tracking, output_root))


def start_sweep(config: Any, sweep_dir: Path) -> None:
    """Open the sweep's parent run (main process) and leave its id for the jobs.

    An unusable store stops the sweep before any job runs (exit 2), unless
    ``tracking.required=false``: then the jobs run untracked.
    """
    from omegaconf import OmegaConf

    tracking, output_root, experiment = _sweep_settings(config)
    uri = resolve_tracking_uri(tracking, output_root)
    required = bool(tracking.get("required", True))
    _parent.clear()
    try:
        check_reachable(uri, float(tracking.get("timeout_s") or 5.0))
        client = _client(uri)
        exp_id = _experiment_id(client, experiment,
                                artifact_location(tracking, output_root, uri))
        overrides = [redact_override(str(o)) for o in
                     (OmegaConf.select(config, "hydra.overrides.task", default=None) or [])]
        sweeper = OmegaConf.select(config, "hydra.sweeper.params", default=None)
        params = {"sweep.overrides": _param_value(overrides)}
        if sweeper is not None:
            sweep_params = OmegaConf.to_container(sweeper, resolve=False)
            for key, value in (sweep_params if isinstance(sweep_params, dict) else {}).items():
                params[_key(["sweep", "params", str(key)])] = _param_value(value)
        secrets = env_secrets() | uri_passwords(overrides) | uri_passwords(uri)
        params = {k: mask_uri(scrub_text(v, secrets)) for k, v in params.items()}
        tags = {**_context_tags(), **_base_tags(), "ragcite.kind": "sweep",
                "ragcite.sweep_dir": str(sweep_dir.resolve())}
        for key, value in (tracking.get("tags") or {}).items():
            tags[str(key)] = scrub_text(str(value), secrets)
        try:
            run_name = OmegaConf.select(config, "run_name", default=None)
        except Exception:  # an interpolation only a job can resolve
            run_name = None
        name = f"{run_name}_sweep" if run_name else f"sweep_{sweep_dir.name}"
        run = client.create_run(exp_id, run_name=scrub_text(name, secrets), tags=tags)
        run_id = run.info.run_id
        _log_batch(client, run_id, params=params)
    except Exception as exc:
        message = _one_line(exc) if isinstance(exc, TrackingError) else \
            f"cannot open the sweep's parent run on {mask_uri(uri)}: {type(exc).__name__}: " \
            f"{_one_line(exc)}"
        if required:
            log.error("ragcite: error: tracking: %s (set tracking.required=false to run "
                      "without it, or tracking=none)", message)
            raise SystemExit(2) from None
        log.warning("ragcite: warning: tracking: %s; the sweep runs without MLflow tracking",
                    message)
        _write_parent_file(sweep_dir, {"disabled": True, "reason": message})
        return
    _write_parent_file(sweep_dir, {"run_id": run_id, "tracking_uri": uri,
                                   "experiment_id": exp_id, "experiment": experiment,
                                   "sweep_dir": str(sweep_dir.resolve())})
    _parent.update({"client": client, "run_id": run_id, "sweep_dir": sweep_dir, "uri": uri})
    link = _run_link(uri, tracking.get("ui_url"), exp_id, run_id)
    log.info("MLflow sweep run %s%s", run_id, f": {link}" if link else f" in {mask_uri(uri)}")


def _best(summary: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """The best value of each macro metric over the complete jobs, and the job that has it."""
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {}
    for key in METRIC_KEYS:
        best: tuple[float, str] | None = None
        for job in summary.get("jobs") or []:
            if not job.get("complete"):
                continue
            value = ((job.get("metrics") or {}).get("metrics") or {}).get(key)
            if isinstance(value, (int, float)) and math.isfinite(value) and \
                    (best is None or value > best[0]):
                best = (float(value), str(job.get("dir")))
        if best is not None:
            metrics[f"best/{key}"] = best[0]
            tags[f"ragcite.best.{key}"] = best[1]
    return metrics, tags


def end_sweep(config: Any, sweep_dir: Path, summary: dict[str, Any]) -> None:
    """Log the sweep summary to the parent run, fail stray children, and close the parent.

    Never raises: the sweep's own outcome (exit status, sweep.json) must not depend on it.
    """
    state = dict(_parent)
    _parent.clear()
    run_id = state.get("run_id")
    client: Any = state.get("client")
    if run_id is None:
        data = read_parent_file(sweep_dir) or {}
        if data.get("disabled") or not data.get("run_id"):
            return
        run_id = str(data["run_id"])
        state["uri"] = str(data["tracking_uri"])
        try:
            client = _client(str(data["tracking_uri"]))
        except Exception as exc:
            log.error("ragcite: tracking: could not close the sweep run %s: %s", run_id,
                      _one_line(exc))
            return
    failed = bool(summary.get("failed"))
    try:
        jobs = summary.get("jobs") or []
        metrics, tags = _best(summary)
        metrics["n_jobs"] = float(summary.get("n_jobs", len(jobs)))
        metrics["n_complete_jobs"] = float(sum(1 for j in jobs if j.get("complete")))
        metrics["n_failed_jobs"] = metrics["n_jobs"] - metrics["n_complete_jobs"]
        tags["ragcite.failed"] = str(failed).lower()
        _log_batch(client, run_id, metrics=metrics, tags=tags)
        for name in (SWEEP_FILE, SWEEP_REPORT):
            if (sweep_dir / name).is_file():
                log_artifact(client, run_id, sweep_dir / name, None,
                             env_secrets() | uri_passwords(str(state.get("uri") or "")))
    except Exception as exc:
        log.error("ragcite: tracking: could not log the sweep summary: %s", _one_line(exc))
    _fail_stray_children(client, run_id)
    try:
        client.set_terminated(run_id, "FAILED" if failed else "FINISHED")
    except Exception as exc:
        log.error("ragcite: tracking: could not close the sweep run %s: %s", run_id,
                  _one_line(exc))


def _fail_stray_children(client: Any, parent_id: str) -> None:
    """End as FAILED every child of `parent_id` still RUNNING (its job died without closing)."""
    try:
        parent = client.get_run(parent_id)
        children = client.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{parent_id}' and "
                          f"attributes.status = 'RUNNING'", max_results=10_000)
        for child in children:
            log.warning("ragcite: tracking: child run %s was still running; marked FAILED",
                        child.info.run_id)
            client.set_terminated(child.info.run_id, "FAILED")
    except Exception as exc:
        log.error("ragcite: tracking: could not check the sweep's child runs: %s",
                  _one_line(exc))


@atexit.register
def close_open_sweep() -> None:
    """A sweep interrupted before end_sweep (e.g. Ctrl-C) leaves no parent RUNNING."""
    if _parent.get("run_id") and _parent.get("client") is not None:
        client, run_id = _parent["client"], _parent["run_id"]
        _parent.clear()
        _fail_stray_children(client, run_id)
        with contextlib.suppress(Exception):  # interpreter shutdown: best effort
            client.set_terminated(run_id, "KILLED")

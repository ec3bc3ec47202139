"""Choosing a tracker by ``tracking._target_``; what tracking may import; the pure helpers."""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from runner.errors import RagciteError
from runner.tracking import mlflow_store as store
from runner.tracking.base import NullTracker, make_tracker
from runner.tracking.flatten import flatten_params, metrics_from_results
from runner.tracking.mlflow import MlflowTracker
from tests.conftest import REPO
from tests.tracking.conftest import ENV, free_port, track
from tests.tracking.custom_tracker import RecordingTracker
from tests.tracking.jobs import make_job

ENV_SECRET = "sk-test-env-secret-8910"


def test_tracking_none_makes_a_null_tracker(compose_cfg: Any, tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(compose_cfg("tracking=none"), resolve=True)
    assert cfg["tracking"] == {"_target_": "runner.tracking.base.NullTracker"}
    tracker = make_tracker(cfg)
    assert type(tracker) is NullTracker
    dirs = make_job(tmp_path / "job", [0.3])
    assert track(tracker, dirs) == [None]
    assert make_tracker({"experiment": "x"}).open(tmp_path) is None  # no section: no tracking


def test_tracking_mlflow_makes_an_mlflow_tracker_with_the_app_settings(
        compose_cfg: Any, tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(compose_cfg(
        "tracking=mlflow", "experiment=exp-1", f"output_root={tmp_path}",
        "tracking.timeout_s=2", "+tracking.tags.team=search"), resolve=True)
    tracker = make_tracker(cfg)
    assert type(tracker) is MlflowTracker
    assert (tracker.experiment, tracker.output_root, tracker.uri) == (
        "exp-1", str(tmp_path), f"sqlite:///{tmp_path.resolve()}/mlflow.db")
    assert (tracker.required, tracker.timeout_s, tracker.log_table, tracker.ui_url,
            tracker.tags) == (True, 2.0, True, None, {"team": "search"})
    assert not (tmp_path / "mlflow.db").exists()  # building it does no I/O


def test_a_tracker_of_the_users_own_class_by_target(tmp_path: Path) -> None:
    dirs = make_job(tmp_path / "job", [0.15, 0.3])
    tracker = make_tracker({"tracking": {"_target_": "tests.tracking.custom_tracker."
                                                     "RecordingTracker", "label": "mine"},
                            "experiment": "exp", "output_root": "out"})
    assert isinstance(tracker, RecordingTracker)
    assert tracker.settings == ("exp", "out", "mine")
    assert track(tracker, dirs) == ["https://tracker.example/mine/t0.15",
                                    "https://tracker.example/mine/t0.3"]
    assert tracker.calls == [("check",), ("open", "t0.15"), ("log", "t0.15", "0.15"),
                             ("close", "FINISHED"), ("open", "t0.3"), ("log", "t0.3", "0.3"),
                             ("close", "FINISHED")]


@pytest.mark.parametrize(("section", "message"), [
    ({"backend": "mlflow"}, "tracking: the tracking config names no class (_target_)"),
    ({"_target_": "tests.tracking.custom_tracker.NoSettings"},
     "tracking: cannot build tests.tracking.custom_tracker.NoSettings: "),
    ({"_target_": "no.such.Tracker"},
     "tracking._target_: cannot import no.such.Tracker: No module named 'no'"),
    ({"_target_": "tests.tracking.custom_tracker.NoSweepHooks"},
     "tracking._target_: tests.tracking.custom_tracker.NoSweepHooks is not a tracker: it lacks "
     "start_sweep, end_sweep (runner.tracking.base.Tracker)"),
])
def test_a_tracker_that_cannot_be_built_is_one_line(section: dict[str, Any],
                                                    message: str) -> None:
    with pytest.raises(RagciteError) as exc:
        make_tracker({"tracking": section, "experiment": "e", "output_root": "o"})
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)


def test_tracking_never_imports_the_pipeline_nor_the_cli() -> None:
    # Every import statement, at module level or inside a function.
    for path in sorted((REPO / "runner" / "tracking").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("runner.pipeline", "runner.cli", "runner.sweep",
                                            "runner.reports")), (path.name, name)
    # ... and importing them all loads neither those nor MLflow itself.
    code = ("import sys; import runner.tracking.base, runner.tracking.mlflow, "
            "runner.tracking.mlflow_sweep, runner.tracking.table; "
            "print(sorted(m for m in ('mlflow', 'runner.pipeline', 'runner.cli', "
            "'runner.sweep') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**ENV, "PATH": ""}, check=True)
    assert proc.stdout.strip() == "[]"


def test_metrics_from_results_takes_every_figure_and_only_figures() -> None:
    data = {
        "schema_version": 2, "complete": True, "n_cases": 4, "n_scored": 3, "n_errors": 1,
        "error_rate": 0.25,
        "metrics": {"source_f1": 0.75, "context_recall": 0.5, "context_precision": None,
                    "context_f1": float("nan")},
        "ci": {"context_recall": [0.25, 0.75], "context_precision": None},
        "micro": {"context_recall": 0.4}, "labels": {"citation_supported": 2},
        "counts": {"references": 5}, "bootstrap": {"resamples": 1000, "seed": 0},
        "histograms": {"context_recall": {"low": 0, "high": 1, "bins": 2, "counts": [1, 2],
                                          "undefined": 0, "defined": 3, "bands": ["red", "green"]}},
        "threshold": {"value": 0.3, "level": "strict", "index": 1},
        "files": {"passages": "../passages.parquet", "cases": "cases.parquet"},
        "run": {"name": "x", "n": 1}, "dataset": {"n_cases": 4, "digest": "ab"},
        "model": {"identity": {"top_k": 3}}, "matcher": {"identity": {"n": 3}},
        "scoring": {"bands": {"green": 0.75}},
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "cost_usd": 0.0021},
        "gates": {"passed": False, "failures": ["x"], "config": {"context_recall": 0.9}},
        "execution": {"workers": 2, "timings": {"model_s": 1.5, "score_s": 0.25},
                      "cache": {"enabled": True, "hits": {"responses": 3}}},
    }
    got = metrics_from_results(data)
    # The histograms' bin counts are not metrics (the metrics.json artifact holds them).
    assert got == {
        "context_recall": 0.5, "source_f1": 0.75, "threshold": 0.3, "gates/passed": 0.0,
        "n_cases": 4.0, "n_scored": 3.0, "n_errors": 1.0, "error_rate": 0.25,
        "ci/context_recall/low": 0.25, "ci/context_recall/high": 0.75,
        "micro/context_recall": 0.4, "labels/citation_supported": 2.0,
        "counts/references": 5.0, "usage/prompt_tokens": 120.0,
        "usage/completion_tokens": 30.0, "usage/cost_usd": 0.0021,
        "execution/workers": 2.0, "execution/timings/model_s": 1.5,
        "execution/timings/score_s": 0.25, "execution/cache/hits/responses": 3.0,
    }
    assert list(got)[:2] == ["context_recall", "source_f1"]  # the headline metrics first
    # How the run went comes last, even when a section follows it in metrics.json.
    later = metrics_from_results({**data, "coverage": {"n_answered": 3}})
    assert list(later)[-5:] == ["coverage/n_answered", "execution/workers",
                                "execution/timings/model_s", "execution/timings/score_s",
                                "execution/cache/hits/responses"]


def test_flatten_params_redacts_secret_keys_headers_env_values_and_uri_passwords(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_SECRET)
    cfg = {"model": {"openai_api_key": "sk-config-1234", "headers": {"X-Team": "blue-team"},
                     "kwargs": {}, "note": f"key={ENV_SECRET}"},
           "tracking": {"tracking_uri": "postgresql://bob:hunter22@db:5432/mlflow"},
           "scoring": {"steps": ["nfc", "strip"], "threshold": 0.3}, "limit": None,
           "flag": True}
    assert flatten_params(cfg) == {
        "model.openai_api_key": "***", "model.headers.X-Team": "***", "model.kwargs": "{}",
        "model.note": "key=***",
        "tracking.tracking_uri": "postgresql://bob:***@db:5432/mlflow",
        "scoring.steps": '["nfc", "strip"]', "scoring.threshold": "0.3", "limit": "null",
        "flag": "true",
    }


def test_tracking_uri_config_key_beats_env_beats_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "out"
    assert store.resolve_tracking_uri(None, root) == f"sqlite:///{root.resolve()}/mlflow.db"
    assert store.resolve_tracking_uri(None, root).startswith("sqlite:////")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5005")
    assert store.resolve_tracking_uri(None, root) == "http://127.0.0.1:5005"
    assert store.resolve_tracking_uri("http://127.0.0.1:6006", root) == "http://127.0.0.1:6006"
    monkeypatch.chdir(tmp_path)
    # A relative sqlite path is made absolute, so every process of a sweep agrees on it.
    assert store.resolve_tracking_uri("sqlite:///rel/x.db", root) == \
        f"sqlite:///{(tmp_path / 'rel' / 'x.db').resolve()}"


def test_check_reachable_fails_fast_and_names_the_uri() -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(store.TrackingError, match=f"cannot reach .* at {uri}"):
        store.check_reachable(uri, timeout=2)
    assert time.monotonic() - started < 30  # no retries for minutes; true under load
    store.check_reachable("sqlite:////nowhere/mlflow.db", timeout=2)  # not remote: no check

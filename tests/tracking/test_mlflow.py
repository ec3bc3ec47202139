"""MLflow tracking: runs, sweeps and per-case records read back with the MLflow client.

The CLI runs in subprocesses with every output (including the sqlite store) under tmp_path.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from runner.tracking import mlflow as tracking
from tests.conftest import REPO, only_run_dir, read_jsonl, run_cli
from tests.tracking.conftest import (
    BASE,
    ENV,
    SEED,
    all_runs,
    artifact_paths,
    client,
    download_text,
    free_port,
    read_json,
)

METRIC_KEYS = ("context_recall", "context_precision", "context_f1",
               "source_recall", "source_precision", "source_f1")
CLI_SECRET = "sk-fake-cli-secret-4567"
ENV_SECRET = "sk-test-env-secret-8910"


def expected_metrics(data: dict[str, Any]) -> dict[str, float]:
    """The run-level figures of a metrics.json, named as tracking names them (spelled out)."""
    out: dict[str, float] = {}
    for key in ("n_cases", "n_scored", "n_errors", "error_rate"):
        out[key] = data[key]
    for key, value in data["metrics"].items():
        if value is not None:
            out[key] = value
    for key, bounds in data["ci"].items():
        if bounds is not None:
            out[f"ci/{key}/low"], out[f"ci/{key}/high"] = bounds
    for section in ("micro", "labels", "counts", "timings"):
        for key, value in (data.get(section) or {}).items():
            if value is not None:
                out[f"{section}/{key}"] = value
    return out


def sqlite_uri(root: Path) -> str:
    return f"sqlite:///{root.resolve() / 'mlflow.db'}"


def no_run_is_running(uri: str) -> None:
    running = [r.info.run_name for r in all_runs(uri) if r.info.status == "RUNNING"]
    assert running == []


# --- functions ---------------------------------------------------------------------------------


def test_metrics_from_results_takes_every_figure_and_only_figures() -> None:
    data = {
        "schema_version": 1, "complete": True, "n_cases": 4, "n_scored": 3, "n_errors": 1,
        "error_rate": 0.25,
        "metrics": {"context_recall": 0.5, "context_precision": None},
        "ci": {"context_recall": [0.25, 0.75], "context_precision": None},
        "micro": {"context_recall": 0.4}, "labels": {"citation_supported": 2},
        "counts": {"references": 5}, "bootstrap": {"resamples": 1000, "seed": 0},
        "run": {"name": "x"}, "dataset": {"n_cases": 4, "digest": "ab"},
        "model": {"identity": {"top_k": 3}}, "matcher": {"identity": {"n": 3}, "threshold": 0.5},
        "scoring": {"bands": {"green": 0.75}}, "timings": {"model_s": 1.5},
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "cost_usd": 0.0021},
        "cache": {"enabled": True, "hits": {"responses": 3}},
        "gates": {"passed": False, "failures": ["x"], "config": {"context_recall": 0.9}},
    }
    assert tracking.metrics_from_results(data) == {
        "n_cases": 4.0, "n_scored": 3.0, "n_errors": 1.0, "error_rate": 0.25,
        "context_recall": 0.5, "ci/context_recall/low": 0.25, "ci/context_recall/high": 0.75,
        "micro/context_recall": 0.4, "labels/citation_supported": 2.0,
        "counts/references": 5.0, "timings/model_s": 1.5,
        "usage/prompt_tokens": 120.0, "usage/completion_tokens": 30.0,
        "usage/cost_usd": 0.0021, "cache/hits/responses": 3.0,
        "matcher/threshold": 0.5, "gates/passed": 0.0,
    }


def test_flatten_params_redacts_secret_keys_headers_env_values_and_uri_passwords(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_SECRET)
    cfg = {"model": {"openai_api_key": "sk-config-1234", "headers": {"X-Team": "blue-team"},
                     "kwargs": {}, "note": f"key={ENV_SECRET}"},
           "tracking": {"tracking_uri": "postgresql://bob:hunter22@db:5432/mlflow"},
           "scoring": {"steps": ["nfc", "strip"]}, "limit": None, "flag": True}
    params = tracking.flatten_params(cfg)
    assert params == {
        "model.openai_api_key": "***", "model.headers.X-Team": "***", "model.kwargs": "{}",
        "model.note": "key=***",
        "tracking.tracking_uri": "postgresql://bob:***@db:5432/mlflow",
        "scoring.steps": '["nfc", "strip"]', "limit": "null", "flag": "true",
    }


def test_tracking_uri_config_key_beats_env_beats_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "out"
    assert tracking.resolve_tracking_uri({}, root) == f"sqlite:///{root.resolve()}/mlflow.db"
    assert tracking.resolve_tracking_uri({}, root).startswith("sqlite:////")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5005")
    assert tracking.resolve_tracking_uri({}, root) == "http://127.0.0.1:5005"
    assert tracking.resolve_tracking_uri({"tracking_uri": "http://127.0.0.1:6006"}, root) == \
        "http://127.0.0.1:6006"
    monkeypatch.chdir(tmp_path)
    # A relative sqlite path is made absolute, so every process of a sweep agrees on it.
    assert tracking.resolve_tracking_uri({"tracking_uri": "sqlite:///rel/x.db"}, root) == \
        f"sqlite:///{(tmp_path / 'rel' / 'x.db').resolve()}"


def test_check_reachable_fails_fast_and_names_the_uri() -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(tracking.TrackingError, match=f"cannot reach .* at {uri}"):
        tracking.check_reachable(uri, timeout=2)
    assert time.monotonic() - started < 3
    tracking.check_reachable("sqlite:////nowhere/mlflow.db", timeout=2)  # not remote: no check


def test_end_sweep_fails_children_left_running_and_the_parent(tmp_path: Path) -> None:
    uri = sqlite_uri(tmp_path)
    c = client(uri)
    exp = c.create_experiment("e", artifact_location=(tmp_path / "art").as_uri())
    parent = c.create_run(exp, run_name="sweep")
    child = c.create_run(exp, run_name="job", tags={"mlflow.parentRunId": parent.info.run_id})
    done = c.create_run(exp, run_name="job2", tags={"mlflow.parentRunId": parent.info.run_id})
    c.set_terminated(done.info.run_id, "FINISHED")
    tracking._write_parent_file(tmp_path, {"run_id": parent.info.run_id, "tracking_uri": uri,
                                           "experiment_id": exp})
    (tmp_path / "sweep.json").write_text("{}\n", encoding="utf-8")
    summary = {"failed": True, "n_jobs": 2, "jobs": [
        {"dir": "0_a", "complete": True, "metrics": {"metrics": {"context_f1": 0.5}}},
        {"dir": "1_b", "complete": False, "metrics": None}]}
    tracking.end_sweep(None, tmp_path, summary)
    assert c.get_run(child.info.run_id).info.status == "FAILED"
    assert c.get_run(done.info.run_id).info.status == "FINISHED"
    run = c.get_run(parent.info.run_id)
    assert run.info.status == "FAILED"
    assert run.data.metrics["best/context_f1"] == 0.5
    assert run.data.metrics["n_failed_jobs"] == 1
    assert run.data.tags["ragcite.best.context_f1"] == "0_a"
    assert artifact_paths(uri, parent.info.run_id) == {"sweep.json"}


def test_sweep_with_an_unreachable_server_stops_or_runs_untracked(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    uri = f"http://127.0.0.1:{free_port()}"
    config = OmegaConf.create({
        "tracking": {"backend": "mlflow", "tracking_uri": uri, "timeout_s": 2},
        "output_root": str(tmp_path), "experiment": "x", "hydra": {"overrides": {"task": []}}})
    with pytest.raises(SystemExit) as exc:
        tracking.start_sweep(config, tmp_path / "strict")
    assert exc.value.code == 2
    assert tracking.read_parent_file(tmp_path / "strict") is None

    config.tracking.required = False
    tracking.start_sweep(config, tmp_path / "lenient")
    parent = tracking.read_parent_file(tmp_path / "lenient")
    assert parent is not None and parent["disabled"] is True and uri in parent["reason"]
    # Its jobs then run untracked; closing the sweep has nothing to close.
    tracking.end_sweep(config, tmp_path / "lenient", {"failed": False, "jobs": []})


def test_cli_import_does_not_import_mlflow(tmp_path: Path) -> None:
    code = "import sys, runner.cli; print('mlflow' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env={**ENV, "PATH": ""}, check=True)
    assert proc.stdout.strip() == "False"


# --- one run -----------------------------------------------------------------------------------


def test_run_is_logged_with_metrics_params_artifacts_table_and_dataset(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli([*BASE, "report=html", f"output_root={out}", "+model.kwargs.api_key="
                    + CLI_SECRET, "run_name=run-${oc.env:OPENAI_API_KEY}"], cwd=tmp_path,
                   env={**ENV, "OPENAI_API_KEY": ENV_SECRET})
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = only_run_dir(out)
    metrics_json = read_json(run_dir / "metrics.json")
    cases = read_jsonl(run_dir / "cases.jsonl")

    # The default store: an explicit sqlite file under output_root, artifacts beside it.
    assert (out / "mlflow.db").is_file() and (out / "mlartifacts").is_dir()
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "mlflow.db").exists()
    uri = sqlite_uri(out)
    runs = all_runs(uri)
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "run-***"
    assert client(uri).get_experiment(run.info.experiment_id).name == "ragcite"

    # Metrics: every run-level figure of metrics.json, equal to it.
    logged = run.data.metrics
    expected = expected_metrics(metrics_json)
    assert {k: logged.get(k) for k in expected} == expected
    assert logged == tracking.metrics_from_results(metrics_json)
    assert logged["context_recall"] == pytest.approx(4 / 9)
    assert logged["labels/citation_supported"] == 2

    # Params: the flattened composed config, secrets redacted.
    params = run.data.params
    assert params["dataset.path"] == str(SEED)
    assert params["matcher._target_"] == "runner.matchers.ngram.NgramMatcher"
    assert params["matcher.threshold"] == "0.5"
    assert params["model.function"] == "tests.tracking.fake_models.stored"
    assert params["model.kwargs.api_key"] == "***"
    assert params["tracking.backend"] == "mlflow"
    assert params["experiment"] == "ragcite"

    # Tags: version, commit (this checkout is a git repository), dataset digest, lineage.
    tags = run.data.tags
    assert tags["ragcite.version"] == metrics_json["run"]["ragcite_version"]
    if (REPO / ".git").exists():
        assert len(tags["ragcite.git_commit"]) == 40
    assert tags["ragcite.dataset_digest"] == metrics_json["dataset"]["digest"]
    assert tags["ragcite.run_dir"] == str(run_dir.resolve())
    assert tags["ragcite.matcher"] == "ngram" and tags["ragcite.model"] == "python"
    (ds_input,) = run.inputs.dataset_inputs
    assert ds_input.dataset.name == metrics_json["dataset"]["name"]
    assert ds_input.dataset.digest == metrics_json["dataset"]["digest"]
    assert json.loads(ds_input.dataset.source) == {"uri": str(SEED)}

    # Artifacts: results files, report, redacted config, Hydra's record, the per-case table.
    paths = artifact_paths(uri, run.info.run_id)
    assert {"cases.jsonl", "metrics.json", "config.yaml", "report.html",
            "cases_table.json", "hydra/overrides.yaml"} <= paths
    assert download_text(uri, run.info.run_id, "metrics.json", tmp_path / "dl") == \
        (run_dir / "metrics.json").read_text(encoding="utf-8")
    table = json.loads(download_text(uri, run.info.run_id, "cases_table.json", tmp_path / "dl"))
    rows = [dict(zip(table["columns"], row)) for row in table["data"]]
    assert [r["id"] for r in rows] == [c["id"] for c in cases] == ["seed-1", "seed-2", "seed-3"]
    for row, case in zip(rows, cases):
        for key in METRIC_KEYS:
            assert row[key] == pytest.approx(case["metrics"][key])
        assert row["citation_labels"] == ", ".join(case["labels"]["citations"])
    assert json.loads(tags["mlflow.loggedArtifacts"]) == [
        {"path": "cases_table.json", "type": "table"}]
    # MLflow's own reader takes it as a table (in a child process: it searches the runs of the
    # global tracking URI).
    code = ("import sys, mlflow; mlflow.set_tracking_uri(sys.argv[1]); "
            "c = mlflow.MlflowClient(sys.argv[1]); "
            "df = c.load_table(sys.argv[3], 'cases_table.json', run_ids=[sys.argv[2]]); "
            "print(list(df['id']), list(df['n_citations']))")
    proc = subprocess.run([sys.executable, "-c", code, uri, run.info.run_id,
                           run.info.experiment_id],
                          capture_output=True, text=True, timeout=120)
    # The seed examples cite 1, 1 and 3 passages.
    assert proc.stdout.strip() == "['seed-1', 'seed-2', 'seed-3'] [1, 1, 3]", proc.stderr[-2000:]

    # No secret anywhere: params, tags, run names, the store and the artifact files.
    for secret in (CLI_SECRET, ENV_SECRET):
        for text in (*params.values(), *tags.values(), run.info.run_name):
            assert secret not in text
        for path in [out / "mlflow.db", *(out / "mlartifacts").rglob("*")]:
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path


def test_mlflow_tracking_uri_env_wins_over_the_default(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    env_uri = sqlite_uri(other)
    proc = run_cli([*BASE, f"output_root={tmp_path / 'out'}", "experiment=by-env"],
                   cwd=tmp_path, env={**ENV, "MLFLOW_TRACKING_URI": env_uri})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (tmp_path / "out" / "mlflow.db").exists()
    (run,) = all_runs(env_uri)
    assert run.info.status == "FINISHED"
    assert client(env_uri).get_experiment(run.info.experiment_id).name == "by-env"

    # ... and the config key wins over the environment.
    key_root = tmp_path / "by-key"
    key_root.mkdir()
    proc = run_cli([*BASE, f"output_root={tmp_path / 'out'}",
                    f"tracking.tracking_uri={sqlite_uri(key_root)}"],
                   cwd=tmp_path, env={**ENV, "MLFLOW_TRACKING_URI": env_uri})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(all_runs(sqlite_uri(key_root))) == 1
    assert len(all_runs(env_uri)) == 1


def test_unreachable_server_fails_before_any_model_call(tmp_path: Path) -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    marker = tmp_path / "model-called"
    args = [*BASE, "model.function=tests.tracking.fake_models.marked",
            f"output_root={tmp_path / 'out'}", f"tracking.tracking_uri={uri}",
            "tracking.timeout_s=2"]
    env = {**ENV, "RAGCITE_TEST_MARKER": str(marker)}
    proc = run_cli(args, cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "error" in line]
    assert len(errors) == 1, errors
    assert uri in errors[0] and "cannot reach" in errors[0]
    assert "Traceback" not in proc.stderr
    assert not marker.exists()
    assert not list((tmp_path / "out").rglob("metrics.json"))

    # tracking.required=false: a warning, the run completes and keeps its local outputs.
    proc = run_cli([*args, "tracking.required=false"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning" in proc.stderr and uri in proc.stderr
    assert marker.exists()
    assert len(list((tmp_path / "out").rglob("metrics.json"))) == 1


# --- sweeps ------------------------------------------------------------------------------------


def sweep_dir(root: Path) -> Path:
    (folder,) = (root / "sweeps").iterdir()
    return folder


def check_sweep(uri: str, root: Path, n_jobs: int) -> tuple[Any, list[Any]]:
    """The parent and children of the one sweep in the store, checked against the files."""
    runs = all_runs(uri)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1, [r.info.run_name for r in runs]
    parent = parents[0]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == len(runs) - 1 == n_jobs
    folder = sweep_dir(root)
    assert parent.data.tags["ragcite.sweep_dir"] == str(folder.resolve())
    assert read_json(folder / ".ragcite" / "parent_run.json")["run_id"] == parent.info.run_id
    assert {c.info.experiment_id for c in children} == {parent.info.experiment_id}
    assert "sweep.json" in artifact_paths(uri, parent.info.run_id)
    no_run_is_running(uri)
    return parent, children


@pytest.mark.slow
def test_joblib_sweep_logs_children_under_one_parent(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli(["-m", *BASE, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                    "matcher=ngram,substring", "matcher.threshold=0.3,0.7",
                    f"output_root={out}"], cwd=tmp_path, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    uri = sqlite_uri(out)
    parent, children = check_sweep(uri, out, 4)
    assert parent.info.status == "FINISHED"
    assert all(c.info.status == "FINISHED" for c in children)
    # Each child carries its own job's metrics.json; the parent the best of them.
    jobs = {str(Path(c.data.tags["ragcite.run_dir"]).name): c for c in children}
    folder = sweep_dir(out)
    assert sorted(jobs) == sorted(p.name for p in folder.iterdir()
                                  if (p / "metrics.json").is_file())
    best: dict[str, float] = {}
    for name, child in jobs.items():
        data = read_json(folder / name / "metrics.json")
        assert child.data.metrics == tracking.metrics_from_results(data)
        for key in METRIC_KEYS:
            value = data["metrics"][key]
            if value is not None and not math.isnan(value):
                best[key] = max(best.get(key, value), value)
    assert {k: parent.data.metrics[f"best/{k}"] for k in best} == best
    assert parent.data.metrics["n_jobs"] == 4 and parent.data.metrics["n_failed_jobs"] == 0
    summary = read_json(folder / "sweep.json")
    assert summary["failed"] is False and summary["n_jobs"] == 4


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_sweep_with_a_failing_job_ends_failed_and_leaves_nothing_running(
        tmp_path: Path, launcher: str) -> None:
    out = tmp_path / "out"
    missing = tmp_path / "missing.jsonl"
    proc = run_cli(["-m", *BASE, f"hydra/launcher={launcher}", f"output_root={out}",
                    "report=html", f"dataset.path={SEED},{missing}"], cwd=tmp_path, env=ENV,
                   timeout=600)
    assert proc.returncode != 0
    uri = sqlite_uri(out)
    parent, children = check_sweep(uri, out, 2)
    assert parent.info.status == "FAILED"
    assert parent.data.tags["ragcite.failed"] == "true"
    status = {c.data.params["dataset.path"]: c.info.status for c in children}
    assert status[str(missing)] == "FAILED"
    if launcher == "basic":
        assert status[str(SEED)] == "FINISHED"
        # The good job had handed its report to the next job, which failed: the sweep's end
        # still uploaded it before closing the run.
        (seed_run,) = [c for c in children if c.data.params["dataset.path"] == str(SEED)]
        assert "report.html" in artifact_paths(uri, seed_run.info.run_id)
    else:
        # Under joblib the failure can break the worker pool while the other job still runs;
        # that job then never closes its run, and the sweep's end marks it FAILED.
        assert status[str(SEED)] in ("FINISHED", "FAILED")
    assert parent.data.metrics["n_failed_jobs"] == 1


def _html_sweep(tmp_path: Path, override: str, n_jobs: int,
                returncode: int) -> tuple[Any, str, Any, list[Any]]:
    """A basic-launcher sweep with HTML reports into tmp_path/out: (process, store URI, parent
    run, children), the exit status and the runs checked against the job folders."""
    out = tmp_path / "out"
    proc = run_cli(["-m", *BASE, "report=html", override, f"output_root={out}"],
                   cwd=tmp_path, env=ENV, timeout=600)
    assert proc.returncode == returncode, proc.stderr[-3000:]
    uri = sqlite_uri(out)
    parent, children = check_sweep(uri, out, n_jobs)
    return proc, uri, parent, children


@pytest.mark.slow
def test_basic_sweep_jobs_hand_their_report_to_the_next_job(tmp_path: Path) -> None:
    # In the sweep's own process a job's report renders beside the next job; the next job (or
    # the sweep's end) uploads it and closes the job's run. Every run ends FINISHED with the
    # very report its folder holds.
    _, uri, parent, children = _html_sweep(tmp_path, "matcher.threshold=0.2,0.5,0.8",
                                           n_jobs=3, returncode=0)
    assert parent.info.status == "FINISHED"
    folder = sweep_dir(tmp_path / "out")
    for child in children:
        assert child.info.status == "FINISHED"
        job = Path(child.data.tags["ragcite.run_dir"])
        got = download_text(uri, child.info.run_id, "report.html", tmp_path / child.info.run_id)
        assert got == (job / "report.html").read_text(encoding="utf-8")
        # Each report is its own job's: the threshold in the page's metadata.
        assert f'"threshold":{child.data.params["matcher.threshold"]}' in got
    summary = read_json(folder / "sweep.json")
    assert (summary["failed"], summary["failed_after_results"]) == (False, [])


@pytest.mark.slow
def test_a_job_whose_deferred_report_fails_fails_the_sweep_not_the_next_job(
        tmp_path: Path) -> None:
    # report.page_size=0 is refused when the report renders: the first job's report fails
    # after its results were written, while the second job runs. That job's run must still
    # finish; the first job's run ends FAILED, the sweep fails (exit 1) and names the job.
    proc, uri, parent, children = _html_sweep(tmp_path, "report.page_size=0,50", n_jobs=2,
                                              returncode=1)
    assert parent.info.status == "FAILED"
    status = {c.data.params["report.page_size"]: c for c in children}
    bad, good = status["0"], status["50"]
    assert bad.info.status == "FAILED" and good.info.status == "FINISHED"
    bad_dir = Path(bad.data.tags["ragcite.run_dir"])
    good_dir = Path(good.data.tags["ragcite.run_dir"])
    assert not (bad_dir / "report.html").exists()
    assert "report.html" not in artifact_paths(uri, bad.info.run_id)
    assert "report.html" in artifact_paths(uri, good.info.run_id)
    assert (good_dir / "report.html").is_file()
    summary = read_json(sweep_dir(tmp_path / "out") / "sweep.json")
    assert summary["failed"] is True
    assert summary["failed_after_results"] == [bad_dir.name]
    assert summary["incomplete_jobs"] == []  # its results are whole; only the report failed
    assert f"job {bad_dir}: the HTML report of {bad_dir} failed" in proc.stderr
    assert "report.page_size must be at least 1" in proc.stderr
    no_run_is_running(uri)


@pytest.mark.slow
def test_ctrl_c_stops_a_sweep_with_one_line_and_leaves_nothing_running(tmp_path: Path) -> None:
    # SIGINT while the first job's model answers: exit 130 and "ragcite: interrupted", no
    # traceback; the sweep has no sweep.json and its job no metrics.json (nothing looks
    # complete), and no MLflow run is left RUNNING.
    import os
    import signal

    out, marker = tmp_path / "out", tmp_path / "called"
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner.cli", "-m", *BASE, "model.function=tests.tracking."
         "fake_models.held", "matcher.threshold=0.3,0.6", f"output_root={out}"],
        cwd=tmp_path, env={**os.environ, **ENV, "RAGCITE_TEST_MARKER": str(marker)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the model was never called"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert err.rstrip().endswith("ragcite: interrupted") and "Traceback" not in err
    folder = sweep_dir(out)
    assert not (folder / "sweep.json").exists()
    assert [p.name for p in folder.glob("*/metrics.json")] == []
    no_run_is_running(sqlite_uri(out))

"""MLflow tracking of result folders and sweeps, read back with the MLflow client (real sqlite)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.errors import RagciteError
from runner.results import CASES_FILE, PASSAGES_FILE, iter_records, read_result
from runner.sweep import start_tracking
from runner.tracking import mlflow_sweep as sweeps
from runner.tracking.flatten import METRIC_KEYS, flatten_params, metrics_from_results
from runner.tracking.mlflow import read_config
from runner.tracking.table import TABLE_COLUMNS, TABLE_FILE
from tests.tracking.conftest import (
    ENV,
    MLFLOW_TARGET,
    all_runs,
    artifact_paths,
    client,
    download_bytes,
    download_text,
    free_port,
    mlflow_tracker,
    sqlite_uri,
    track,
)
from tests.tracking.jobs import DIGEST, RECALL, make_job

ENV_SECRET = "sk-test-env-secret-8910"
# What each threshold's run holds; the job's first also its passages and the case table.
RESULT_FILES = {"metrics.json", CASES_FILE, "config.yaml"}
JOB_FILES = {PASSAGES_FILE, TABLE_FILE}


def sweep_config(uri: str, root: Path, **tracking: Any) -> Any:
    """A sweep-level config, as the sweep hands it over."""
    from omegaconf import OmegaConf

    return OmegaConf.create({
        "tracking": {"_target_": MLFLOW_TARGET, "tracking_uri": uri, **tracking},
        "experiment": "sweeps", "output_root": str(root), "run_name": None,
        "hydra": {"overrides": {"task": ["scoring.threshold=0.15,0.3,0.8"]},
                  "sweeper": {"params": {"model": "python"}}}})


def no_run_is_running(uri: str) -> None:
    assert [r.info.run_name for r in all_runs(uri) if r.info.status == "RUNNING"] == []


def test_a_result_folder_is_one_run_with_its_params_metrics_tags_and_artifacts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A secret from the environment made its way into config.yaml: it is scrubbed everywhere.
    monkeypatch.setenv("OPENAI_API_KEY", ENV_SECRET)
    (folder,) = make_job(tmp_path / "job", [0.3], levels=["default"], secret=ENV_SECRET,
                         report=True)
    assert folder == tmp_path / "job"
    uri = sqlite_uri(tmp_path / "out")
    tracker = mlflow_tracker(uri, tmp_path / "out", experiment="exp")
    assert track(tracker, [folder]) == [None]  # a local store has no UI to link to

    (run,) = all_runs(uri)
    run_id = run.info.run_id
    assert (run.info.status, run.info.run_name) == ("FINISHED", "trio_python_ngram_t0.3")
    assert client(uri).get_experiment(run.info.experiment_id).name == "exp"
    data = read_result(folder)
    assert run.data.metrics == metrics_from_results(data)
    assert {k: run.data.metrics[k] for k in ("context_recall", "threshold", "gates/passed",
                                             "execution/timings/score_s", "usage/model/cost_usd",
                                             "n_cases")} == {
        "context_recall": pytest.approx(2 / 3), "threshold": 0.3, "gates/passed": 1.0,
        "execution/timings/score_s": 0.25, "usage/model/cost_usd": 0.25, "n_cases": 3.0}
    params = run.data.params
    assert params == flatten_params(read_config(folder / "config.yaml"))
    assert (params["scoring.threshold"], params["model.api_key"], params["matcher.n"]) == (
        "0.3", "***", "3")
    tags = run.data.tags
    assert {k: tags[k] for k in (
        "ragcite.threshold", "ragcite.threshold_level", "ragcite.threshold_index",
        "ragcite.dataset_digest", "ragcite.dataset", "ragcite.model", "ragcite.matcher",
        "ragcite.complete", "ragcite.gates_passed", "ragcite.passages_run_id",
        "ragcite.result_dir", "ragcite.job_dir", "ragcite.version")} == {
        "ragcite.threshold": "0.3", "ragcite.threshold_level": "default",
        "ragcite.threshold_index": "0", "ragcite.dataset_digest": DIGEST,
        "ragcite.dataset": "trio", "ragcite.model": "python", "ragcite.matcher": "ngram",
        "ragcite.complete": "true", "ragcite.gates_passed": "true",
        "ragcite.passages_run_id": run_id, "ragcite.result_dir": str(folder.resolve()),
        "ragcite.job_dir": str(folder.resolve()), "ragcite.version": data["run"][
            "ragcite_version"]}
    assert "mlflow.parentRunId" not in tags
    assert artifact_paths(uri, run_id) == RESULT_FILES | JOB_FILES | {"report.html"}
    for name in ("metrics.json", CASES_FILE, PASSAGES_FILE, "report.html"):
        assert download_bytes(uri, run_id, name, tmp_path / "dl") == (folder / name).read_bytes()
    config = download_text(uri, run_id, "config.yaml", tmp_path / "dl")
    assert ENV_SECRET not in config and "api_key: '***'" in config
    (ds_input,) = run.inputs.dataset_inputs
    assert (ds_input.dataset.name, ds_input.dataset.digest) == ("trio", DIGEST)
    for path in [tmp_path / "out" / "mlflow.db", *(tmp_path / "out").rglob("*")]:
        if path.is_file():
            assert ENV_SECRET.encode() not in path.read_bytes(), path


def test_a_job_of_three_thresholds_under_a_sweep_is_three_child_runs_sharing_passages(
        tmp_path: Path) -> None:
    uri = sqlite_uri(tmp_path / "out")
    sweep = tmp_path / "sweep"
    config = sweep_config(uri, tmp_path / "out")
    sweep_tracker = start_tracking(config, sweep)
    parent_file = sweeps.read_parent_file(sweep)
    assert parent_file is not None
    dirs = make_job(sweep / "0_python_ngram", [0.15, 0.3, 0.8],
                    levels=["lenient", None, "strict"])
    assert [d.name for d in dirs] == ["t0.15", "t0.3", "t0.8"]
    assert track(mlflow_tracker(uri, tmp_path / "out", experiment="sweeps"), dirs) == \
        [None] * 3

    runs = all_runs(uri)
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = sorted((r for r in runs
                       if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id),
                      key=lambda r: r.info.run_name)
    assert parent.info.run_id == parent_file["run_id"] and len(runs) == 4
    assert [c.info.run_name for c in children] == [
        "trio_python_ngram_t0.15", "trio_python_ngram_t0.3", "trio_python_ngram_t0.8"]
    holder = children[0].info.run_id
    for child, folder, value in zip(children, dirs, (0.15, 0.3, 0.8)):
        assert child.info.status == "FINISHED"
        assert child.data.params == flatten_params(read_config(folder / "config.yaml"))
        assert child.data.params["scoring.threshold"] == f"{value:g}"
        assert child.data.metrics == metrics_from_results(read_result(folder))
        assert child.data.metrics["context_recall"] == pytest.approx(RECALL[value])
        assert child.data.metrics["threshold"] == value
        assert child.data.tags["ragcite.passages_run_id"] == holder
        assert child.data.tags["ragcite.job_dir"] == str((sweep / "0_python_ngram").resolve())
        assert child.data.tags["ragcite.sweep_dir"] == str(sweep.resolve())
        assert download_bytes(uri, child.info.run_id, CASES_FILE, tmp_path / "dl") == \
            (folder / CASES_FILE).read_bytes()
    assert [c.data.tags.get("ragcite.threshold_level") for c in children] == [
        "lenient", None, "strict"]
    # The passages and the case table are logged once, with the job's first threshold.
    assert [artifact_paths(uri, c.info.run_id) for c in children] == [
        RESULT_FILES | JOB_FILES, RESULT_FILES, RESULT_FILES]
    assert [c.data.tags.get("mlflow.loggedArtifacts") for c in children] == [
        json.dumps([{"path": TABLE_FILE, "type": "table"}]), None, None]
    # The dataset lineage too: logged once, with the run that holds the passages.
    assert [len(c.inputs.dataset_inputs) for c in children] == [1, 0, 0]
    assert download_bytes(uri, holder, PASSAGES_FILE, tmp_path / "dl") == \
        (sweep / "0_python_ngram" / PASSAGES_FILE).read_bytes()

    (sweep / "sweep.json").write_text('{"schema_version": 2}\n', encoding="utf-8")
    sweep_tracker.end_sweep(sweep, {
        "schema_version": 2, "sweep_dir": str(sweep), "failed": False, "n_jobs": 1,
        "incomplete_jobs": [],
        "jobs": [{"dir": f"0_python_ngram/{d.name}", "job": "0_python_ngram", "num": 0,
                  "complete": True, "metrics": read_result(d)} for d in dirs],
        "best": {"context_recall": {"dir": "0_python_ngram/t0.15", "value": 1.0},
                 "source_f1": {"dir": "0_python_ngram/t0.15", "value": 1.0}}}, "FINISHED")
    parent = client(uri).get_run(parent.info.run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics == {"best/context_recall": 1.0, "best/source_f1": 1.0,
                                   "n_jobs": 1.0, "n_results": 3.0, "n_complete_results": 3.0,
                                   "n_failed_jobs": 0.0}
    assert parent.data.tags["ragcite.best.context_recall"] == "0_python_ngram/t0.15"
    assert (parent.data.tags["ragcite.failed"], parent.data.tags["ragcite.kind"]) == (
        "false", "sweep")
    assert parent.data.params == {"sweep.overrides": '["scoring.threshold=0.15,0.3,0.8"]',
                                  "sweep.params.model": "python"}
    assert artifact_paths(uri, parent.info.run_id) == {"sweep.json"}


def test_the_per_case_table_is_read_by_mlflow_as_a_table(tmp_path: Path) -> None:
    (folder,) = make_job(tmp_path / "job", [0.3])
    uri = sqlite_uri(tmp_path / "out")
    track(mlflow_tracker(uri, tmp_path / "out"), [folder])
    (run,) = all_runs(uri)
    assert json.loads(run.data.tags["mlflow.loggedArtifacts"]) == [
        {"path": TABLE_FILE, "type": "table"}]
    table = json.loads(download_text(uri, run.info.run_id, TABLE_FILE, tmp_path / "dl"))
    assert table == {"columns": list(TABLE_COLUMNS), "data": [
        [r["id"], r["query"], "", 1, 1, *(r["metrics"][k] for k in METRIC_KEYS),
         ", ".join(r["labels"]["citations"]), ", ".join(r["labels"]["references"]), None]
        for r in iter_records(folder)]}
    assert [row[0] for row in table["data"]] == ["exact", "mixed", "few"]
    assert [row[5] for row in table["data"]] == [1.0, 1.0, 0.0]  # context recall at 0.3
    # MLflow's own reader takes it as a table (in a child process: it searches the runs of the
    # global tracking URI).
    code = ("import sys, mlflow; mlflow.set_tracking_uri(sys.argv[1]); "
            "df = mlflow.MlflowClient(sys.argv[1]).load_table(sys.argv[3], sys.argv[4], "
            "run_ids=[sys.argv[2]]); "
            "print(list(df['id']), list(df['n_citations']))")
    proc = subprocess.run([sys.executable, "-c", code, uri, run.info.run_id,
                           run.info.experiment_id, TABLE_FILE],
                          capture_output=True, text=True, timeout=120, env={**os.environ, **ENV})
    assert proc.stdout.strip() == "['exact', 'mixed', 'few'] [1, 1, 1]", proc.stderr[-2000:]


def test_runs_of_a_job_are_open_at_once_and_each_ends_as_it_is_closed(
        tmp_path: Path) -> None:
    dirs = make_job(tmp_path / "job", [0.15, 0.3, 0.8])
    uri = sqlite_uri(tmp_path / "out")
    tracker = mlflow_tracker(uri, tmp_path / "out")
    tracker.check()
    tracker.open(dirs[0])
    tracker.close("FAILED", dirs[0])
    tracker.open(dirs[1])
    tracker.open(dirs[1])  # opened again: the run left open for that folder ends FAILED
    tracker.open(dirs[2])
    tracker.log(dirs[2])
    tracker.close("FINISHED", dirs[2])
    tracker.close("KILLED")  # every run still open
    tracker.close("FINISHED")  # nothing open: nothing to do
    assert sorted((r.info.run_name, r.info.status) for r in all_runs(uri)) == [
        ("trio_python_ngram_t0.15", "FAILED"), ("trio_python_ngram_t0.3", "FAILED"),
        ("trio_python_ngram_t0.3", "KILLED"), ("trio_python_ngram_t0.8", "FINISHED")]


def test_a_job_page_for_every_threshold_is_logged_once_with_the_first_run(
        tmp_path: Path) -> None:
    dirs = make_job(tmp_path / "job", [0.15, 0.3])
    (tmp_path / "job" / "report.html").write_text("<p>both thresholds</p>", encoding="utf-8")
    uri = sqlite_uri(tmp_path / "out")
    track(mlflow_tracker(uri, tmp_path / "out"), dirs)
    first, second = sorted(all_runs(uri), key=lambda r: r.info.run_name)
    assert artifact_paths(uri, first.info.run_id) == RESULT_FILES | JOB_FILES | {"report.html"}
    assert artifact_paths(uri, second.info.run_id) == RESULT_FILES
    assert download_text(uri, first.info.run_id, "report.html", tmp_path / "dl") == \
        "<p>both thresholds</p>"


def test_an_unreachable_server_fails_up_front_or_is_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    (folder,) = make_job(tmp_path / "job", [0.3])
    with pytest.raises(RagciteError) as exc:
        mlflow_tracker(uri, tmp_path, timeout_s=2).check()
    assert str(exc.value) == (
        f"tracking: cannot reach the MLflow tracking server at {uri} ([Errno 111] Connection "
        f"refused; timeout 2 s) (set tracking.required=false to run without it, or "
        f"tracking=none)")
    lenient = mlflow_tracker(uri, tmp_path, timeout_s=2, required=False)
    with caplog.at_level(logging.WARNING, logger="ragcite"):
        assert track(lenient, [folder]) == [None]
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith("ragcite: warning: tracking: cannot reach the MLflow tracking "
                              f"server at {uri}")
    assert lenient.disabled


def test_a_sweep_with_an_unreachable_server_stops_or_runs_untracked(tmp_path: Path) -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    config = sweep_config(uri, tmp_path, timeout_s=2)
    with pytest.raises(RagciteError, match=f"cannot reach the MLflow tracking server at {uri}"):
        start_tracking(config, tmp_path / "strict")
    assert sweeps.read_parent_file(tmp_path / "strict") is None

    config.tracking.required = False
    lenient = start_tracking(config, tmp_path / "lenient")
    parent = sweeps.read_parent_file(tmp_path / "lenient")
    assert parent is not None and parent["disabled"] is True and uri in parent["reason"]
    # Its jobs then run untracked, even on a store that works; closing has nothing to close.
    dirs = make_job(tmp_path / "lenient" / "0_job", [0.3])
    local = sqlite_uri(tmp_path / "out")
    assert track(mlflow_tracker(local, tmp_path / "out"), dirs) == [None]
    assert all_runs(local) == []
    lenient.end_sweep(tmp_path / "lenient", {"failed": False, "jobs": []}, "FINISHED")


def _sweep_with_runs(tmp_path: Path) -> tuple[str, Any, Any, Any, Any]:
    """A sweep's parent with a child left RUNNING and one FINISHED."""
    uri = sqlite_uri(tmp_path)
    c = client(uri)
    exp = c.create_experiment("e", artifact_location=(tmp_path / "art").as_uri())
    parent = c.create_run(exp, run_name="sweep")
    child = c.create_run(exp, run_name="job", tags={"mlflow.parentRunId": parent.info.run_id})
    done = c.create_run(exp, run_name="job2", tags={"mlflow.parentRunId": parent.info.run_id})
    c.set_terminated(done.info.run_id, "FINISHED")
    sweeps.write_parent_file(tmp_path, {"run_id": parent.info.run_id, "tracking_uri": uri,
                                       "experiment_id": exp})
    return uri, c, parent, child, done


def test_end_sweep_fails_children_left_running_and_the_parent(tmp_path: Path) -> None:
    uri, c, parent, child, done = _sweep_with_runs(tmp_path)
    (tmp_path / "sweep.json").write_text("{}\n", encoding="utf-8")
    summary = {"schema_version": 2, "failed": True, "n_jobs": 2, "incomplete_jobs": ["1_b"],
               "jobs": [{"dir": "0_a", "job": "0_a", "complete": True,
                         "metrics": {"metrics": {"context_f1": 0.5}}}],
               "best": {"context_f1": {"dir": "0_a", "value": 0.5}}}
    mlflow_tracker(uri, tmp_path).end_sweep(tmp_path, summary, "FAILED")
    assert c.get_run(child.info.run_id).info.status == "FAILED"
    assert c.get_run(done.info.run_id).info.status == "FINISHED"
    run = c.get_run(parent.info.run_id)
    assert run.info.status == "FAILED"
    assert run.data.metrics == {"best/context_f1": 0.5, "n_jobs": 2.0, "n_results": 1.0,
                                "n_complete_results": 1.0, "n_failed_jobs": 1.0}
    assert (run.data.tags["ragcite.best.context_f1"], run.data.tags["ragcite.failed"]) == (
        "0_a", "true")
    assert artifact_paths(uri, parent.info.run_id) == {"sweep.json"}


def test_an_interrupted_sweep_is_closed_killed(tmp_path: Path) -> None:
    uri, c, parent, child, done = _sweep_with_runs(tmp_path)
    tracker = mlflow_tracker(uri, tmp_path)
    tracker.end_sweep(tmp_path, {"failed": True}, "KILLED")
    assert [c.get_run(r.info.run_id).info.status for r in (parent, child, done)] == [
        "KILLED", "KILLED", "FINISHED"]
    no_run_is_running(uri)
    tracker.end_sweep(tmp_path / "nowhere", {}, "KILLED")  # no parent file: nothing to do


def test_a_ui_url_gives_the_report_a_link_to_the_run(tmp_path: Path) -> None:
    (folder,) = make_job(tmp_path / "job", [0.3])
    uri = sqlite_uri(tmp_path / "out")
    (link,) = track(mlflow_tracker(uri, tmp_path / "out", ui_url="http://ui.example:5000/"),
                    [folder])
    (run,) = all_runs(uri)
    assert link == f"http://ui.example:5000/#/experiments/{run.info.experiment_id}/runs/" \
                   f"{run.info.run_id}"


@pytest.mark.slow
@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_a_stopped_sweep_says_so_in_one_line_and_leaves_nothing_running(
        tmp_path: Path, signum: str) -> None:
    # Ctrl-C (SIGINT) or SIGTERM while the first job's model answers: exit 130 and
    # "ragcite: interrupted", no traceback; no job has a job.json, sweep.json says the sweep
    # failed with its job incomplete, and no MLflow run is left RUNNING.
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import read_json
    from tests.helpers import FIXTURES, wait_until

    out, marker = tmp_path / "out", tmp_path / "called"
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner.cli", "-m", "dataset=file",
         f"dataset.path={FIXTURES / 'seed_examples.jsonl'}", "model=python",
         "model.function=tests.tracking.fake_models.held", "scoring.threshold=0.3,0.6",
         "progress=false", "report=none", f"output_root={out}"],
        cwd=tmp_path, env={**os.environ, **ENV, "RAGCITE_TEST_MARKER": str(marker)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(marker.exists, "the model's first call", proc)
        proc.send_signal(getattr(signal, signum))
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert err.rstrip().endswith("ragcite: interrupted") and "Traceback" not in err
    (folder,) = (out / "sweeps").iterdir()
    assert list(folder.glob("*/job.json")) == []
    summary = read_json(folder / "sweep.json")
    assert (summary["failed"], summary["n_results"]) == (True, 0)
    assert summary["incomplete_jobs"] == ["0_python-held_ngram"]
    no_run_is_running(sqlite_uri(out))


def test_opening_the_store_runs_no_collection_and_freezes_what_it_imported(
        tmp_path: Path) -> None:
    """Opening the store imports MLflow (about 600,000 objects living as long as the process):
    no collection runs meanwhile (four full ones did: 0.2 s), and what it made is frozen, so no
    later collection walks it before the job's end."""
    code = ("import gc, sys\n"
            "seen = []\n"
            "gc.callbacks.append(lambda phase, info: phase == 'start' and seen.append(info))\n"
            "from runner.tracking.mlflow import MlflowTracker\n"
            "tracker = MlflowTracker(tracking_uri=sys.argv[1])\n"
            "before = len(seen)\n"
            "tracker.check()\n"
            "tracked = {id(o) for o in gc.get_objects()}\n"
            "print(len(seen) - before, id(sys.modules['mlflow'].__dict__) in tracked,\n"
            "      id(sys.modules['sqlalchemy'].__dict__) in tracked)\n")
    out = subprocess.run([sys.executable, "-c", code, f"sqlite:///{tmp_path / 'm.db'}"],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.split() == ["0", "False", "False"]

"""The real ``ragcite-calibrate`` (``ragcite mode=calibrate``) in a subprocess on the
hand-labelled fixture: exact calibration.json values (worked out in
tests/calibration/conftest.py), one-line errors with ragcite's exit statuses, the MLflow run,
and ``-m matcher=...`` with the sweep's summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.calibration.conftest import FIXTURE, ULP
from tests.conftest import run_cli

pytestmark = pytest.mark.slow
MODULE = "runner.calibration.app"
FEW = "too few labels: 5 true and 5 false pairs; a recommendation needs at least 10 of each"


def calibrate(tmp_path: Path, *args: str, expect: int = 0) -> tuple[Path, Any]:
    proc = run_cli([*args, f"output_root={tmp_path / 'out'}"], cwd=tmp_path, module=MODULE)
    assert proc.returncode == expect, proc.stderr[-3000:]
    return tmp_path / "out" / "calibrations", proc


def only(folder: Path) -> Path:
    found = sorted(p for p in folder.iterdir() if p.is_dir())
    assert len(found) == 1, found
    return found[0]


def test_the_fixture_gives_the_hand_computed_figures(tmp_path: Path) -> None:
    root, proc = calibrate(tmp_path, f"calibrate.labels={FIXTURE}", "matcher=ngram",
                           "matcher.n=1", "tracking=none")
    folder = only(root)
    assert folder.name.endswith("_ngram")
    data = json.loads((folder / "calibration.json").read_text(encoding="utf-8"))
    m = data["matchers"]["ngram"]
    assert (m["auc"], m["threshold"], m["threshold_level"]) == (0.78, 0.5, "default")
    assert (m["balanced_accuracy"], m["recall"], m["precision"], m["f1"], m["kappa"]) == (
        ULP(0.6), 0.8, 4 / 7, 2 / 3, ULP(0.2))  # tests/calibration/test_metrics.py: ULP
    assert (m["best_threshold"], m["best_balanced_accuracy"]) == (0.75, 0.7)
    assert m["counts"] == {"tp": 4, "fp": 3, "tn": 2, "fn": 1, "n_pos": 5, "n_neg": 5}
    # Ten labels cannot support a recommendation (tests/calibration/test_recommendation.py).
    assert m["paste"] == 0.75 and m["ready"] is None
    assert m["withheld"] == FEW
    assert data["labels"]["n_records"] == 10 and data["agreement"] is None
    # The pairs most wrong: the farthest from 0.5 first (pair 4 at 0.75, pair 8 at 0.25, then
    # the two false pairs at 0.5).
    assert [(w["case_id"], w["similarity"], w["label"]) for w in m["worst"]] == [
        ("c2", 0.75, False), ("c4", 0.25, True), ("c3", 0.5, False), ("c4", 0.5, False)]
    for key, (lo, hi) in m["intervals"].items():
        assert lo <= m[key] <= hi, key
    assert f"no threshold recommended: {FEW}" in proc.stderr.splitlines()
    assert "use it" not in proc.stderr
    # The same seed gives the same intervals.
    (tmp_path / "again").mkdir()
    root2, _ = calibrate(tmp_path / "again", f"calibrate.labels={FIXTURE}", "matcher.n=1",
                         "tracking=none")
    again = json.loads((only(root2) / "calibration.json").read_text(encoding="utf-8"))
    assert again["matchers"]["ngram"]["intervals"] == m["intervals"]


def test_the_ready_line_is_a_threshold_ragcite_accepts(compose_cfg: Any) -> None:
    from runner.cli import canonical_args

    args = canonical_args(["matcher=ngram", "matcher.n=1", "threshold=0.75"])
    cfg = compose_cfg(*args)
    assert cfg.scoring.threshold == 0.75 and cfg.matcher.n == 1


@pytest.mark.parametrize(("args", "files", "line"), [
    (["calibrate.labels=null"], {}, "ragcite: error: calibrate.labels: give the labelled "
                                    "pairs, e.g. calibrate.labels=labels.jsonl "
                                    "(docs/calibration.md)"),
    (["calibrate.labels=l.jsonl"], {"l.jsonl": '{"reference": "a", "citation": "b", '
                                               '"label": true}\n'
                                     '{"reference": "a", "citation": "b", "label": "yes"}\n'},
     "ragcite: error: l.jsonl, line 2, field 'label': Input should be a valid boolean "
     "(got 'yes')"),
    (["calibrate.labels=missing.jsonl"], {}, "ragcite: error: missing.jsonl: file not found"),
    (["calibrate.labels=l.csv"], {"l.csv": "reference,citation,label\na,b,maybe\n"},
     "ragcite: error: l.csv, line 2, field 'label': Input should be a valid boolean "
     "(got 'maybe')"),
    ([f"calibrate.labels={FIXTURE}", "scoring.threshold=[0.3,0.5]"], {},
     "ragcite: error: scoring.threshold: a calibration takes one threshold, got 2; "
     "the best one is found for you (best_threshold)"),
    ([f"calibrate.labels={FIXTURE}", "threshold=1.5"], {},
     "ragcite: error: scoring.threshold: 1.5 is outside [0, 1], the similarities "
     "this matcher gives"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                          files: dict[str, str], line: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    _, proc = calibrate(tmp_path, *args, "tracking=none", expect=2)
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert lines == [line]


def test_a_tracked_calibration_is_an_mlflow_run_with_the_figures_and_both_files(
        tmp_path: Path) -> None:
    root, _ = calibrate(tmp_path, f"calibrate.labels={FIXTURE}", "matcher.n=1")
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("ragcite-calibration")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    metrics = runs[0].data.metrics
    assert (metrics["auc"], metrics["best_threshold"], metrics["count_tp"]) == (0.78, 0.75, 4)
    assert runs[0].data.params["matcher.n"] == "1"
    names = {a.path for a in client.list_artifacts(runs[0].info.run_id)}
    assert {"calibration.json", "calibration.html"} <= names
    assert only(root).is_dir()


@pytest.mark.parametrize("required", [True, False])
def test_a_store_that_refuses_the_calibration_is_one_line_and_its_files_stay(
        tmp_path: Path, required: bool) -> None:
    # The store opens, but its artifact location is under a file: logging fails as for a run,
    # the run ends FAILED and the calibration's files stay (job.json only when it goes on).
    (tmp_path / "afile").write_text("x\n", encoding="utf-8")
    root, proc = calibrate(tmp_path, f"calibrate.labels={FIXTURE}", "matcher.n=1",
                           "progress=false", f"tracking.artifact_location={tmp_path}/afile/art",
                           f"tracking.required={str(required).lower()}",
                           expect=2 if required else 0)
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("ragcite-calibration")
    assert [r.info.status for r in client.search_runs([exp.experiment_id])] == ["FAILED"]
    problem = (f"tracking: cannot log the results to {uri}: NotADirectoryError: [Errno 20] Not a "
               f"directory: '{tmp_path}/afile/art'")
    lines = [x for x in proc.stderr.splitlines() if x.startswith("ragcite:")]
    assert lines == ([f"ragcite: error: {problem}"] if required else [
        f"ragcite: warning: {problem}; continuing without MLflow tracking (results stay in the "
        "run folder)"])
    files = {p.name for p in only(root).iterdir()}
    assert {"calibration.json", "calibration.html"} <= files
    assert ("job.json" in files) is not required


def test_a_tracked_calibration_leaves_no_secret_in_its_run_nor_any_file(tmp_path: Path) -> None:
    # An env key read into the run's name, a key among the tracker's tags: both reach the
    # MLflow run only as ***, and no file under the folder (the store, the artifacts) holds them.
    from mlflow import MlflowClient

    from tests.test_secrets import KEY, TOKEN, search_tree

    proc = run_cli([f"calibrate.labels={FIXTURE}", "matcher.n=1", "run_name=cal-${oc.env:"
                    "OPENAI_API_KEY}", f"+tracking.tags.token={TOKEN}",
                    f"output_root={tmp_path / 'out'}"], cwd=tmp_path, module=MODULE,
                   env={"OPENAI_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name(
        "ragcite-calibration").experiment_id])
    assert (run.info.run_name, run.data.tags["token"]) == ("cal-***", "***")
    for secret in (KEY, TOKEN):
        assert secret not in proc.stdout + proc.stderr
        files, _ = search_tree(tmp_path, secret)
    assert {"mlflow.db", "calibration.json", "calibration.html"} <= {p.name for p in files}


def test_matchers_compared_on_the_same_labels(tmp_path: Path) -> None:
    root, _ = calibrate(tmp_path, "-m", "matcher=substring,ngram",
                        f"calibrate.labels={FIXTURE}", "tracking=none")
    sweep = only(root)
    # The one sweep summary, as for runs: sweep.json, each job's calibration as its result.
    summary = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
    assert (summary["n_jobs"], summary["n_results"], summary["failed"]) == (2, 2, False)
    rows = {name: m for job in summary["jobs"] for name, m in job["metrics"]["matchers"].items()}
    # substring: only pair 1 is contained (1.0), the rest 0.0. Positives at 1.0: 1, at 0: 4;
    # negatives at 0: 5. U = 5 + 4·(5·½) = 15 → AUC 0.6. At its threshold 1.0: tp 1, tn 5,
    # fn 4: BA (0.2 + 1)/2 = 0.6, κ = 2(1·5 − 4·0)/(1·5 + 5·9) = 0.2. Best: (0, 1] → 0.5.
    sub = rows["substring"]
    assert (sub["auc"], sub["threshold"], sub["balanced_accuracy"], sub["kappa"]) == (
        0.6, 1.0, 0.6, ULP(0.2))
    assert (sub["best_threshold"], sub["best_balanced_accuracy"]) == (0.5, 0.6)
    assert rows["ngram"]["threshold"] == 0.5  # ngram with n=3: every 4-word text differs
    assert [job["threshold"] for job in summary["jobs"]] == [
        {"value": 1.0, "level": "default"}, {"value": 0.5, "level": "default"}]
    assert summary["incomplete_jobs"] == [] and summary["best"] == {}
    # Its title names what was swept (the sweep's name), not a time stamp.
    page = (sweep / "calibration_summary.html").read_text(encoding="utf-8")
    assert f"<title>Calibration summary: {summary['name']}</title>" in page
    assert summary["name"] == "demo · extractive · sweep matcher"

"""Runs you can tell apart: the system under test names run folders, runs, sweep jobs, MLflow
runs (tag ``ragcite.system``), sweep parents and comparisons (runner/config/naming.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from runner.config.naming import model_text, safe_name, system_label, system_name
from runner.reports.compare_load import side_names
from runner.sweep import sweep_name
from tests.conftest import REPO, read_json, run_cli
from tests.tracking.conftest import all_runs

ENV = {"PYTHONPATH": str(REPO)}
STAMP = r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d-\d{6}-[0-9a-f]{4}"


@pytest.mark.parametrize(("model", "choice", "system", "label"), [
    ({"system": "loose_quotes", "responses": None}, "precomputed", "loose_quotes",
     "precomputed-loose_quotes"),
    ({"system": None, "responses": None}, "precomputed", "mostly_right",
     "precomputed-mostly_right"),  # the dataset's default_system
    ({"system": "x", "responses": "runs/april/answers.v2.jsonl"}, "precomputed", "answers.v2",
     "precomputed-answers.v2"),
    ({"url": "http://user:pw@rag.local:8080/ask"}, "http", "rag.local:8080",
     "http-rag.local_8080"),
    ({"model": "meta-llama/Llama-3.1-8B", "base_url": "http://127.0.0.1:8000/v1"}, "openai",
     "meta-llama/Llama-3.1-8B", "openai-meta-llama_Llama-3.1-8B"),
    ({"function": "my_pkg.rag.answer"}, "python", "answer", "python-answer"),
    ({"top_k": 3}, "extractive", "extractive", "extractive"),
])
def test_the_system_of_each_kind_of_model(model: dict[str, object], choice: str, system: str,
                                          label: str) -> None:
    assert system_name(model, {"default_system": "mostly_right"}, choice) == system
    assert system_label(choice, system) == label


def test_safe_names() -> None:
    assert safe_name("a/b c:d") == "a_b_c_d"
    assert safe_name("../..") == "_"
    assert safe_name("x" * 80) == "x" * 60
    assert model_text({"name": "precomputed", "system": "wrong_passages"}) == \
        "precomputed · wrong_passages"
    assert model_text({"name": "extractive", "system": "extractive"}) == "extractive"


def _side(model: str, system: str, matcher: str, threshold: float,
          **config: str) -> tuple[dict[str, object], dict[str, str]]:
    metrics = {"dataset": {"name": "demo"}, "model": {"name": model, "system": system},
               "matcher": {"name": matcher}, "threshold": {"value": threshold, "level": None}}
    flat = {"dataset.name": "demo", "model.system": system, "matcher.n": "3",
            "output_root": "elsewhere", "scoring.threshold": str(threshold), **config}
    return metrics, flat


def test_sides_are_named_by_what_differs() -> None:
    a = _side("precomputed", "loose_quotes", "ngram", 0.5)
    assert side_names(a, _side("precomputed", "wrong_passages", "ngram", 0.5)) == (
        "system=loose_quotes", "system=wrong_passages")
    assert side_names(a, _side("precomputed", "loose_quotes", "substring", 0.5)) == (
        "matcher=ngram", "matcher=substring")
    assert side_names(a, _side("precomputed", "loose_quotes", "ngram", 0.3,
                               **{"scoring.zero_division": "nan"})) == (
        "threshold=0.5 scoring.zero_division=—", "threshold=0.3 scoring.zero_division=nan")
    assert side_names(a, a) is None


def _sweep_config(overrides: list[str], params: dict[str, str] | None = None,
                  system: str | None = None) -> object:
    return OmegaConf.create({
        "model": {"system": system, "responses": None},
        "dataset": {"default_system": "mostly_right"},
        "hydra": {"overrides": {"task": overrides}, "sweeper": {"params": params or {}},
                  "runtime": {"choices": {"dataset": "demo", "model": "precomputed"}}}})


def test_sweep_parents_say_what_is_swept() -> None:
    assert sweep_name(_sweep_config(["matcher=substring,ngram", "threshold=strict,lenient",
                                     "model=precomputed", "model.system=loose_quotes"],
                                    system="loose_quotes")) == \
        "demo · precomputed · loose_quotes · sweep matcher×threshold"
    assert sweep_name(_sweep_config(["sweep=systems"],
                                    {"model.system": "wrong_documents,mostly_right"})) == \
        "demo · precomputed · sweep model.system"
    assert sweep_name(_sweep_config(["scoring.threshold=range(0.1,1,0.2)"])) == \
        "demo · precomputed · mostly_right · sweep threshold"


@pytest.mark.slow
def test_two_systems_have_distinct_names_folders_tags_and_comparisons(tmp_path: Path) -> None:
    systems = ("loose_quotes", "wrong_passages")
    for system in systems:
        proc = run_cli(["model=precomputed", f"model.system={system}", "report=none",
                        "progress=false"], cwd=tmp_path, env=ENV)
        assert proc.returncode == 0, proc.stderr[-3000:]
    folders = sorted((tmp_path / "outputs" / "runs").iterdir(),
                     key=lambda p: p.name.split("_demo_")[1])
    for folder, system in zip(folders, systems):
        assert re.fullmatch(f"{STAMP}_demo_precomputed-{system}_ngram", folder.name)
        metrics = read_json(folder / "metrics.json")
        assert metrics["run"]["name"] == f"t0.5_ngram_{system}_demo_default"
        assert metrics["model"]["system"] == system
    uri = f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}"
    runs = {r.data.tags["ragcite.system"]: r for r in all_runs(uri)}
    assert sorted(runs) == list(systems)
    assert {r.info.run_name for r in runs.values()} == {
        f"t0.5_ngram_{s}_demo_default" for s in systems}
    assert len({r.info.run_name[:18] for r in runs.values()}) == 2  # all the runs list shows
    # Two comparisons of the same pair (folders, then MLflow run ids): two folders, neither
    # overwritten, A and B named by what differs.
    compare = [
        [str(f) for f in folders],
        [runs[s].info.run_id for s in systems] + ["--tracking-uri", uri]]
    for args in compare:
        proc = run_cli(args, cwd=tmp_path, env=ENV, module="runner.reports.compare")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("A: system=loose_quotes   B: system=wrong_passages   ")
    made = sorted((tmp_path / "outputs" / "compare").iterdir())
    assert len(made) == 2
    for folder in made:
        assert re.fullmatch(f"{STAMP}_system_loose_quotes_vs_system_wrong_passages",
                            folder.name)
        assert sorted(p.name for p in folder.iterdir()) == ["compare.html", "compare.json"]
        summary = read_json(folder / "compare.json")
        assert (summary["a"]["differs"], summary["b"]["differs"]) == (
            "system=loose_quotes", "system=wrong_passages")
        assert (summary["a"]["model"], summary["b"]["model"]) == (
            "precomputed · loose_quotes", "precomputed · wrong_passages")
        html = (folder / "compare.html").read_text(encoding="utf-8")
        assert "<h1>system=loose_quotes <span class=\"muted\">vs</span> system=wrong_passages" \
            in html


@pytest.mark.slow
def test_a_sweep_over_systems_names_jobs_runs_and_its_parent(tmp_path: Path) -> None:
    proc = run_cli(["-m", "sweep=systems", "progress=false"], cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep,) = (tmp_path / "outputs" / "sweeps").iterdir()
    systems = ["wrong_documents", "wrong_passages", "mostly_right"]
    assert sorted(p.name for p in sweep.iterdir() if (p / ".hydra").is_dir()) == [
        f"{i}_precomputed-{s}_ngram" for i, s in enumerate(systems)]
    assert proc.stderr.rstrip().splitlines()[-1] == (
        f"sweep: 3 results of 3 jobs in {sweep}; report: {sweep / 'sweep.html'}")
    runs = all_runs(f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}")
    (parent,) = [r for r in runs if r.data.tags.get("ragcite.kind") == "sweep"]
    assert parent.info.run_name == "demo · precomputed · sweep model.system"
    assert sorted(r.data.tags["ragcite.system"] for r in runs if r is not parent) == \
        sorted(systems)
    page = (sweep / "sweep.html").read_text(encoding="utf-8")
    for system in systems:
        assert f"<td>precomputed · {system}</td>" in page

"""ragcite-compare: paired differences, gates and exit status, MLflow run ids, the report."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runner.data.models import Case, Citation, Reference, Response
from runner.reports.common import fmt, signed
from runner.reports.compare import CompareError, load_run, main
from runner.results import CASES_FILE, PASSAGES_FILE
from runner.scoring.metrics import METRIC_KEYS
from runner.scoring.paired import compare_runs
from tests.reports.conftest import (
    CLOSE,
    IMG,
    SCRIPT,
    assert_no_external_refs,
    build_run,
    load_json,
    parse,
    plain_cases,
    read_cases_raw,
    screenshot,
    xss_cases,
)

PASSAGES = [f"Policy clause number {i} says that item {i} must be handled with care {i}."
            for i in range(40)]


def _cases(n: int, wrong: set[int], fail: frozenset[int] | set[int] = frozenset(),
           id_prefix: str = "c") -> list[Case]:
    """n cases; those in `wrong` cite another clause of the right document."""
    out = []
    for i in range(n):
        ref = PASSAGES[i % len(PASSAGES)]
        cited = PASSAGES[(i + 7) % len(PASSAGES)] if i in wrong else ref
        response = Response(answer="a", citations=[Citation(source=f"doc{i % 5}.pdf",
                                                             content=cited)],
                            error="HTTP 500" if i in fail else None)
        out.append(Case(id=f"{id_prefix}{i}", query=f"question {i}",
                        references=[Reference(source=f"doc{i % 5}.pdf", content=ref)],
                        response=response))
    return out


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a candidate that cites wrong passages in 12 of 30 cases."""
    a = build_run(tmp_path / "base", _cases(30, wrong={1, 2}), name="base")
    b_cases = _cases(30, wrong={1, 2, *range(10, 22)}, fail={25})
    random.Random(0).shuffle(b_cases)      # pairing is by id, not by position
    b = build_run(tmp_path / "cand", b_cases, name="cand")
    return a, b


def test_paired_differences(runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = (load_run(str(p), None, tmp_path) for p in runs)
    result = compare_runs(a, b, resamples=500, seed=1)
    pairing = result["pairing"]
    assert pairing["n_common"] == 30 and pairing["n_paired_scored"] == 29
    assert pairing["newly_failed"] == 1 and pairing["only_a"] == pairing["only_b"] == 0
    ca = {c.id: c for c in read_cases_raw(runs[0])}
    cb = {c.id: c for c in read_cases_raw(runs[1])}
    for key in METRIC_KEYS:
        diffs = [float(cb[i].metrics[key] or 0) - float(ca[i].metrics[key] or 0) for i in ca
                 if cb[i].error is None and ca[i].error is None]
        entry = result["metrics"][key]
        assert entry["n_paired"] == 29
        assert entry["paired_mean_delta"] == pytest.approx(float(np.mean(diffs)))
        lo, hi = entry["ci"]
        assert lo <= entry["paired_mean_delta"] <= hi
        assert entry["a"] == load_json(runs[0] / "metrics.json")["metrics"][key]
        assert entry["delta"] == pytest.approx(entry["b"] - entry["a"])
    assert result["metrics"]["context_f1"]["verdict"] == "worse"
    assert result["metrics"]["source_f1"]["verdict"] == "no significant change"
    # The newly failed case comes first, then the cases that lost their passage match.
    changed = result["changed"]
    assert changed[0]["id"] == "c25" and changed[0]["status"] == "newly failed"
    assert {c["id"] for c in changed[1:]} == {f"c{i}" for i in range(10, 22)}
    assert all(c["direction"] == "worse" for c in changed)


def test_identical_runs_pass_every_gate(runs: tuple[Path, Path], tmp_path: Path,
                                        capsys: Any) -> None:
    out = tmp_path / "same.html"
    assert main([str(runs[0]), str(runs[0]), "--gate", "all", "--out", str(out)]) == 0
    summary = load_json(out.with_suffix(".json"))
    assert summary["gates"]["passed"] and summary["changed"] == []
    assert all(summary["metrics"][k]["ci"] == [0.0, 0.0] for k in METRIC_KEYS)
    assert "gates passed" in capsys.readouterr().out


def test_gate_fails_when_b_is_significantly_worse(runs: tuple[Path, Path], tmp_path: Path,
                                                  capsys: Any) -> None:
    out = tmp_path / "cmp.html"
    code = main([str(runs[0]), str(runs[1]), "--gate", "context_f1", "--gate", "source_f1",
                 "--out", str(out), "--resamples", "500"])
    assert code == 1
    err = capsys.readouterr().err
    assert "gate failed: context_f1" in err and "source_f1" not in err
    summary = load_json(out.with_suffix(".json"))
    assert summary["gates"]["failures"][0].startswith("context_f1:")
    # Reversed, B is better: the gate passes.
    assert main([str(runs[1]), str(runs[0]), "--gate", "context_f1",
                 "--out", str(tmp_path / "rev.html")]) == 0


def test_max_drop_tolerates_small_losses(runs: tuple[Path, Path], tmp_path: Path) -> None:
    args = [str(runs[0]), str(runs[1]), "--out", str(tmp_path / "x.html")]
    summary_path = tmp_path / "x.json"
    assert main([*args, "--max-drop", "0.02"]) == 1           # alone: gates all six metrics
    summary = load_json(summary_path)
    assert summary["gates"]["metrics"] == list(METRIC_KEYS)
    upper = summary["metrics"]["context_f1"]["ci"][1]
    assert upper < -0.02
    # A tolerance beyond the whole interval passes.
    assert main([*args, "--max-drop", f"{-upper + 0.01:.4f}", "--gate", "context_f1"]) == 0
    assert main([*args, "--max-new-errors", "0"]) == 1
    assert main([*args, "--max-new-errors", "1"]) == 0


def test_bad_input_exits_2(runs: tuple[Path, Path], tmp_path: Path, capsys: Any) -> None:
    assert main([str(runs[0]), str(tmp_path / "missing"), "--out",
                 str(tmp_path / "x.html")]) == 2
    assert "neither a run folder nor an MLflow run id" in capsys.readouterr().err
    other = build_run(tmp_path / "other", _cases(3, set(), id_prefix="z"))
    assert main([str(runs[0]), str(other), "--out", str(tmp_path / "y.html")]) == 2
    assert "no case id in common" in capsys.readouterr().err
    assert main([str(runs[0]), "0123456789abcdef0123456789abcdef", "--tracking-uri", "",
                 "--out", str(tmp_path / "z.html")]) == 2


def test_report_numbers_equal_the_results(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp.html"
    main([str(runs[0]), str(runs[1]), "--out", str(out), "--gate", "context_f1"])
    page = parse(out)
    summary = load_json(out.with_suffix(".json"))
    ma, mb = (load_json(p / "metrics.json") for p in runs)
    for key in METRIC_KEYS:
        assert page.text(data_side="a", data_metric=key) == fmt(ma["metrics"][key])
        assert page.text(data_side="b", data_metric=key) == fmt(mb["metrics"][key])
        entry = summary["metrics"][key]
        assert page.text(data_delta=key) == signed(entry["delta"])
        assert page.text(data_paired=key) == signed(entry["paired_mean_delta"])
        assert page.text(data_ci_low=key) == signed(entry["ci"][0])
        assert page.text(data_ci_high=key) == signed(entry["ci"][1])
        assert page.text(data_verdict=key) == entry["verdict"]
    assert page.text(data_count="newly_failed") == "1"
    assert page.text(data_field="gates") == "failed"
    assert_no_external_refs(page.html)


@pytest.mark.slow
def test_mlflow_run_ids(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """Run ids: metrics.json, cases.parquet and passages.parquet are downloaded from the tracking
    store."""
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("cmp", artifact_location=(tmp_path / "art").as_uri())
    ids = []
    for folder in runs:
        run = client.create_run(exp, run_name=folder.name)
        client.log_artifact(run.info.run_id, str(folder / "metrics.json"))
        # One artifact in a sub-folder: found by listing, not only at the root.
        client.log_artifact(run.info.run_id, str(folder / CASES_FILE), artifact_path="results")
        client.log_artifact(run.info.run_id, str(folder / PASSAGES_FILE),
                            artifact_path="job")
        client.set_terminated(run.info.run_id)
        ids.append(run.info.run_id)
    del mlflow
    out = tmp_path / "ml.html"
    code = main([ids[0], f"runs:/{ids[1]}", "--tracking-uri", uri, "--out", str(out),
                 "--gate", "context_f1"])
    assert code == 1
    summary = load_json(out.with_suffix(".json"))
    assert summary["a"]["name"] == "base" and summary["b"]["name"] == "cand"
    assert summary["a"]["source"] == f"mlflow run {ids[0]}"
    local = main([str(runs[0]), str(runs[1]), "--out", str(tmp_path / "local.html")])
    assert local == 0
    assert load_json(tmp_path / "local.json")["metrics"] == summary["metrics"]


@pytest.mark.slow
def test_compare_report_in_chromium(tmp_path: Path, open_page: Any) -> None:
    base = build_run(tmp_path / "a", xss_cases() + plain_cases(), name=f"A {SCRIPT}")
    worse = [c if c.id != "seed-2" else c.model_copy(update={"response": Response(
        answer="x", citations=[Citation(source=f"Nope {IMG}", content=f"nothing {CLOSE}")])})
        for c in xss_cases() + plain_cases()]
    cand = build_run(tmp_path / "b", worse, name=f"B {IMG}")
    out = tmp_path / "cmp.html"
    main([str(base), str(cand), "--out", str(out)])
    summary = load_json(out.with_suffix(".json"))
    page, watch = open_page(out)
    for key in METRIC_KEYS:
        cell = page.locator(f'[data-side="b"][data-metric="{key}"]')
        assert cell.is_visible()
        assert cell.inner_text().strip() == fmt(summary["b"]["metrics"][key])
        assert page.locator(f'[data-paired="{key}"]').inner_text().strip() == signed(
            summary["metrics"][key]["paired_mean_delta"])
    assert page.locator("h1").inner_text().startswith(f"A {SCRIPT}")
    rows = page.locator("#changed-table tbody.group")
    assert rows.count() == len(summary["changed"]) >= 1
    row = page.locator('tbody[data-changed-id="seed-2"]')
    assert not row.locator(".sides").is_visible()
    row.locator("summary").click()
    assert row.locator(".sides").is_visible()
    text = row.locator("details").inner_text()
    assert f"Nope {IMG}" in text and "IT Compliance Handbook.pdf" in text
    assert "unexpected_source" in text
    page.fill("#changed-filter", "no such case anywhere")
    assert page.locator("#changed-table tbody.group:visible").count() == 0
    page.fill("#changed-filter", "seed-2")
    assert page.locator("#changed-table tbody.group:visible").count() == 1
    page.fill("#changed-filter", "")
    page.click("#changed-table thead th:nth-child(3) button")   # change, ascending
    ids = page.locator("#changed-table tbody.group").evaluate_all(
        "groups => groups.map(g => g.getAttribute('data-changed-id'))")
    changes = sorted((c["change"], c["id"]) for c in summary["changed"])
    assert ids[0] == changes[0][1]
    screenshot(page, "compare")
    assert page.evaluate("window.__xss") is None
    watch.assert_clean()


def test_result_folders_of_one_job(tmp_path: Path) -> None:
    """Two thresholds of one job: result folders sharing ../passages.parquet. The job folder
    itself is not a result: the error names its result folders."""
    from tests.reports.conftest import build_job, fuzzy_cases

    low, high = build_job(tmp_path / "job", fuzzy_cases(), [0.05, 0.5])
    out = tmp_path / "thr.html"
    assert main([str(low), str(high), "--out", str(out)]) == 0
    summary = load_json(out.with_suffix(".json"))
    assert (summary["a"]["threshold"], summary["b"]["threshold"]) == (0.05, 0.5)
    # fuzzy-1 (similarity 0.375) and fuzzy-2 (0.0667) both match at 0.05, neither at 0.5:
    # context recall 1 -> 0 in both paired cases.
    entry = summary["metrics"]["context_recall"]
    assert (entry["a"], entry["b"], entry["paired_mean_delta"]) == (1.0, 0.0, -1.0)
    assert [c["id"] for c in summary["changed"]] == ["fuzzy-1", "fuzzy-2"]
    with pytest.raises(CompareError, match=r"t0\.05, t0\.5"):
        load_run(str(tmp_path / "job"), None, tmp_path)


def test_compare_json_is_plain_json(runs: tuple[Path, Path], tmp_path: Path) -> None:
    main([str(runs[0]), str(runs[1]), "--out", str(tmp_path / "c.html")])
    text = (tmp_path / "c.json").read_text()
    assert "NaN" not in text
    assert json.loads(text)["schema_version"] == 1


def test_compare_json_writes_null_for_a_figure_that_is_no_number(runs: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    """compare.json is strict JSON: a NaN (here put into A's means in memory, since the reader
    refuses one in a file) is written null, never as a bare NaN."""
    from runner.results.jsonio import dumps_strict

    a, b = (load_run(str(p), None, tmp_path) for p in runs)
    a.metrics["metrics"]["context_f1"] = float("nan")
    entry = compare_runs(a, b, resamples=100)["metrics"]["context_f1"]
    assert math.isnan(entry["a"]) and math.isnan(entry["delta"])
    text = dumps_strict({"metrics": {"context_f1": entry}})
    data = json.loads(text, parse_constant=lambda literal: pytest.fail(literal))
    assert (data["metrics"]["context_f1"]["a"], data["metrics"]["context_f1"]["delta"]) == (
        None, None)
    assert data["metrics"]["context_f1"]["b"] == entry["b"]

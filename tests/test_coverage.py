"""Coverage: how many of the dataset's cases the system answered, in metrics.json, the log line
and the run report. Counts by hand: the ExpertQA test file has 219 lines, 17 answered by gpt4
and 49 by bing_chat (each line holds one system's answer); the demo's 30 cases are all
answered by each stored system."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.pipeline import summary_line
from runner.reports.run import render_run_report
from runner.results import read_result
from tests.reports.conftest import parse


@pytest.mark.parametrize(("system", "answered"), [("gpt4", 17), ("bing_chat", 49)])
def test_expertqa_systems_answer_a_subset(run_job_in: Callable[..., list[Any]], tmp_path: Path,
                                          system: str, answered: int) -> None:
    (outcome,) = run_job_in("dataset=expertqa", "model=precomputed", f"model.system={system}",
                            "matcher=substring", "cache.enabled=false")
    metrics = read_result(outcome.folder)
    assert metrics["coverage"] == {"answered": answered, "dataset_cases": 219}
    assert metrics["n_cases"] == answered
    assert summary_line(outcome.result).endswith(
        f"; the system answered {answered} of the dataset's 219 cases)")
    page = parse(render_run_report(outcome.folder))
    assert page.text(data_field="coverage") == f"{answered}answered of the dataset's 219 cases"


def test_demo_system_answers_every_case(run_job_in: Callable[..., list[Any]]) -> None:
    (outcome,) = run_job_in("model=precomputed", "model.system=loose_quotes",
                            "matcher=substring", "cache.enabled=false")
    assert read_result(outcome.folder)["coverage"] == {"answered": 30, "dataset_cases": 30}


def test_unanswered_cases_are_not_answered(run_job_in: Callable[..., list[Any]],
                                           tmp_path: Path) -> None:
    """Stored responses for 3 of the demo's first 5 cases: 3 answered of 5, 2 failed."""
    import json

    lines = Path("data/demo/responses/mostly_right.jsonl").read_text().splitlines()[:5]
    kept = tmp_path / "partial.jsonl"
    kept.write_text("\n".join(lines[:2] + lines[4:]) + "\n")
    assert len([json.loads(x) for x in kept.read_text().splitlines()]) == 3
    (outcome,) = run_job_in("model=precomputed", f"model.responses={kept}",
                            "dataset.limit=5", "matcher=substring",
                            "cache.enabled=false")
    metrics = read_result(outcome.folder)
    assert metrics["coverage"] == {"answered": 3, "dataset_cases": 5}
    assert metrics["n_errors"] == 2


def test_expertqa_systems_share_no_case(run_job_in: Callable[..., list[Any]], tmp_path: Path,
                                        capsys: Any) -> None:
    """Each ExpertQA line is one system's answer to its own question: gpt4's 17 cases and
    bing_chat's 49 have no id in common, and the comparison says so."""
    from runner.reports.compare import main

    (a,) = run_job_in("dataset=expertqa", "model=precomputed", "model.system=gpt4",
                      "matcher=substring", "cache.enabled=false", out=tmp_path / "gpt4")
    (b,) = run_job_in("dataset=expertqa", "model=precomputed", "model.system=bing_chat",
                      "matcher=substring", "cache.enabled=false", out=tmp_path / "bing")
    assert main([str(a.folder), str(b.folder), "--out", str(tmp_path / "c.html")]) == 2
    assert capsys.readouterr().err == (
        "ragcite: error: the two runs have no case id in common (17 cases in A, 49 in "
        "B), so no figure can be compared on the same cases\n")

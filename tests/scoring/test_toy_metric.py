"""A metric declared outside the product, here, reaches every output with no product file edited:
``metrics.json``, its gate, the run report and the MLflow run (the declaration's way in is
``+scoring.metrics.<key>._target_=<its class>``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from runner.errors import RagciteError
from runner.scoring.gates import run_metrics
from runner.scoring.metrics import Metric
from tests.conftest import REPO, only_run_dir, read_json, run_cli
from tests.reports.conftest import parse


class CitationCountRatio(Metric):
    """citation_count_ratio = min(citations, references) / references: whether the response
    cites as many passages as there are to cite; 1.0 when there is nothing to cite."""

    name, title, short = "citation_count_ratio", "Citation Count Ratio", "Cit #"
    about = "Citations per ground-truth passage, capped at one."
    mean_of = "per-case citation count ratios"
    counts = ("citations", "references")

    def value(self, c: Mapping[str, int], zero_division: str) -> float | None:
        refs = c["references"]
        return min(c["citations"], refs) / refs if refs else 1.0


TARGET = f"{__name__}.CitationCountRatio"
P = "alpha beta gamma delta epsilon"


def _case(cid: str, refs: list[str], cits: list[str]) -> dict[str, object]:
    return {"id": cid, "query": "q", "references": [{"source": s, "content": P} for s in refs],
            "response": {"answer": "a", "citations": [{"source": s, "content": P}
                                                       for s in cits]}}


@pytest.mark.slow
def test_a_metric_declared_in_a_test_module(tmp_path: Path) -> None:
    # Per case min(citations, references) / references: 2 cits, 1 ref → 1; 0 cits, 2 refs → 0;
    # 1 cit, 4 refs → 1/4. Mean (1 + 0 + 0.25) / 3 = 0.41667; pooled min(3, 7) / 7 = 3/7.
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in [
        _case("c1", ["A"], ["A", "A"]), _case("c2", ["A", "B"], []),
        _case("c3", ["A", "B", "C", "D"], ["A"])]), encoding="utf-8")
    out = tmp_path / "out"
    proc = run_cli(["dataset=file", f"dataset.path={cases}", "model=precomputed",
                    "progress=false", f"output_root={out}", "tracking=mlflow",
                    f"+scoring.metrics.ratio._target_={TARGET}",
                    "+gate.citation_count_ratio=0.5"], cwd=tmp_path,
                   env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 1, proc.stderr
    assert "ragcite: gate failed: citation_count_ratio 0.4167 < gate 0.5" in proc.stderr
    assert "citation_count_ratio 0.417  (means over 3 scored cases" in proc.stderr

    run = only_run_dir(out)
    m = read_json(run / "metrics.json")
    assert list(m["metrics"]) == ["context_recall", "context_precision", "context_f1",
                                  "source_recall", "source_precision", "source_f1",
                                  "citation_count_ratio"]
    assert m["metrics"]["citation_count_ratio"] == pytest.approx(1.25 / 3, abs=1e-15)
    assert m["micro"]["citation_count_ratio"] == 3 / 7
    assert m["histograms"]["citation_count_ratio"]["counts"][0] == 1  # c2's 0.0
    assert m["gates"]["failures"] == ["citation_count_ratio 0.4167 < gate 0.5"]

    page = parse(run / "report.html")
    assert page.text(data_metric="citation_count_ratio", data_stat="mean") == "0.417"
    assert page.text(data_metric="citation_count_ratio", data_stat="micro") == "0.429"
    assert page.text(data_sentence="citation_count_ratio") == (
        "0.417 is the mean of the per-case citation count ratios over 3 cases.")

    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{out.resolve()}/mlflow.db")
    [found] = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert found.data.metrics["citation_count_ratio"] == pytest.approx(1.25 / 3, abs=1e-15)
    assert found.data.metrics["micro/citation_count_ratio"] == 3 / 7


@pytest.mark.slow
def test_a_gate_of_no_declared_metric_is_refused(tmp_path: Path) -> None:
    proc = run_cli(["progress=false", f"output_root={tmp_path}", "+gate.citation_count_ratio=0.5"],
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "ragcite: error: gate.citation_count_ratio: no such gate; the gates: context_recall, "
        "context_precision, context_f1, source_recall, source_precision, source_f1, "
        "max_error_rate, max_fabricated")


def test_scoring_metrics_names_metric_classes() -> None:
    assert run_metrics({"ratio": {"_target_": TARGET}})[-1] == "citation_count_ratio"
    with pytest.raises(RagciteError) as exc:
        run_metrics({"bad": {"_target_": "collections.OrderedDict"}})
    assert str(exc.value) == ("scoring.metrics.bad: collections.OrderedDict is not a "
                              "runner.scoring.metrics.Metric with a name")
    with pytest.raises(RagciteError) as exc:
        run_metrics({"gone": {"_target_": "no.such.Metric"}})
    assert str(exc.value) == ("scoring.metrics.gone._target_: cannot import no.such.Metric: "
                              "No module named 'no'")

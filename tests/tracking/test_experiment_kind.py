"""The MLflow UI opens ragcite's experiment on its runs: the experiment's kind is "Machine
learning" (``mlflow.experimentKind``), unless someone chose another kind."""

from __future__ import annotations

from pathlib import Path

from runner.tracking import mlflow_store as store
from tests.tracking.conftest import client, sqlite_uri


def test_a_new_or_untagged_experiment_gets_the_runs_kind_and_a_chosen_one_stays(
        tmp_path: Path) -> None:
    mlflow = client(sqlite_uri(tmp_path))
    new = store.experiment_id(mlflow, "ragcite", None)
    assert mlflow.get_experiment(new).tags["mlflow.experimentKind"] == \
        "custom_model_development"
    old = mlflow.create_experiment("older")  # made by an earlier ragcite, without a kind
    assert "mlflow.experimentKind" not in mlflow.get_experiment(old).tags
    assert store.experiment_id(mlflow, "older", None) == old
    assert mlflow.get_experiment(old).tags["mlflow.experimentKind"] == \
        "custom_model_development"
    chosen = mlflow.create_experiment("agents", tags={"mlflow.experimentKind":
                                                      "genai_development"})
    assert store.experiment_id(mlflow, "agents", None) == chosen
    assert mlflow.get_experiment(chosen).tags["mlflow.experimentKind"] == "genai_development"

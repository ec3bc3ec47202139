"""One job in process, as `ragcite` runs it (runner.cli.run): the real config composed, the
pipeline, then each threshold's result tracked on a real sqlite MLflow store and reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from runner.cli import run
from runner.config.schema import plain_config
from runner.results import CASES_FILE, PASSAGES_FILE, read_cases, result_dirs
from tests.conftest import read_json


def _cfg(compose_cfg: Any, tmp_path: Path, *overrides: str) -> dict[str, Any]:
    return plain_config(compose_cfg("model=precomputed", "progress=false",
                                    f"output_root={tmp_path}", *overrides))


def test_a_job_of_three_thresholds_writes_and_tracks_one_result_each(compose_cfg,
                                                                      tmp_path: Path) -> None:
    import mlflow

    cfg = _cfg(compose_cfg, tmp_path, "scoring.threshold=[0.05,default,strict]")
    outcomes = run(cfg, tmp_path / "job", {"dataset": "demo", "model": "precomputed",
                                           "matcher": "ngram"})
    folders = [o.folder for o in outcomes]
    assert folders == result_dirs(tmp_path / "job")
    assert [f.name for f in folders] == ["t0.05", "default_t0.5", "strict_t0.75"]
    assert [(o.threshold.value, o.threshold.level) for o in outcomes] == [
        (0.05, None), (0.5, "default"), (0.75, "strict")]
    assert (tmp_path / "job" / PASSAGES_FILE).is_file()
    assert (tmp_path / "job" / "report.html").is_file()  # one page, a threshold switch
    for folder in folders:
        assert sorted(p.name for p in folder.iterdir()) == [
            CASES_FILE, "config.yaml", "metrics.json"]
        assert read_json(folder / "metrics.json")["files"]["passages"] == f"../{PASSAGES_FILE}"
    # One MLflow run per threshold, each with its own params and metrics.
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["ragcite"], output_format="list")
    by_name = {r.info.run_name: r for r in runs}
    # The system replayed is the demo's default_system (mostly_right). Each name leads with
    # what differs, so the first 18 characters (all MLflow's runs list shows) tell them apart.
    assert sorted(by_name) == ["t0.05_ngram_mostly_right_demo",
                               "t0.5_ngram_mostly_right_demo_default",
                               "t0.75_ngram_mostly_right_demo_strict"]
    assert len({name[:18] for name in by_name}) == 3
    for outcome in outcomes:
        logged = by_name[read_json(outcome.folder / "metrics.json")["run"]["name"]]
        assert logged.info.status == "FINISHED"
        assert float(logged.data.params["scoring.threshold"]) == outcome.threshold.value
        assert logged.data.metrics["context_recall"] == pytest.approx(
            outcome.result.metrics["context_recall"], rel=1e-12)


@pytest.mark.parametrize(("thresholds", "names"), [
    ("0.3", ["my run"]), ("[0.3,strict]", ["t0.3_my run", "t0.75_my run_strict"])])
def test_a_given_run_name_is_the_name_of_one_threshold_and_follows_each_of_several(
        compose_cfg, tmp_path: Path, thresholds: str, names: list[str]) -> None:
    cfg = _cfg(compose_cfg, tmp_path, f"scoring.threshold={thresholds}", "run_name=my run",
               "tracking=none", "report=none")
    outcomes = run(cfg, tmp_path / "job", {"dataset": "demo", "model": "precomputed",
                                           "matcher": "ngram"})
    assert [read_json(o.folder / "metrics.json")["run"]["name"] for o in outcomes] == names


def test_each_threshold_of_a_job_equals_a_job_of_its_own(compose_cfg, tmp_path: Path) -> None:
    # The BM25 baseline's ngram similarities on the demo are 0, 1, or 0.04, 0.06 and 0.07.
    names = {"dataset": "demo", "model": "extractive", "matcher": "ngram"}
    together = run(_cfg(compose_cfg, tmp_path / "a", "model=extractive", "tracking=none",
                        "report=none", "scoring.threshold=[0.05,0.065,lenient]"),
                   tmp_path / "a" / "job", names)
    for outcome in together:
        spec = outcome.threshold.level or str(outcome.threshold.value)
        (alone,) = run(_cfg(compose_cfg, tmp_path / spec, "model=extractive", "tracking=none",
                            "report=none", f"scoring.threshold={spec}"),
                       tmp_path / spec / "job", names)
        assert list(read_cases(outcome.folder)) == list(read_cases(alone.folder))
        assert (outcome.folder / CASES_FILE).read_bytes() == (
            alone.folder / CASES_FILE).read_bytes()
        mine, theirs = outcome.result.to_dict(), alone.result.to_dict()
        for key in ("metrics", "ci", "micro", "labels", "counts", "histograms", "bands",
                    "failed", "threshold"):
            assert mine[key] == theirs[key] or (key == "threshold" and mine[key]["index"] > 0)
    # Each step un-matches one citation: the 0.06 pair at 0.065, the 0.07 pair at 0.3.
    assert [o.result.counts["citations_matched"] for o in together] == [27, 26, 25]


def test_a_threshold_the_matcher_cannot_give_fails_before_any_work(compose_cfg,
                                                                    tmp_path: Path) -> None:
    from runner.errors import RagciteError

    with pytest.raises(RagciteError) as exc:
        run(_cfg(compose_cfg, tmp_path, "scoring.threshold=[0.5,1.5]"), tmp_path / "job")
    assert str(exc.value) == ("scoring.threshold: 1.5 is outside [0, 1], the similarities this "
                              "matcher gives")
    assert not (tmp_path / "job" / PASSAGES_FILE).exists()


def test_a_job_runs_where_an_event_loop_is_running(compose_cfg, tmp_path: Path) -> None:
    # A notebook (or a test's browser) runs an event loop in this thread: the adapter's
    # coroutine then runs in a thread of its own, and every case is answered.
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    cfg = _cfg(compose_cfg, tmp_path, "tracking=none", "report=none")

    async def inside() -> list[Any]:
        return run(cfg, tmp_path / "job")

    with ThreadPoolExecutor(1) as pool:  # a thread of the test's own, whatever runs here
        (outcome,) = pool.submit(asyncio.run, inside()).result()
    assert (outcome.result.n_cases, outcome.result.n_errors) == (30, 0)


class OutsideMatcher:
    """A matcher from outside the repository with no base class: only the members of
    runner.matchers.base.Matcher (its similarities are the substring matcher's)."""

    levels: ClassVar[dict[str, float]] = {"strict": 1.0, "default": 1.0, "lenient": 1.0}
    computed = 0

    def identity(self) -> dict[str, Any]:
        return {"class": "tests.test_pipeline.OutsideMatcher"}

    def similarities(self, pairs: Any) -> list[Any]:
        from runner.matchers import SubstringMatcher

        OutsideMatcher.computed += len(pairs)
        return SubstringMatcher().similarities(pairs)


def test_a_minimal_outside_matcher_runs_and_its_similarities_are_cached(
        compose_cfg, tmp_path: Path) -> None:
    from runner.matchers.base import (
        Checked,
        FastPath,
        Local,
        Matcher,
        Metered,
        OwnCache,
        Ranged,
    )

    assert isinstance(OutsideMatcher(), Matcher)
    assert not isinstance(OutsideMatcher(), (Ranged, Checked, Local, FastPath, OwnCache, Metered))
    common = ("tracking=none", "report=none", f"cache.dir={tmp_path / 'cache'}")
    (substring,) = run(_cfg(compose_cfg, tmp_path / "s", "matcher=substring", *common),
                       tmp_path / "s" / "job")
    cfg = _cfg(compose_cfg, tmp_path / "o", *common)
    cfg["matcher"] = {"_target_": "tests.test_pipeline.OutsideMatcher"}
    (outside,) = run(cfg, tmp_path / "o" / "job")
    assert outside.result.to_dict()["metrics"] == substring.result.to_dict()["metrics"]
    cache = read_json(outside.folder / "metrics.json")["execution"]["cache"]
    assert cache["hits"].get("similarities", 0) == 0 < cache["computed"]["similarities"]
    computed = OutsideMatcher.computed
    (again,) = run(cfg, tmp_path / "o" / "again")  # not a local matcher: cached on disk
    assert OutsideMatcher.computed == computed
    assert again.result.to_dict()["metrics"] == substring.result.to_dict()["metrics"]

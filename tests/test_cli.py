"""The `ragcite` command end to end, in subprocesses, on small fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO, only_run_dir, options, read_json, run_cli
from tests.helpers import FIXTURES, read_decisions, read_passages

SEED = FIXTURES / "seed_examples.jsonl"
BASE = ["dataset=file", f"dataset.path={SEED}", "model=precomputed", "progress=false",
        "tracking=none", "report=none"]
ENV = {"PYTHONPATH": str(REPO)}


def test_seed_examples_end_to_end(tmp_path: Path) -> None:
    proc = run_cli([*BASE, f"output_root={tmp_path / 'out'}"], cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr
    run = only_run_dir(tmp_path / "out")
    metrics = read_json(run / "metrics.json")
    assert metrics["schema_version"] == 2
    assert (metrics["n_cases"], metrics["n_scored"], metrics["n_errors"]) == (3, 3, 0)
    # How the run went is its own section: stage timings, workers, cache counters.
    assert list(metrics["execution"]) == ["workers", "timings", "cache"]
    assert list(metrics["execution"]["timings"]) == ["load_s", "model_s", "score_s"]
    assert metrics["threshold"] == {"value": 0.5, "level": "default", "index": 0}
    # Per case (CR, CP | SR, SP): (1, 1 | 1, 1), (0, 0 | 1, 1), (1/3, 1/3 | 2/3, 2/3).
    # Macro CR = (1 + 0 + 1/3) / 3 = 4/9; SR = (1 + 1 + 2/3) / 3 = 8/9.
    assert metrics["metrics"]["context_recall"] == pytest.approx(4 / 9)
    assert metrics["metrics"]["context_precision"] == pytest.approx(4 / 9)
    assert metrics["metrics"]["source_recall"] == pytest.approx(8 / 9)
    assert metrics["metrics"]["source_precision"] == pytest.approx(8 / 9)
    # Micro CR: matched refs 1 + 0 + 1 = 2 of 1 + 1 + 3 = 5 references.
    assert metrics["micro"]["context_recall"] == pytest.approx(2 / 5)
    # Micro SR: expected sources hit 1 + 1 + 2 = 4 of 1 + 1 + 3 = 5.
    assert metrics["micro"]["source_recall"] == pytest.approx(4 / 5)
    assert metrics["labels"] == {
        "citation_supported": 2, "citation_wrong_passage": 2, "citation_unexpected_source": 1,
        "citation_other_source": 0,
        "reference_cited": 2, "reference_passage_missed": 2, "reference_source_missed": 1}
    cases = read_decisions(run)
    assert [c["id"] for c in cases] == ["seed-1", "seed-2", "seed-3"]
    assert [p["id"] for p in read_passages(run)] == ["seed-1", "seed-2",
                                                                     "seed-3"]
    assert read_json(run / "job.json") == {"schema_version": 2, "results": ["."]}
    assert cases[2]["metrics"]["source_recall"] == pytest.approx(2 / 3)
    assert cases[2]["labels"]["citations"] == ["supported", "wrong_passage", "unexpected_source"]
    assert cases[0]["error"] is None
    assert (run / "config.yaml").is_file()
    assert not list(run.glob("*.partial"))


def test_gate_failure_exits_nonzero_with_reason(tmp_path: Path) -> None:
    proc = run_cli([*BASE, f"output_root={tmp_path}", "gate.context_recall=0.5"],
                   cwd=tmp_path, env=ENV)
    # Macro context recall 4/9 = 0.4444 < 0.5.
    assert proc.returncode == 1
    assert "gate failed: context_recall 0.4444 < gate 0.5" in proc.stderr + proc.stdout
    metrics = read_json(only_run_dir(tmp_path) / "metrics.json")
    assert metrics["gates"]["passed"] is False


def test_gate_pass_exits_zero(tmp_path: Path) -> None:
    proc = run_cli([*BASE, f"output_root={tmp_path}", "gate.source_recall=0.8",
                    "gate.max_error_rate=0"], cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr


def test_max_error_rate_gate(tmp_path: Path) -> None:
    # A side file covering only seed-1 and seed-2: seed-3 has no response → an error case.
    side = tmp_path / "responses.jsonl"
    rows = [json.loads(line) for line in SEED.read_text().splitlines()][:2]
    side.write_text("".join(json.dumps({"id": r["id"], **r["response"]}) + "\n" for r in rows))
    proc = run_cli([*BASE, f"output_root={tmp_path}", f"model.responses={side}",
                    "gate.max_error_rate=0.2"], cwd=tmp_path, env=ENV)
    assert proc.returncode == 1
    assert "error rate 0.3333 (1 of 3 cases) > gate max_error_rate 0.2" in proc.stderr
    run = only_run_dir(tmp_path)
    metrics = read_json(run / "metrics.json")
    assert (metrics["n_scored"], metrics["n_errors"]) == (2, 1)
    # The failed case is recorded as an error, never as a score of 0.
    failed = read_decisions(run)[2]
    assert failed["error"] == f"no stored response for case 'seed-3' in model.responses {side}"
    assert set(failed["metrics"].values()) == {None}
    # Macro context recall over the 2 scored cases: (1 + 0) / 2.
    assert metrics["metrics"]["context_recall"] == 0.5


def test_bad_data_gives_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "query": "q"}\n{"id": "b", "query": 3}\n')
    proc = run_cli(["dataset=file", f"dataset.path={bad}", "model=precomputed",
                    f"output_root={tmp_path}", "progress=false"], cwd=tmp_path, env=ENV)
    assert proc.returncode == 2
    assert f"ragcite: error: {bad}, line 2, field 'query': Input should be a valid string" \
        in proc.stderr
    assert "Traceback" not in proc.stderr
    # Nothing looks complete.
    assert not list((tmp_path / "runs").rglob("metrics.json"))


def test_missing_mandatory_path_is_named(tmp_path: Path) -> None:
    proc = run_cli(["dataset=file", "model=precomputed", f"output_root={tmp_path}"],
                   cwd=tmp_path, env=ENV)
    assert proc.returncode != 0
    assert "dataset.path" in proc.stderr


def test_fake_key_on_command_line_is_in_no_output_file(tmp_path: Path) -> None:
    key = "sk-fake-0123456789abcdef"
    proc = run_cli(["dataset=file", f"dataset.path={SEED}", "model=python",
                    "model.function=tests.test_config.echo_model",
                    f"+model.kwargs.api_key={key}", f"+model.kwargs.headers.X-Auth={key}x",
                    f"output_root={tmp_path / 'out'}", "progress=false"],
                   cwd=tmp_path, env={**ENV, "OPENAI_API_KEY": key + "env"})
    # echo_model is a function: kwargs are ignored, so the run succeeds.
    assert proc.returncode == 0, proc.stderr
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.name == "overrides.yaml" for p in files)
    for path in files:
        data = path.read_bytes()
        assert key.encode() not in data, path
    overrides = (only_run_dir(tmp_path / "out") / ".hydra" / "overrides.yaml").read_text()
    assert "+model.kwargs.api_key=***" in overrides


def test_help_lists_groups_and_options(tmp_path: Path) -> None:
    proc = run_cli(["--help"], cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # Every group is listed with exactly the options in conf/<group>/.
    for group in ("dataset", "model", "matcher", "threshold", "scoring", "tracking", "report",
                  "sweep", "mode"):
        assert f"\n{group}: {', '.join(options(group))}\n" in out
    assert "threshold: default, lenient, strict" in out
    assert "ragcite -m matcher=substring,ngram" in out
    # Only groups a user chooses from: not Hydra's typed schemas.
    assert "schema" not in out.split("== Config ==")[0]
    assert "  ragcite-compare outputs/runs/<A> outputs/runs/<B>" in out
    assert ("Exit status:\n"
            "  0   every job finished and every gate passed\n"
            "  1   a quality gate failed, or a job of a sweep did not finish\n"
            "  2   bad input or config: one located line `ragcite: error: ...`\n"
            "  3   no case could be scored (every case failed)\n"
            "  130 stopped by Ctrl-C or SIGTERM\n"
            "  141 the reader of the output went away (ragcite --help | head)\n") in out


def test_cache_can_be_disabled(tmp_path: Path) -> None:
    proc = run_cli([*BASE, f"output_root={tmp_path}", "cache.enabled=false"],
                   cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr
    metrics = read_json(only_run_dir(tmp_path) / "metrics.json")
    assert metrics["execution"]["cache"]["enabled"] is False
    assert not (tmp_path / "cache").exists()


def down_model(case):  # pragma: no cover - runs in the CLI's process
    """A python-adapter target whose service is down."""
    raise ConnectionError("the service is down")


def half_model(case):  # pragma: no cover - runs in the CLI's process
    """Answers the seed's first case only (cites its reference); fails on the others."""
    if case.id != "seed-1":
        raise TimeoutError("no answer")
    return {"answer": "", "citations": [r.model_dump() for r in case.references]}


def test_a_run_where_no_case_could_be_scored_exits_3(tmp_path: Path) -> None:
    proc = run_cli(["dataset=file", f"dataset.path={SEED}", "model=python",
                    "model.function=tests.test_cli.down_model", "progress=false",
                    "tracking=none", "report=none", f"output_root={tmp_path}"],
                   cwd=tmp_path, env=ENV)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert proc.stderr.rstrip().splitlines()[-1].endswith(
        "ragcite: error: no case could be scored: all 3 failed; the first: seed-1: "
        "ConnectionError: the service is down")


def test_a_run_where_some_cases_failed_says_how_many_last(tmp_path: Path) -> None:
    proc = run_cli(["dataset=file", f"dataset.path={SEED}", "model=python",
                    "model.function=tests.test_cli.half_model", "progress=false",
                    "tracking=none", "report=none", f"output_root={tmp_path}"],
                   cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.rstrip().splitlines()[-1].endswith(
        "ragcite: 2 of 3 cases failed and were not scored (metrics.json: failed); the first: "
        "seed-2: TimeoutError: no answer")
    metrics = read_json(only_run_dir(tmp_path) / "metrics.json")
    assert (metrics["n_scored"], metrics["n_errors"]) == (1, 2)


def test_a_setting_its_class_refuses_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = run_cli([*BASE, "matcher.n=0", f"output_root={tmp_path}"], cwd=tmp_path, env=ENV)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.rstrip().splitlines()[-1].endswith(
        "ragcite: error: matcher.n: must be an integer >= 1, got 0")
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr

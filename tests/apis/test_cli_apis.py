"""The real `ragcite` CLI in a subprocess against the scripted server: a 3-threshold sweep is one
job that pays each unique call once and decides the three thresholds from it, a rerun pays
nothing, usage is accounted, and keys never reach a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.data.loading import iter_cases
from runner.scoring.case import ScoringOptions
from tests.apis.conftest import CASES, KB, KEY
from tests.conftest import read_json, run_cli
from tests.openai_server import FakeOpenAI
from tests.scoring.oracle import case_pairs

pytestmark = pytest.mark.slow

CHAT = "/v1/chat/completions"
EMB = "/v1/embeddings"
THRESHOLDS = "matcher.threshold=0.3,0.5,0.7"


def distinct_pairs() -> set[tuple[str, str]]:
    options = ScoringOptions()
    return {p for c in iter_cases(str(CASES)) for p in case_pairs(c, c.response, options)}


def distinct_texts() -> set[str]:
    return {t for pair in distinct_pairs() for t in pair}


def sweep(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
          expect: int = 0, n_jobs: int = 1) -> list[dict[str, Any]]:
    """Run a sweep; return the metrics.json of its results in sweep order (job, then
    threshold), after checking that it launched `n_jobs` jobs (the thresholds of a job are
    decided together) and that every result is listed complete in sweep.json."""
    out = tmp_path / "out"
    before = set((out / "sweeps").glob("*")) if (out / "sweeps").is_dir() else set()
    proc = run_cli(["-m", *args, "dataset=file", f"dataset.path={CASES}",
                    f"dataset.knowledge_base.path={KB}", f"output_root={out}",
                    "progress=false"], cwd=tmp_path, env=env if env is not None else {
                        "OPENAI_API_KEY": KEY})
    assert proc.returncode == expect, proc.stderr[-3000:]
    new = sorted(set((out / "sweeps").glob("*")) - before)
    assert len(new) == 1
    summary = read_json(new[0] / "sweep.json")
    assert summary["n_jobs"] == n_jobs
    assert summary["n_results"] == len(summary["jobs"])
    return [read_json(new[0] / j["dir"] / "metrics.json") for j in summary["jobs"]]


def judge_bodies(server: FakeOpenAI) -> list[dict[str, Any]]:
    return [b for p, b in server.bodies if p == CHAT and "response_format" not in b]


def answer_bodies(server: FakeOpenAI) -> list[dict[str, Any]]:
    return [b for p, b in server.bodies if p == CHAT and "response_format" in b]


def test_llm_sweep_judges_each_pair_once_and_a_rerun_calls_nothing(server: FakeOpenAI,
                                                                   tmp_path: Path) -> None:
    server.default_p_yes = lambda ref, cit: 0.95 if ref == cit else 0.4
    jobs = sweep(tmp_path, "matcher=llm", f"matcher.base_url={server.v1}", THRESHOLDS,
                 "model=precomputed")
    pairs = distinct_pairs()
    bodies = judge_bodies(server)
    assert len(bodies) == server.count(CHAT) == len(pairs)
    assert len({json.dumps(b["messages"]) for b in bodies}) == len(pairs)
    assert [j["threshold"]["value"] for j in jobs] == [0.3, 0.5, 0.7]
    # Each threshold is applied to the one job's similarities: 0.4 matches only at 0.3.
    recall = [j["metrics"]["context_recall"] for j in jobs]
    assert recall[0] > recall[1] == recall[2]
    # The usage is the job's: the same judge calls behind each of its three results.
    usage = [j["usage"]["matcher"] for j in jobs]
    assert [u["requests"] for u in usage] == [len(pairs)] * 3
    assert usage[0] == usage[1] == usage[2]
    assert usage[0]["input_tokens"] > 0 and usage[0]["cost_usd"] > 0
    assert jobs[0]["usage"]["total"]["requests"] == len(pairs)
    assert "model" not in jobs[0]["usage"]  # the precomputed adapter calls nothing
    assert jobs[0]["execution"]["cache"]["computed"]["similarities"] == len(pairs)

    again = sweep(tmp_path, "matcher=llm", f"matcher.base_url={server.v1}", THRESHOLDS,
                  "model=precomputed")
    assert server.count(CHAT) == len(pairs)
    assert [j["usage"]["matcher"]["requests"] for j in again] == [0, 0, 0]
    assert again[0]["execution"]["cache"]["hits"]["similarities"] == len(pairs)
    assert [j["metrics"] for j in again] == [j["metrics"] for j in jobs]


def test_embeddings_sweep_embeds_each_text_once_and_a_rerun_calls_nothing(
        server: FakeOpenAI, tmp_path: Path) -> None:
    jobs = sweep(tmp_path, "matcher=embeddings", f"matcher.base_url={server.v1}", THRESHOLDS,
                 "model=precomputed")
    texts = distinct_texts()
    assert server.count(EMB) == 1
    assert sorted(server.bodies[0][1]["input"]) == sorted(texts)
    assert [j["threshold"]["value"] for j in jobs] == [0.3, 0.5, 0.7]
    assert [j["usage"]["matcher"]["requests"] for j in jobs] == [1, 1, 1]  # the job's one call
    assert jobs[0]["usage"]["matcher"]["cost_usd"] == pytest.approx(
        jobs[0]["usage"]["matcher"]["input_tokens"] * 0.02 / 1e6)
    again = sweep(tmp_path, "matcher=embeddings", f"matcher.base_url={server.v1}", THRESHOLDS,
                  "model=precomputed")
    assert server.count(EMB) == 1
    assert [j["usage"]["matcher"]["requests"] for j in again] == [0, 0, 0]


def test_openai_model_and_llm_judge_each_pay_once(server: FakeOpenAI, tmp_path: Path) -> None:
    n_cases = len(list(iter_cases(str(CASES))))
    jobs = sweep(tmp_path, "model=openai", f"model.base_url={server.v1}", "matcher=llm",
                 f"matcher.base_url={server.v1}", THRESHOLDS)
    answers, judged = answer_bodies(server), judge_bodies(server)
    assert len(answers) == n_cases
    assert len(judged) == len({json.dumps(b["messages"]) for b in judged}) > 0
    for job in jobs:
        assert job["n_errors"] == 0
    model_usage = [j["usage"]["model"] for j in jobs]
    assert [u["requests"] for u in model_usage] == [n_cases] * 3  # one job answered once
    assert [j["execution"]["cache"]["computed"]["responses"] for j in jobs] == [n_cases] * 3
    first = jobs[0]["usage"]
    assert first["model"]["cost_usd"] == pytest.approx(
        (first["model"]["input_tokens"] * 0.15 + first["model"]["output_tokens"] * 0.60) / 1e6)
    assert first["total"]["requests"] == n_cases + len(judged)
    assert first["total"]["cost_usd"] == pytest.approx(
        first["model"]["cost_usd"] + first["matcher"]["cost_usd"])

    calls = server.count(CHAT)
    again = sweep(tmp_path, "model=openai", f"model.base_url={server.v1}", "matcher=llm",
                  f"matcher.base_url={server.v1}", THRESHOLDS)
    assert server.count(CHAT) == calls
    assert again[0]["usage"]["total"]["requests"] == 0
    assert again[0]["execution"]["cache"]["hits"]["responses"] == n_cases


def test_http_model_sweep_and_rerun(server: FakeOpenAI, tmp_path: Path) -> None:
    server.rag = lambda body: {"text": "ok", "refs": [
        {"doc": "Remote Work Policy.pdf", "quote": body["question"]}]}
    conf = tmp_path / "conf" / "model"
    conf.mkdir(parents=True)
    (conf / "my_rag.yaml").write_text(
        "defaults: [http, _self_]\n"
        f"url: {server.url}/rag\n"
        "body: '{\"question\": {{ query | tojson }}, \"top_k\": 5}'\n"
        "citations: \"refs[].{source: doc, content: quote}\"\n"
        "answer: text\n"
        "headers: {Authorization: \"Bearer $RAG_TOKEN\"}\n", encoding="utf-8")
    secret = "rag-token-SECRET-4242"
    env = {"RAG_TOKEN": secret}
    n_cases = len(list(iter_cases(str(CASES))))
    jobs = sweep(tmp_path, f"--config-dir={tmp_path / 'conf'}", "model=my_rag",
                 "matcher=ngram", THRESHOLDS, env=env)
    assert server.count("/rag") == n_cases
    assert server.headers_seen[0]["authorization"] == f"Bearer {secret}"
    assert [j["usage"]["model"]["requests"] for j in jobs] == [n_cases] * 3  # one job
    assert all(j["n_errors"] == 0 for j in jobs)
    again = sweep(tmp_path, f"--config-dir={tmp_path / 'conf'}", "model=my_rag",
                  "matcher=ngram", THRESHOLDS, env=env)
    assert server.count("/rag") == n_cases
    assert [j["usage"]["model"]["requests"] for j in again] == [0, 0, 0]
    assert again[0]["execution"]["cache"]["hits"]["responses"] == n_cases
    assert_nowhere(tmp_path / "out", secret)


def assert_nowhere(root: Path, *secrets: str) -> None:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"{secret} found in {path}"


def test_keys_never_reach_outputs_or_mlflow(server: FakeOpenAI, tmp_path: Path) -> None:
    env_key = "sk-env-SECRET-0000111122223333"
    cli_key = "sk-cli-SECRET-4444555566667777"
    args = ("matcher=llm", f"matcher.base_url={server.v1}", "matcher.threshold=0.3,0.7",
            "model=openai", f"model.base_url={server.v1}", "tracking=mlflow")
    sweep(tmp_path, *args, env={"OPENAI_API_KEY": env_key})
    # Other models, so that the second sweep really calls (and does not read the cache).
    sweep(tmp_path, *args, f"matcher.openai_api_key={cli_key}", "matcher.model=judge-2",
          f"model.openai_api_key={cli_key}", "model.model=answerer-2", env={})
    auth = {h.get("authorization") for h in server.headers_seen}
    assert auth == {f"Bearer {env_key}", f"Bearer {cli_key}"}  # both keys were really used
    out = tmp_path / "out"
    assert (out / "mlflow.db").is_file()
    assert_nowhere(out, env_key, cli_key)
    assert_nowhere(tmp_path, env_key, cli_key)

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    runs = [r for e in client.search_experiments()
            for r in client.search_runs([e.experiment_id])]
    assert len(runs) >= 6
    for run in runs:
        blob = json.dumps({"params": run.data.params, "tags": run.data.tags})
        assert env_key not in blob and cli_key not in blob
    child = next(r for r in runs if "matcher.openai_api_key" in r.data.params)
    assert child.data.params["matcher.openai_api_key"] == "***"
    assert any(k.startswith("usage/") for k in child.data.metrics)


def test_a_missing_key_fails_before_any_call_with_one_line(server: FakeOpenAI,
                                                           tmp_path: Path) -> None:
    proc = run_cli(["matcher=llm", f"matcher.base_url={server.v1}", "model=precomputed",
                    "dataset=file", f"dataset.path={CASES}", f"output_root={tmp_path}",
                    "progress=false"], cwd=tmp_path, env={})
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "OPENAI_API_KEY" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert server.count(CHAT) == 0


def test_one_system_scored_in_both_citation_styles(server: FakeOpenAI, tmp_path: Path) -> None:
    # The scripted model cites the first passage it is shown: by quoting it verbatim (the
    # default answer, `quotes`), or by a [1] marker (`markers`), which cites that passage's
    # text. Both styles therefore make the same citation in every case: the same figures.
    quick = ("tracking=none", "report=none", "model=openai", f"model.base_url={server.v1}")
    quoted = sweep(tmp_path, *quick)
    server.answer = lambda body: {"answer": "As the first passage says [1]."}
    marked = sweep(tmp_path, *quick, "model.citation_style=markers")
    schemas = [b["response_format"]["json_schema"]["schema"] for b in answer_bodies(server)]
    assert [len(s["properties"]) for s in schemas] == [2] * 3 + [1] * 3  # three cases each
    assert marked[0]["metrics"] == quoted[0]["metrics"]
    assert marked[0]["counts"] == quoted[0]["counts"]
    # By hand: seed-1 cites its reference (1, 1 | 1, 1); seed-2 cites the Data Security
    # Policy's VPN sentence for a notice question (0, 0 | 0, 0); seed-3 cites that sentence, one
    # of its three references from three documents (1/3, 1 | 1/3, 1). Recalls (1 + 0 + 1/3)/3,
    # precisions 2/3, F1s (1 + 0 + 0.5)/3.
    assert {k: round(v, 4) for k, v in marked[0]["metrics"].items()} == {
        "context_recall": 0.4444, "context_precision": 0.6667, "context_f1": 0.5,
        "source_recall": 0.4444, "source_precision": 0.6667, "source_f1": 0.5}
    assert marked[0]["counts"]["citations"] == 3

"""Malformed API replies (issue 23, item 8), through the real SDK against the scripted server.

A reply that cannot be trusted is an error of the pairs (or cases) that needed it, never a
score and never cached; usage figures that are not token counts are counted as unknown, never
priced, and never fail a call; a run served from a shared cache says so in its usage section.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from runner.api.usage import token_count, usage_section
from runner.matchers.base import PairError
from tests.apis.conftest import KEY
from tests.apis.test_embeddings_matcher import embedder
from tests.apis.test_http_adapter import cases as rag_cases
from tests.apis.test_http_adapter import model as rag_model
from tests.apis.test_http_adapter import rag_reply
from tests.apis.test_llm_matcher import judge
from tests.apis.test_openai_adapter import cases as chat_cases
from tests.apis.test_openai_adapter import model as chat_model
from tests.conftest import read_json, run_cli
from tests.openai_server import FakeOpenAI

EMB = "/v1/embeddings"
CHAT = "/v1/chat/completions"
PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}
# Not token counts: negative, huge, text, fractional, a bool, null, over 10^9.
NOT_COUNTS = [-5, 1e30, "12", 2.5, 12.0, True, None, 10**9 + 1]
VECTORS = {"alpha": [1.0, 0.0, 0.0], "beta": [0.0, 1.0, 0.0], "poison": [0.6, 0.8, 0.0]}
PAIRS = [("alpha", "alpha"), ("beta", "poison")]


def poison_items(change: Any) -> Any:
    """An embeddings edit: `change(items, i)` where item i is the vector of ``poison``."""
    def apply(body: Any, reply: Any) -> Any:
        if "poison" in body["input"]:
            change(reply["data"], body["input"].index("poison"))
        return reply
    return apply


# --- embeddings: index values and numbers ------------------------------------------------------

def test_vectors_are_placed_by_their_index_not_their_position(server: FakeOpenAI) -> None:
    server.vectors.update(VECTORS)
    server.edits[EMB] = lambda body, reply: {**reply, "data": reply["data"][::-1]}
    assert embedder(server).similarities(PAIRS) == [pytest.approx(1.0), pytest.approx(0.8)]


@pytest.mark.parametrize(("change", "indexes"), [
    (lambda items, i: items.append(copy.deepcopy(items[i])), "[0, 0]"),   # duplicated
    (lambda items, i: items[i].update(index=3), "[3]"),                   # out of range
    (lambda items, i: items[i].update(index=-1), "[-1]"),                 # out of range
    (lambda items, i: items.pop(i), "[]"),                                # missing
], ids=["duplicated", "out-of-range", "negative", "missing"])
def test_index_values_that_do_not_place_each_vector_fail_only_that_text(
        server: FakeOpenAI, tmp_path: Path, change: Any, indexes: str) -> None:
    server.vectors.update(VECTORS)
    server.edits[EMB] = poison_items(change)
    matcher = embedder(server)
    matcher.bind_cache(tmp_path)
    # [alpha, beta, poison] fails; [alpha] and [beta, poison]; then [beta] and [poison].
    assert matcher.similarities(PAIRS) == [pytest.approx(1.0), PairError(
        f"embeddings reply is malformed: index values {indexes} instead of 0..0, each once")]
    assert server.count(EMB) == 5
    assert matcher.usage()["requests"] == 5 and matcher.usage()["errors"] == 0
    # Only alpha and beta were stored: a rerun on the same cache asks for poison alone.
    del server.edits[EMB]
    again = embedder(server)
    again.bind_cache(tmp_path)
    assert again.similarities(PAIRS) == [pytest.approx(1.0), pytest.approx(0.8)]
    assert server.bodies[-1][1]["input"] == ["poison"]
    assert again.usage()["cached"] == 2 and again.usage()["requests"] == 1


@pytest.mark.parametrize(("value", "got"), [
    ("0.8", "'0.8'"), (True, "True"), (None, "None"), ([0.8], "[0.8]")])
def test_a_vector_value_that_is_not_a_number_fails_its_text(server: FakeOpenAI, value: Any,
                                                            got: str) -> None:
    server.vectors.update({**VECTORS, "poison": [0.6, value, 0.0]})
    sims = embedder(server, encoding_format="float").similarities(PAIRS)
    assert sims == [pytest.approx(1.0), PairError(
        "embeddings reply is malformed: data[0].embedding[1]: input should be a valid "
        f"number, got {got}")]
    assert server.count(EMB) == 5


def test_a_server_that_always_duplicates_indexes_costs_three_requests(
        server: FakeOpenAI) -> None:
    server.edits[EMB] = lambda body, reply: {**reply, "data": reply["data"] * 2}
    sims = embedder(server).similarities(PAIRS)
    # The halves [alpha] and [beta, poison] fail alike: a server fault, the splitting stops.
    assert sims == [PairError("embeddings reply is malformed: index values [0, 0] instead of "
                              "0..0, each once"),
                    PairError("embeddings reply is malformed: index values [0, 0, 1, 1] "
                              "instead of 0..1, each once")]
    assert server.count(EMB) == 3


# --- the llm judge: a verdict or an error -----------------------------------------------------

def reply_of(content: Any, top: list[tuple[str, float]] | None, refusal: Any = None) -> Any:
    """A chat reply edit: this content, refusal and first-token log-probabilities."""
    def apply(body: Any, reply: Any) -> Any:
        choice = reply["choices"][0]
        choice["message"].update(content=content, refusal=refusal)
        choice["logprobs"] = None if top is None else {"content": [{
            "token": str(content), "logprob": -0.1, "top_logprobs": [
                {"token": t, "logprob": math.log(p)} for t, p in top]}]}
        return reply
    return apply


@pytest.mark.parametrize(("content", "top", "refusal", "expected"), [
    # A refusal is never a verdict, whatever its log-probabilities (before: 0.917).
    (None, [("Yes", 0.55), ("No", 0.05)], "I cannot help with that.",
     PairError("llm judge refused: 'I cannot help with that.'")),
    ("Yes", [("Yes", 0.55), ("No", 0.05)], "I cannot help with that.",
     PairError("llm judge refused: 'I cannot help with that.'")),
    # An answer that is not yes/no is not one, even with readable log-probabilities.
    ("Perhaps", [("Yes", 0.9), ("No", 0.1)], None,
     PairError("llm judge gave no yes/no answer: 'Perhaps'")),
    ("", [("Yes", 0.9), ("No", 0.1)], None, PairError("llm judge gave no yes/no answer: ''")),
    # Log-probabilities whose most probable spelling is the other word contradict the answer.
    ("No", [("Yes", 0.9), ("No", 0.1)], None, PairError(
        "llm judge reply is not a score: the judge answered no but its log-probabilities "
        "favour yes (0.900 against 0.100)")),
    ("yes.", [("no", 0.6), (" Yes", 0.3), ("yes", 0.1)], None, PairError(
        "llm judge reply is not a score: the judge answered yes but its log-probabilities "
        "favour no (0.600 against 0.300)")),
    # Consistent replies are scores: p_yes / (p_yes + p_no), the listed masses.
    ("Yes", [("Yes", 0.6), ("No", 0.3), ("yes", 0.1)], None, pytest.approx(0.7)),
    ("No", [("No", 0.35), ("Yes", 0.33), ("yes", 0.32)], None, pytest.approx(0.65)),
    ("Yes", [("Yes", 0.5), ("No", 0.5)], None, pytest.approx(0.5)),  # a tie is no contradiction
    # A lone "yes" at 0.4 is the most probable token (the unlisted 0.6 is spread over others).
    ("Yes", [("Yes", 0.4)], None, pytest.approx(0.4)),
    # No log-probabilities: the answer decides.
    ("No, they differ", None, None, 0.0),
])
def test_a_judgment_is_a_verdict_consistent_with_its_log_probabilities(
        server: FakeOpenAI, tmp_path: Path, content: Any, top: Any, refusal: Any,
        expected: Any) -> None:
    server.edits[CHAT] = reply_of(content, top, refusal)
    matcher = judge(server)
    matcher.bind_cache(tmp_path)
    assert matcher.similarities([("ref", "cit")]) == [expected]
    again = judge(server)  # an error is never cached: a rerun asks again
    again.bind_cache(tmp_path)
    again.similarities([("ref", "cit")])
    assert server.count(CHAT) == (2 if isinstance(expected, PairError) else 1)


# --- usage figures ----------------------------------------------------------------------------

@pytest.mark.parametrize("value", NOT_COUNTS)
def test_token_count_takes_integers_from_0_to_a_billion_only(value: Any) -> None:
    assert token_count(value) is None
    assert token_count(0) == 0 and token_count(10**9) == 10**9


def usage_of(**figures: Any) -> Any:
    def apply(body: Any, reply: Any) -> Any:
        reply["usage"] = figures
        return reply
    return apply


@pytest.mark.parametrize("value", NOT_COUNTS)
def test_llm_usage_figures_that_are_not_counts_are_unknown_and_never_fail(
        server: FakeOpenAI, value: Any) -> None:
    server.edits[CHAT] = usage_of(prompt_tokens=40, completion_tokens=value)
    matcher = judge(server)
    assert matcher.similarities([("a", "a"), ("a", "b")]) == pytest.approx([0.95, 0.05])
    assert matcher.usage() == {"model": "gpt-4o-mini", "requests": 2, "errors": 0,
                               "input_tokens": 80, "output_tokens": 0, "cached": 0,
                               "unknown_figures": 2}
    section = usage_section({"matcher": matcher.usage()}, PRICES)
    assert section["matcher"]["cost_usd"] is None and section["total"]["cost_usd"] is None
    assert section["total"]["unknown_figures"] == 2


def test_llm_usage_missing_from_a_reply_is_unknown(server: FakeOpenAI) -> None:
    server.edits[CHAT] = lambda body, reply: {k: v for k, v in reply.items() if k != "usage"}
    matcher = judge(server)
    assert matcher.similarities([("a", "a")]) == pytest.approx([0.95])
    assert matcher.usage()["unknown_figures"] == 2 and matcher.usage()["input_tokens"] == 0


@pytest.mark.parametrize("value", [v for v in NOT_COUNTS if v is not None])
def test_embeddings_usage_that_is_not_a_count_is_unknown(server: FakeOpenAI,
                                                         value: Any) -> None:
    server.vectors.update(VECTORS)
    server.edits[EMB] = usage_of(prompt_tokens=value)
    matcher = embedder(server)
    assert matcher.similarities(PAIRS) == [pytest.approx(1.0), pytest.approx(0.8)]
    usage = matcher.usage()
    assert (usage["requests"], usage["input_tokens"], usage["unknown_figures"]) == (1, 0, 1)


@pytest.mark.parametrize("figures", [{}, {"prompt_tokens": None}], ids=["absent", "null"])
def test_embeddings_usage_not_reported_is_estimated(server: FakeOpenAI,
                                                    figures: dict[str, Any]) -> None:
    server.vectors.update(VECTORS)
    server.edits[EMB] = usage_of(**figures)
    matcher = embedder(server)
    matcher.similarities(PAIRS)
    # alpha, beta, poison: int(5/3)+1, int(4/3)+1, int(6/3)+1 tokens.
    assert (matcher.usage()["input_tokens"], matcher.usage()["unknown_figures"]) == (7, 0)


def test_openai_model_usage_that_is_not_a_count_is_left_out(server: FakeOpenAI) -> None:
    server.edits[CHAT] = usage_of(prompt_tokens=7, completion_tokens="12")
    adapter = chat_model(server)
    batch = chat_cases()
    responses = asyncio.run(adapter.respond(batch))
    assert [r.error for r in responses] == [None] * len(batch)
    assert [r.usage for r in responses] == [{"prompt_tokens": 7.0}] * len(batch)
    usage = adapter.usage()
    assert (usage["requests"], usage["input_tokens"], usage["output_tokens"],
            usage["unknown_figures"]) == (len(batch), 7 * len(batch), 0, len(batch))


def test_http_model_usage_that_is_not_a_count_is_left_out(server: FakeOpenAI) -> None:
    server.rag = lambda body: {**rag_reply(body), "usage": {"prompt_tokens": -5,
                                                            "completion_tokens": 3}}
    adapter = rag_model(server, tokens="usage")
    batch = rag_cases()
    responses = asyncio.run(adapter.respond(batch))
    assert [r.error for r in responses] == [None] * len(batch)
    assert [r.usage for r in responses] == [{"completion_tokens": 3.0}] * len(batch)
    usage = adapter.usage()
    assert (usage["requests"], usage["input_tokens"], usage["output_tokens"],
            usage["unknown_figures"]) == (len(batch), 0, 3 * len(batch), len(batch))


def test_usage_section_never_prices_a_figure_that_is_not_a_count() -> None:
    # Before: -5 tokens cost -7.5e-07 USD and 1e30 tokens 1.5e23 USD.
    for bad in (-5, 1e30, "12", 2.5):
        section = usage_section({"matcher": {"model": "gpt-4o-mini", "requests": 1,
                                             "input_tokens": bad}}, PRICES)
        assert section["matcher"]["input_tokens"] == 0
        assert section["matcher"]["unknown_figures"] == 1
        assert section["matcher"]["cost_usd"] is None and section["total"]["cost_usd"] is None
    good = usage_section({"model": {"model": "gpt-4o-mini", "requests": 2, "input_tokens": 1000,
                                    "output_tokens": 200, "cached": 1}}, PRICES,
                         {"model": 3, "matcher": 9})
    assert good["model"]["cost_usd"] == pytest.approx((1000 * 0.15 + 200 * 0.6) / 1e6)
    assert good["model"]["cached"] == 1 + 3 and "matcher" not in good


# --- a shared cache: the usage section says what it served ------------------------------------

CASES = [
    {"id": "c1", "query": "q1", "references": [{"source": "A.pdf", "content": "alpha fact"}]},
    {"id": "c2", "query": "q2", "references": [{"source": "B.pdf", "content": "beta fact"}]},
]
KB = [{"source": "A.pdf", "text": "alpha fact. More about alpha."},
      {"source": "B.pdf", "text": "beta fact. More about beta."}]


@pytest.mark.slow
def test_a_run_served_by_a_cache_another_run_filled_reports_its_hits(
        server: FakeOpenAI, tmp_path: Path) -> None:
    quotes = {"q1": ("A.pdf", "alpha fact"), "q2": ("B.pdf", "beta fact")}

    def answer(body: Any) -> Any:
        query = "q1" if "<question>\nq1\n" in body["messages"][-1]["content"] else "q2"
        source, quote = quotes[query]
        return {"answer": "a", "citations": [{"source": source, "quote": quote}]}

    server.answer = answer
    for name, rows in (("cases.jsonl", CASES), ("kb.jsonl", KB)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    def run(out: str, threshold: str) -> dict[str, Any]:
        proc = run_cli(["model=openai", f"model.base_url={server.v1}", "matcher=llm",
                        f"matcher.base_url={server.v1}", f"matcher.threshold={threshold}",
                        "dataset=file", f"dataset.path={tmp_path / 'cases.jsonl'}",
                        f"dataset.knowledge_base.path={tmp_path / 'kb.jsonl'}",
                        f"cache.dir={tmp_path / 'cache'}", f"output_root={tmp_path / out}",
                        "tracking=none", "report=none", "progress=false"], cwd=tmp_path,
                       env={"OPENAI_API_KEY": KEY})
        assert proc.returncode == 0, proc.stderr[-2000:]
        return read_json(next((tmp_path / out).rglob("metrics.json")))

    # Two cases, each quoting its one reference: 2 answers, 2 distinct pairs to judge.
    first = run("first", "0.5")
    assert server.count(CHAT) == 2 + 2
    assert [first["usage"][p]["requests"] for p in ("model", "matcher")] == [2, 2]
    assert [first["usage"][p]["cached"] for p in ("model", "matcher")] == [0, 0]
    assert first["execution"]["cache"]["computed"] == {"responses": 2, "similarities": 2}

    second = run("second", "0.7")  # another run, the same cache
    assert server.count(CHAT) == 4
    assert [second["usage"][p]["requests"] for p in ("model", "matcher")] == [0, 0]
    assert [second["usage"][p]["cached"] for p in ("model", "matcher")] == [2, 2]
    assert second["usage"]["total"]["cost_usd"] == 0.0
    assert second["execution"]["cache"]["hits"] == {"responses": 2, "similarities": 2}
    assert second["execution"]["cache"]["computed"] == {"responses": 0, "similarities": 0}

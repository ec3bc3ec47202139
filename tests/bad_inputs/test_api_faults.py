"""Rows of API faults: the real command line against the scripted OpenAI-compatible server on
127.0.0.1 (a fresh one per row, set up by the row), through the real openai SDK.

A refused key stops the run with one line after one request; a reply that is not a number fails
its cases (never scored, never cached); one bad text fails only its cases; a Retry-After over
the ceiling fails at once, saying so."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, ids, run_row
from tests.openai_server import FakeOpenAI, Scripted

KEY = "sk-test-key-0123456789"
EMB = "/v1/embeddings"
CHAT = "/v1/chat/completions"
NAN, INF = math.nan, math.inf

CASES = "\n".join(json.dumps(c) for c in [
    {"id": "c1", "query": "q1", "references": [{"source": "A.pdf", "content": "alpha fact"}],
     "response": {"answer": "a", "citations": [{"source": "A.pdf", "content": "alpha fact"}]}},
    {"id": "c2", "query": "q2", "references": [{"source": "B.pdf", "content": "beta fact"}],
     "response": {"answer": "b", "citations": [{"source": "B.pdf", "content": "poison text"}]}},
]) + "\n"
KB = "\n".join(json.dumps(d) for d in [
    {"source": "A.pdf", "text": "alpha fact. More about alpha."},
    {"source": "B.pdf", "text": "beta fact. More about beta."},
]) + "\n"
TEXTS = ("alpha fact", "beta fact", "poison text")
FILES = {"cases.jsonl": CASES, "kb.jsonl": KB}
DATA = ("dataset=file", "dataset.path={tmp}/cases.jsonl", "output_root={tmp}/out")
EMBED = (*DATA, "model=precomputed", "matcher=embeddings", "matcher.base_url={url}",
         "matcher.max_retries=0")
JUDGE = (*DATA, "model=precomputed", "matcher=llm", "matcher.base_url={url}",
         "matcher.max_retries=0")
ANSWER = (*DATA, "dataset.knowledge_base.path={tmp}/kb.jsonl", "model=openai",
          "model.base_url={url}", "model.max_retries=0")
HTTP = (*DATA, "dataset.knowledge_base.path={tmp}/kb.jsonl", "model=http",
        "model.url={root}/rag", "model.max_retries=0")

ERR = "ragcite: error: "
SOME = "ragcite: 1 of 2 cases failed and were not scored (metrics.json: failed); the first: c2: "
NONE = ERR + "no case could be scored: all 2 failed; the first: c1: "
PAIR = "matcher failed on reference 0 / citation 0: "
REFUSED = ("{what}: the server refused the API key ({status}); set a valid key in "
           "OPENAI_API_KEY or {where}.openai_api_key")
LENGTH = ("embedding vector of length {n}, the others have {usual} (a server that changed the "
          "model behind the same name? rerun with cache.clear=true)")
NOT_NUMBERS = "the embeddings server returned a vector with NaN or infinite values"
RETRY = ("{error}: Retry-After {after} s exceeds the ceiling of {ceiling} s "
         "({where}.max_retry_after); not retried")
SCORED = ("threshold {t}: context R/P/F1 {c}  source R/P/F1 1.000/1.000/1.000  "
          "(means over 2 scored cases, 0 failed; {m} of 2 ground-truth passages matched; the "
          "system answered 2 of the dataset's 2 cases)")
NAN_REPLY = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                 "role": "assistant", "content": "Yes"}, "logprobs": {"content": [{
                     "token": "Yes", "logprob": NAN, "top_logprobs": [
                         {"token": "Yes", "logprob": NAN}, {"token": "No", "logprob": NAN}]}]}}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 1}}


def nothing(server: FakeOpenAI) -> None:
    """No fault: the server's default replies."""


def vectors(**by_text: list[float]) -> Callable[[FakeOpenAI], None]:
    """The vectors of some texts (keys: the text with spaces as underscores)."""
    def setup(server: FakeOpenAI) -> None:
        server.vectors.update({k.replace("_", " "): v for k, v in by_text.items()})
    return setup


def every_text(vector: list[float]) -> Callable[[FakeOpenAI], None]:
    """The same vector for every text of the cases."""
    def setup(server: FakeOpenAI) -> None:
        server.vectors.update(dict.fromkeys(TEXTS, vector))
    return setup


def script(path: str, reply: Scripted, times: int = 1) -> Callable[[FakeOpenAI], None]:
    """The next `times` replies of `path`."""
    def setup(server: FakeOpenAI) -> None:
        server.script(path, *[reply] * times)
    return setup


def input_fault(reply: Scripted, *texts: str) -> Callable[[FakeOpenAI], None]:
    """Every embeddings request holding one of `texts` gets `reply`."""
    def setup(server: FakeOpenAI) -> None:
        server.input_faults.update(dict.fromkeys(texts, reply))
    return setup


def p_yes_of_c2(value: float) -> Callable[[FakeOpenAI], None]:
    """The judge's P(yes) of case c2's pair only."""
    def setup(server: FakeOpenAI) -> None:
        server.judgments[("beta fact", "poison text")] = value
    return setup


@dataclass(frozen=True)
class FaultRow:
    """A row, the server's set-up before it runs, and the requests the server must receive.

    ``{url}`` in the row's arguments is the server's OpenAI base URL, ``{root}`` its root.
    """

    row: Row
    setup: Callable[[FakeOpenAI], None] = nothing
    requests: tuple[str, int] | None = None


def row(name: str, args: tuple[str, ...], status: int, line: str,
        setup: Callable[[FakeOpenAI], None] = nothing, *extra: str,
        requests: tuple[str, int] | None = None) -> FaultRow:
    return FaultRow(Row(name, [*args, *extra], status, line, files=FILES,
                        env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": ""}), setup, requests)


ROWS = [
    # --- a refused key: one line, exit 2, after one request -------------------------------------
    row("embeddings: the server refuses the key (401)", EMBED, 2,
        ERR + REFUSED.format(what="matcher=embeddings", status="401 Unauthorized",
                             where="matcher"),
        script(EMB, Scripted(401), 9), requests=(EMB, 1)),
    row("embeddings: the server refuses the key (403), one text per request", EMBED, 2,
        ERR + REFUSED.format(what="matcher=embeddings", status="403 Forbidden",
                             where="matcher"),
        script(EMB, Scripted(403), 9), "matcher.max_inputs=1", requests=(EMB, 1)),
    row("llm judge: the server refuses the key (401)", JUDGE, 2,
        ERR + REFUSED.format(what="matcher=llm", status="401 Unauthorized", where="matcher"),
        script(CHAT, Scripted(401), 9), requests=(CHAT, 1)),
    row("openai model: the server refuses the key (401)", ANSWER, 2,
        ERR + REFUSED.format(what="model=openai", status="401 Unauthorized", where="model"),
        script(CHAT, Scripted(401), 9), requests=(CHAT, 1)),
    row("http model: the service refuses the credentials (403)", HTTP, 2,
        ERR + "model=http: the server refused the API key (403 Forbidden); set a valid key in "
        "the environment variables model.headers names",
        script("/rag", Scripted(403), 9), requests=("/rag", 1)),
    # --- a reply that is not a number fails its cases ------------------------------------------
    row("embeddings: every vector NaN", EMBED, 3, NONE + PAIR + NOT_NUMBERS,
        every_text([NAN, 1.0, 0.0])),
    row("embeddings: one NaN vector", EMBED, 0, SOME + PAIR + NOT_NUMBERS,
        vectors(poison_text=[1.0, NAN, 0.0])),
    row("embeddings: one infinite value, float encoding", EMBED, 0, SOME + PAIR + NOT_NUMBERS,
        vectors(poison_text=[1.0, 0.0, -INF]), "matcher.encoding_format=float"),
    row("embeddings: one all-zero vector", EMBED, 0,
        SOME + PAIR + "the embeddings server returned an all-zero vector",
        vectors(poison_text=[0.0, 0.0, 0.0])),
    row("embeddings: one vector of another length", EMBED, 0,
        SOME + PAIR + LENGTH.format(n=2, usual=3),
        vectors(alpha_fact=[1.0, 0.0, 0.0], beta_fact=[0.0, 1.0, 0.0], poison_text=[1.0, 1.0])),
    row("embeddings: every vector longer than matcher.dimensions", EMBED, 3,
        NONE + PAIR + LENGTH.format(n=4, usual=3),
        every_text([1.0, 0.0, 0.0, 1.0]), "matcher.dimensions=3"),
    row("llm judge: NaN log-probabilities", JUDGE, 3,
        NONE + PAIR + "llm judge reply is not a score: the judge's log-probability nan is not "
        "a finite number <= 0", script(CHAT, Scripted(200, body=NAN_REPLY), 2)),
    row("llm judge: an infinite log-probability for one pair", JUDGE, 0,
        SOME + PAIR + "llm judge reply is not a score: the judge's log-probability inf is not "
        "a finite number <= 0", p_yes_of_c2(INF)),
    # --- faults contained -----------------------------------------------------------------------
    row("embeddings: a text that makes the server fail (500) fails only its case", EMBED, 0,
        SOME + PAIR + "InternalServerError (HTTP 500): Error code: 500 - scripted status 500",
        input_fault(Scripted(500), "poison text")),
    row("embeddings: a truncated reply to one text fails only its case", EMBED, 0,
        SOME + PAIR + "embeddings reply is malformed: JSONDecodeError: Unterminated string "
        "starting at: line 1 column 30 (char 29)",
        input_fault(Scripted(200, body=b'{"object": "list", "data": [{"obj'), "poison text")),
    row("embeddings: a server failing every text (503)", EMBED, 3,
        NONE + PAIR + "InternalServerError (HTTP 503): Error code: 503 - scripted status 503",
        input_fault(Scripted(503), *TEXTS), requests=(EMB, 3)),
    row("embeddings: Retry-After 3600 s, over the default ceiling", EMBED, 3,
        NONE + PAIR + RETRY.format(error="RateLimitError (HTTP 429)", after=3600, ceiling=60,
                                   where="matcher"),
        script(EMB, Scripted(429, headers={"Retry-After": "3600"})), requests=(EMB, 1)),
    row("embeddings: Retry-After 30 s over matcher.max_retry_after=10", EMBED, 3,
        NONE + PAIR + RETRY.format(error="InternalServerError (HTTP 503)", after=30,
                                   ceiling=10, where="matcher"),
        script(EMB, Scripted(503, headers={"Retry-After": "30"})), "matcher.max_retry_after=10",
        requests=(EMB, 1)),
    row("llm judge: Retry-After 3600 s on every pair", JUDGE, 3,
        NONE + PAIR + "llm judge call failed: " + RETRY.format(
            error="RateLimitError (HTTP 429)", after=3600, ceiling=60, where="matcher"),
        script(CHAT, Scripted(429, headers={"Retry-After": "3600"}), 2), requests=(CHAT, 2)),
    row("openai model: Retry-After 3600 s on every case", ANSWER, 3,
        NONE + "openai call failed: " + RETRY.format(
            error="RateLimitError (HTTP 429)", after=3600, ceiling=60, where="model"),
        script(CHAT, Scripted(429, headers={"Retry-After": "3600"}), 2), requests=(CHAT, 2)),
    row("matcher.max_retry_after above the SDK's 120 s", EMBED, 2,
        ERR + "matcher.max_retry_after: must be a number of seconds in [0, 120], got 500.0",
        nothing, "matcher.max_retry_after=500", requests=(EMB, 0)),
    row("model.max_retry_after negative", ANSWER, 2,
        ERR + "model.max_retry_after: must be a number of seconds in [0, 120], got -1.0",
        nothing, "model.max_retry_after=-1", requests=(CHAT, 0)),
    # --- and when nothing is wrong ------------------------------------------------------------
    row("embeddings: a good server scores every case", EMBED, 0,
        # c1: its citation is its reference (cosine 1); c2: orthogonal vectors (cosine 0).
        SCORED.format(t=0.8, c="0.500/0.500/0.500", m=1), vectors(
            alpha_fact=[1.0, 0.0, 0.0], beta_fact=[0.0, 1.0, 0.0], poison_text=[0.0, 0.0, 1.0])),
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


def run_fault_row(fault: FaultRow, server: FakeOpenAI, tmp: Path) -> None:
    """Set the server up, run the row against it, check the requests it received."""
    fault.setup(server)
    where = {"{url}": server.v1, "{root}": server.url}
    args = []
    for arg in fault.row.args:
        for mark, value in where.items():
            arg = arg.replace(mark, value)
        args.append(arg)
    run_row(dataclasses.replace(fault.row, args=args), tmp)
    if fault.requests is not None:
        path, count = fault.requests
        assert server.count(path) == count


@pytest.mark.parametrize("fault", ROWS, ids=ids([f.row for f in ROWS]))
def test_row(fault: FaultRow, server: FakeOpenAI, tmp_path: Path) -> None:
    run_fault_row(fault, server, tmp_path)


def test_a_nan_vector_is_never_cached_and_a_rerun_after_the_fix_calls_again(
        server: FakeOpenAI, tmp_path: Path) -> None:
    good = {"alpha fact": [1.0, 0.0, 0.0], "beta fact": [0.0, 1.0, 0.0]}
    server.vectors.update({**good, "poison text": [1.0, NAN, 0.0]})
    args = ("dataset=file", "dataset.path={tmp}/cases.jsonl", "cache.dir={tmp}/cache",
            "model=precomputed", "matcher=embeddings", "matcher.base_url={url}",
            "matcher.max_retries=0")
    first = row("a NaN vector", (*args, "output_root={tmp}/out1"), 0,
                SOME + PAIR + NOT_NUMBERS)
    run_fault_row(first, server, tmp_path)
    assert [b["input"] for _, b in server.bodies] == [list(TEXTS)]

    from runner.api.cache import DiskCache
    from runner.matchers.embeddings import decode_vector

    cache = DiskCache(tmp_path / "cache")
    stored = list(cache._conn.execute("SELECT ns, value FROM kv"))
    cache.close()
    vectors_stored = [json.loads(v) for ns, v in stored if ns.startswith("emb-")]
    assert sorted(decode_vector(v).tolist() for v in vectors_stored) == sorted(good.values())
    assert len(stored) == 2 + 1  # two good vectors, c1's similarity; nothing of c2

    server.vectors["poison text"] = [0.0, 0.0, 1.0]  # the server is fixed
    second = row("the server fixed", (*args, "output_root={tmp}/out2"), 0,
                 SCORED.format(t=0.8, c="0.500/0.500/0.500", m=1))
    run_fault_row(second, server, tmp_path)
    assert [b["input"] for _, b in server.bodies] == [list(TEXTS), ["poison text"]]

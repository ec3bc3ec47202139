"""The `embeddings` matcher against a scripted OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import runner
from runner.errors import RagciteError
from runner.matchers.base import PairError
from runner.matchers.embeddings import (
    EmbeddingsMatcher,
    cosine_pairs,
    decode_vector,
    encode_vector,
    estimate_tokens,
    plan_requests,
)
from tests.apis.conftest import KEY
from tests.helpers import case
from tests.openai_server import HELD, SHORT_TIMEOUT, FakeOpenAI, Scripted

EMB = "/v1/embeddings"


def embedder(server: FakeOpenAI, **kwargs: object) -> EmbeddingsMatcher:
    opts: dict[str, object] = {"base_url": server.v1, "openai_api_key": KEY, "timeout": 5.0}
    opts.update(kwargs)
    return EmbeddingsMatcher(**opts)  # type: ignore[arg-type]


def inputs(server: FakeOpenAI) -> list[list[str]]:
    return [body["input"] for path, body in server.bodies if path == EMB]


def test_exact_cosines_from_scripted_vectors(server: FakeOpenAI) -> None:
    server.vectors.update({"north": [1.0, 0.0, 0.0], "north-east": [1.0, 1.0, 0.0],
                           "south": [-2.0, 0.0, 0.0], "up": [0.0, 0.0, 3.0],
                           "nothing": [0.0, 0.0, 0.0]})
    sims = embedder(server).similarities([("north", "north-east"), ("north", "south"),
                                          ("north", "up"), ("up", "up"), ("nothing", "up")])
    assert sims[:4] == pytest.approx([1 / math.sqrt(2), -1.0, 0.0, 1.0], abs=1e-6)
    # An all-zero vector has no direction: an error, not a similarity of 0.
    assert sims[4] == PairError("the embeddings server returned an all-zero vector")
    body = server.bodies[0][1]
    assert body["model"] == "text-embedding-3-small" and body["encoding_format"] == "base64"
    assert "dimensions" not in body


def test_float_encoding_and_dimensions(server: FakeOpenAI) -> None:
    server.vectors.update({"a": [3.0, 4.0], "b": [4.0, 3.0]})
    sims = embedder(server, encoding_format="float", dimensions=2).similarities([("a", "b")])
    assert sims == [pytest.approx(24 / 25)]
    assert server.bodies[0][1]["dimensions"] == 2
    assert server.bodies[0][1]["encoding_format"] == "float"


def test_each_distinct_text_is_embedded_once(server: FakeOpenAI) -> None:
    pairs = [("a", "b"), ("a", "c"), ("b", "a"), ("c", "c"), ("a", "b")]
    embedder(server).similarities(pairs)
    assert server.count(EMB) == 1
    assert sorted(inputs(server)[0]) == ["a", "b", "c"]


def test_requests_respect_input_and_token_limits(server: FakeOpenAI) -> None:
    texts = [f"text number {i}" for i in range(7)]
    embedder(server, max_inputs=3).similarities([(t, t) for t in texts])
    assert sorted(len(batch) for batch in inputs(server)) == [1, 3, 3]

    server.reset_counts()
    long = ["x" * 3000 + str(i) for i in range(4)]  # ~1,000 estimated tokens each
    embedder(server, max_request_tokens=2500).similarities([(t, t) for t in long])
    assert [len(batch) for batch in inputs(server)] == [2, 2]


def test_plan_requests_at_the_api_limits() -> None:
    short = [f"s{i}" for i in range(5000)]
    batches = plan_requests(short, 2048, 300_000)
    assert [len(b) for b in batches] == [2048, 2048, 904]
    big = ["word " * 60_000] * 5  # 300,000 chars = ~100,000 estimated tokens each
    assert [len(b) for b in plan_requests(big, 2048, 300_000)] == [2, 2, 1]
    assert sum(estimate_tokens(t) for t in plan_requests(big, 2048, 300_000)[0]) <= 300_000
    # Non-ASCII text counts a token per character: CJK is not underestimated.
    assert estimate_tokens("数据安全政策") >= 6
    assert plan_requests([], 2048, 300_000) == []


def test_vectors_are_cached_on_disk_by_model_and_dimensions(server: FakeOpenAI,
                                                            tmp_path: Path) -> None:
    pairs = [("a", "b"), ("b", "c")]
    first = embedder(server)
    first.bind_cache(tmp_path)
    sims = first.similarities(pairs)
    assert server.count(EMB) == 1
    again = embedder(server, concurrency=1, max_inputs=1)
    again.bind_cache(tmp_path)
    expected = cosine_pairs([("a", "c")], {t: np.array(server_vec(t)) for t in "ac"})[0]
    assert again.similarities([*pairs, ("a", "c")]) == pytest.approx([*sims, expected])
    assert server.count(EMB) == 1
    assert again.usage()["cached"] == 3 and again.usage()["requests"] == 0
    other = embedder(server, dimensions=4)
    other.bind_cache(tmp_path)
    other.similarities(pairs)
    assert server.count(EMB) == 2


def server_vec(text: str) -> list[float]:
    from tests.openai_server import default_vector

    return default_vector(text)


def test_a_rejected_text_is_isolated(server: FakeOpenAI) -> None:
    server.reject_inputs.add("far too long")
    sims = embedder(server).similarities([("ok one", "ok two"), ("ok one", "far too long")])
    assert isinstance(sims[0], float)
    assert isinstance(sims[1], PairError) and "BadRequestError" in sims[1].message


def test_429_then_success_and_500_twice_then_success(server: FakeOpenAI) -> None:
    server.vectors.update({"a": [1.0, 0.0], "b": [0.0, 1.0]})
    server.script(EMB, Scripted(429, headers={"Retry-After": "1"}))
    assert embedder(server).similarities([("a", "b")]) == [pytest.approx(0.0)]
    assert server.count(EMB) == 2
    assert server.times[1][1] - server.times[0][1] >= 0.95

    server.reset_counts()
    server.script(EMB, Scripted(500), Scripted(502))
    assert embedder(server, max_retries=2).similarities([("a", "a")]) == [pytest.approx(1.0)]
    assert server.count(EMB) == 3


def test_a_timeout_is_retried_then_given_up(server: FakeOpenAI) -> None:
    server.script(EMB, Scripted(delay=HELD))
    assert embedder(server, timeout=SHORT_TIMEOUT, max_retries=1).similarities(
        [("a", "a")]) == [pytest.approx(1.0)]
    assert server.count(EMB) == 2
    server.script(EMB, Scripted(delay=HELD))
    sims = embedder(server, timeout=SHORT_TIMEOUT, max_retries=0).similarities([("q", "r")])
    assert isinstance(sims[0], PairError) and "Timeout" in sims[0].message


def test_a_malformed_reply_makes_the_cases_errors(server: FakeOpenAI) -> None:
    # The request of both texts, then each half alone: all malformed, so the splitting stops
    # there (the server's fault, not a text's) and the case is an error.
    server.script(EMB, *[Scripted(200, body=b"<html>oops</html>")] * 3)
    cases = [case([("S.pdf", "alpha")], [("S.pdf", "beta")], id="c1")]
    result = runner.evaluate(cases, matcher=embedder(server, max_retries=0))
    assert result.n_errors == 1 and result.n_scored == 0
    assert server.count(EMB) == 3


def test_a_reply_with_too_few_vectors_is_split_and_retried(server: FakeOpenAI) -> None:
    one_vector = {"object": "list", "data": [{"object": "embedding", "index": 0,
                                              "embedding": [1.0]}],
                  "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    server.script(EMB, Scripted(200, body=one_vector))  # 1 vector for 2 texts, once
    sims = embedder(server, max_retries=0).similarities([("alpha", "beta")])
    assert sorted(inputs(server)) == [["alpha"], ["alpha", "beta"], ["beta"]]
    expected = cosine_pairs([("alpha", "beta")], {t: np.array(server_vec(t))
                                                  for t in ("alpha", "beta")})[0]
    assert sims == [pytest.approx(expected)]


def test_usage_counts_tokens(server: FakeOpenAI) -> None:
    matcher = embedder(server)
    matcher.similarities([("one two three", "four five")])
    usage = matcher.usage()
    assert usage == {"model": "text-embedding-3-small", "requests": 1, "errors": 0,
                     "input_tokens": 5, "output_tokens": 0, "cached": 0,
                     "unknown_figures": 0}


def test_vector_codec_roundtrip() -> None:
    vec = np.array([0.5, -1.25, 3.0], dtype=np.float32)
    assert np.array_equal(decode_vector(encode_vector(vec)), vec)


def test_missing_key_and_bad_settings_fail_early() -> None:
    with pytest.raises(RagciteError, match="OPENAI_API_KEY"):
        EmbeddingsMatcher().check()
    with pytest.raises(RagciteError, match="encoding_format"):
        EmbeddingsMatcher(openai_api_key="k", encoding_format="hex").check()
    with pytest.raises(RagciteError, match="max_inputs"):
        EmbeddingsMatcher(openai_api_key="k", max_inputs=0).check()
    ident = EmbeddingsMatcher(openai_api_key="sk-x", concurrency=9).identity()
    assert set(ident) == {"class", "model", "dimensions", "base_url"}

"""The `http` model adapter against a scripted RAG service on 127.0.0.1."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from runner.adapters.base import AdapterContext
from runner.adapters.http import HttpModel, header_value
from runner.api.client import backoff_delay
from runner.data.dataset import Dataset
from runner.data.models import Case, Response
from runner.errors import RagciteError
from tests.apis.conftest import CASES, KB
from tests.openai_server import HELD, SHORT_TIMEOUT, FakeOpenAI, Scripted

RAG = "/rag"
BODY = '{"question": {{ query | tojson }}, "case": {{ id | tojson }}, "k": 3}'
CITATIONS = "refs[].{source: doc, content: quote}"


def rag_reply(body: dict[str, Any]) -> dict[str, Any]:
    return {"text": f"about {body['question']}",
            "refs": [{"doc": "Remote Work Policy.pdf", "quote": f"quote for {body['case']}"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7}}


def cases() -> list[Case]:
    return list(Dataset({"name": "tiny", "path": str(CASES),
                         "knowledge_base": {"path": str(KB)}}).iter_cases())


def model(server: FakeOpenAI, cache_dir: Path | None = None, **kwargs: Any) -> HttpModel:
    opts: dict[str, Any] = {"url": server.url + RAG, "body": BODY, "citations": CITATIONS,
                            "answer": "text", "timeout": 5.0, "backoff": 0.05}
    opts.update(kwargs)
    adapter = HttpModel(**opts)
    adapter.check()
    adapter.bind(AdapterContext(dataset=Dataset({"name": "t", "path": str(CASES)}),
                                cache_dir=cache_dir))
    return adapter


def respond(adapter: HttpModel, batch: list[Case]) -> list[Response]:
    return asyncio.run(adapter.respond(batch))


@pytest.fixture
def rag(server: FakeOpenAI) -> FakeOpenAI:
    server.rag = rag_reply
    return server


def test_body_template_jmespath_and_env_headers(rag: FakeOpenAI,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_TOKEN", "tok-very-secret")
    monkeypatch.setenv("RAG_TENANT", "acme")
    batch = cases()
    adapter = model(rag, headers={"Authorization": "Bearer $RAG_TOKEN", "X-Tenant": "RAG_TENANT"},
                    tokens="usage")
    answers = respond(adapter, batch)
    assert rag.count(RAG) == 3
    assert answers[0].answer == f"about {batch[0].query}"
    assert answers[0].citations[0].source == "Remote Work Policy.pdf"
    assert answers[0].citations[0].content == f"quote for {batch[0].id}"
    assert answers[0].usage == {"prompt_tokens": 100.0, "completion_tokens": 7.0}
    bodies = sorted((b for _, b in rag.bodies), key=lambda b: b["case"])
    assert bodies[0] == {"question": batch[0].query, "case": batch[0].id, "k": 3}
    assert rag.headers_seen[0]["authorization"] == "Bearer tok-very-secret"
    assert rag.headers_seen[0]["x-tenant"] == "acme"
    usage = adapter.usage()
    assert usage["requests"] == 3 and usage["input_tokens"] == 300


def test_retries_429_with_retry_after_and_5xx(rag: FakeOpenAI) -> None:
    rag.script(RAG, Scripted(429, headers={"Retry-After": "1"}), Scripted(500), Scripted(503))
    answers = respond(model(rag, max_retries=3), cases()[:1])
    assert answers[0].error is None
    assert rag.count(RAG) == 4
    assert rag.times[1][1] - rag.times[0][1] >= 0.95


def test_gives_up_after_max_retries_and_on_4xx(rag: FakeOpenAI) -> None:
    rag.script(RAG, *[Scripted(502)] * 3)
    failed = respond(model(rag, max_retries=2), cases()[:1])[0]
    assert failed.error and "HTTP 502" in failed.error and rag.count(RAG) == 3
    rag.reset_counts()
    rag.script(RAG, Scripted(404, body={"detail": "no such route"}))
    failed = respond(model(rag, max_retries=2), cases()[:1])[0]
    assert failed.error and "HTTP 404" in failed.error and rag.count(RAG) == 1


def test_timeouts_are_retried(rag: FakeOpenAI) -> None:
    # The first reply is held until the server stops: the answer is the retry's.
    rag.script(RAG, Scripted(delay=HELD))
    ok = respond(model(rag, timeout=SHORT_TIMEOUT, max_retries=1), cases()[:1])[0]
    assert ok.error is None and ok.citations[0].source == "Remote Work Policy.pdf"
    assert rag.count(RAG) == 2
    rag.script(RAG, Scripted(delay=HELD))
    failed = respond(model(rag, timeout=SHORT_TIMEOUT, max_retries=0), cases()[1:2])[0]
    assert failed.error and "Timeout" in failed.error


@pytest.mark.parametrize(("reply", "message"), [
    (b"<html>502 Bad Gateway</html>", "invalid JSON"),
    ({"text": "no refs here"}, "at 'refs[].{source: doc, content: quote}', field 'citations': "
                               "Input should be a valid list (got None)"),
    ({"refs": "not a list"}, "field 'citations': Input should be a valid list (got None)"),
    ({"refs": [{"quote": "no doc"}]}, "field 'citations[0].source': Input should be a valid "
                                      "string (got None)"),
])
def test_malformed_replies_are_case_errors(rag: FakeOpenAI, reply: Any, message: str) -> None:
    rag.script(RAG, Scripted(200, body=reply))
    answers = respond(model(rag, concurrency=1), cases())
    assert message in (answers[0].error or "")
    assert all(a.error is None for a in answers[1:])


def test_replies_are_persisted_and_reread_with_new_expressions(rag: FakeOpenAI,
                                                              tmp_path: Path) -> None:
    batch = cases()
    respond(model(rag, tmp_path), batch)
    assert rag.count(RAG) == 3
    again = model(rag, tmp_path, citations="refs[].{source: doc, content: doc}")
    answers = respond(again, batch)
    assert rag.count(RAG) == 3  # the stored replies were re-read, not re-fetched
    assert answers[0].citations[0].content == "Remote Work Policy.pdf"
    assert again.usage()["cached"] == 3


def test_a_template_that_renders_invalid_json_is_a_case_error(rag: FakeOpenAI) -> None:
    answers = respond(model(rag, body='{"question": {{ query }}}'), cases()[:1])
    assert "invalid JSON" in (answers[0].error or "")
    assert rag.count(RAG) == 0


def test_early_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_TOKEN", raising=False)
    with pytest.raises(RagciteError, match=r"model\.url"):
        HttpModel().check()
    with pytest.raises(RagciteError, match="JMESPath"):
        HttpModel(url="http://x", citations="refs[.").check()
    with pytest.raises(RagciteError, match=r"model\.body"):
        HttpModel(url="http://x", body="{{ query ").check()
    with pytest.raises(RagciteError, match="RAG_TOKEN is not set"):
        HttpModel(url="http://x", headers={"Authorization": "Bearer $RAG_TOKEN"}).check()
    with pytest.raises(RagciteError, match="never the value"):
        HttpModel(url="http://x", headers={"Authorization": "Bearer abc123"}).check()
    ident = HttpModel(url="http://x", headers={"A": "B"}).identity()
    assert "headers" not in ident and "timeout" not in ident


def test_header_values_and_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T1", "v1")
    assert header_value("T1", "X") == "v1"
    assert header_value("Bearer ${T1}", "X") == "Bearer v1"
    assert backoff_delay(0, 0.5, 3.0) == 3.0
    assert 0.375 <= backoff_delay(0, 0.5, None) <= 0.5
    assert 6.0 <= backoff_delay(10, 0.5, None) <= 8.0


@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_over_the_ceiling_fails_the_case_at_once(rag: FakeOpenAI,
                                                               status: int) -> None:
    rag.script(RAG, Scripted(status, headers={"Retry-After": "3600"}))
    start = time.monotonic()
    failed = respond(model(rag, max_retries=3), cases()[:1])[0]
    assert time.monotonic() - start < 30  # never the hour (nor the minute); true under load
    assert failed.error == (f"the service failed: HTTP {status}: Retry-After 3600 s exceeds "
                            "the ceiling of 60 s (model.max_retry_after); not retried")
    assert rag.count(RAG) == 1


def test_a_retry_after_over_a_lowered_ceiling_fails_the_case(rag: FakeOpenAI) -> None:
    rag.script(RAG, Scripted(429, headers={"Retry-After": "2"}))
    failed = respond(model(rag, max_retry_after=1.5), cases()[:1])[0]
    assert failed.error == ("the service failed: HTTP 429: Retry-After 2 s exceeds the ceiling "
                            "of 1.5 s (model.max_retry_after); not retried")
    assert rag.count(RAG) == 1


def test_a_retry_after_within_the_ceiling_is_waited_out(rag: FakeOpenAI) -> None:
    rag.script(RAG, Scripted(503, headers={"Retry-After": "1"}))
    start = time.monotonic()
    ok = respond(model(rag, max_retry_after=1, backoff=0.0), cases()[:1])[0]
    assert ok.error is None and ok.citations[0].source == "Remote Work Policy.pdf"
    assert rag.count(RAG) == 2
    assert time.monotonic() - start >= 0.95


@pytest.mark.parametrize("value", [-1, 121, float("nan"), "soon"])
def test_the_retry_after_ceiling_is_checked(value: Any) -> None:
    with pytest.raises(RagciteError) as err:
        HttpModel(url="http://x", max_retry_after=value).check()
    assert str(err.value) == ("model.max_retry_after: must be a number of seconds in [0, 120], "
                              f"got {value!r}")


def test_a_reply_in_any_citation_shape_is_read_through_model_response(rag: FakeOpenAI) -> None:
    # The service answers with [n] markers over the documents it retrieved: [1] cites the
    # first, [3] points past the two (dangling); the token figures still come from `tokens`.
    docs = [{"source": "Remote Work Policy.pdf", "text": "Five business days."},
            {"source": "Employment Contract.pdf", "text": "Four weeks."}]
    rag.rag = lambda body: {"text": "Ask five days ahead [1][3].", "docs": docs,
                            "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
    adapter = model(rag, response="{answer: text, documents: docs}", tokens="usage")
    (marked,) = respond(adapter, cases()[:1])
    assert [(c.source, c.content, c.claim) for c in marked.citations] == [
        ("Remote Work Policy.pdf", "Five business days.", "Ask five days ahead [1][3].")]
    assert (marked.dangling, marked.usage, marked.error) == (
        1, {"prompt_tokens": 10.0, "completion_tokens": 2.0}, None)
    # Citations by offsets keep their span (the knowledge base gives their text when scored).
    offsets = {"answer": "a", "citations": [{"source": "Remote Work Policy.pdf", "start": 0,
                                             "end": 4}]}
    (cited,) = HttpModel(url="http://127.0.0.1:9", response="@").extract(offsets).citations
    assert (cited.source, cited.content, cited.start, cited.end) == (
        "Remote Work Policy.pdf", "", 0, 4)
    # A reply without the object, or with a malformed one, is an error of its case.
    shaped = HttpModel(url="http://127.0.0.1:9", response="reply")
    assert shaped.extract({"text": "a"}).error == (
        "the reply's response at 'reply': Input should be a valid dictionary or instance of "
        "Response (got None)")
    assert shaped.extract({"reply": {"answer": "x [1]", "documents": [{"text": "t"}]}}).error == (
        "the reply's response at 'reply', field 'documents[0].source': required field is "
        "missing")

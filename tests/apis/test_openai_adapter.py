"""The `openai` model adapter against a scripted OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from runner.adapters.base import AdapterContext
from runner.adapters.openai import ANSWER_SCHEMA, STYLES, OpenaiModel, parse_answer
from runner.data.dataset import Dataset
from runner.data.models import Case, Response
from runner.errors import RagciteError
from tests.apis.conftest import CASES, KB, KEY
from tests.openai_server import HELD, SHORT_TIMEOUT, FakeOpenAI, Scripted

CHAT = "/v1/chat/completions"


def dataset() -> Dataset:
    return Dataset({"name": "tiny", "path": str(CASES), "knowledge_base": {"path": str(KB)}})


def cases() -> list[Case]:
    return list(dataset().iter_cases())


def model(server: FakeOpenAI, cache_dir: Path | None = None, **kwargs: Any) -> OpenaiModel:
    opts: dict[str, Any] = {"base_url": server.v1, "openai_api_key": KEY, "timeout": 5.0,
                            "top_k": 2}
    opts.update(kwargs)
    adapter = OpenaiModel(**opts)
    adapter.check()
    adapter.bind(AdapterContext(dataset=dataset(), cache_dir=cache_dir))
    return adapter


def respond(adapter: OpenaiModel, batch: list[Case]) -> list[Response]:
    return asyncio.run(adapter.respond(batch))


def test_retrieves_then_answers_with_structured_citations(server: FakeOpenAI) -> None:
    batch = cases()
    answers = respond(model(server), batch)
    assert server.count(CHAT) == len(batch)
    assert all(a.error is None for a in answers)
    first = answers[0]
    assert first.answer == f"answer to {batch[0].query}"
    # The default server reply quotes the first retrieved passage verbatim.
    assert first.citations and first.citations[0].source == "Remote Work Policy.pdf"
    assert "five (5) business days" in first.citations[0].content
    assert first.usage and first.usage["prompt_tokens"] > 0 and first.latency_s is not None
    body = next(b for p, b in server.bodies if batch[0].query in json.dumps(b))
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA
    assert body["response_format"]["json_schema"]["strict"] is True
    user = body["messages"][-1]["content"]
    assert user.count("<passage number=") == 2 and "source: Remote Work Policy.pdf" in user


def test_json_object_mode(server: FakeOpenAI) -> None:
    respond(model(server, structured_output="json_object"), cases()[:1])
    assert server.bodies[0][1]["response_format"] == {"type": "json_object"}


def test_failures_become_case_errors(server: FakeOpenAI) -> None:
    batch = cases()
    by_query = {c.query: i for i, c in enumerate(batch)}

    def answer(body: dict[str, Any]) -> Any:
        text = json.dumps(body)
        if batch[1].query in text:
            return {"answer": 42}  # wrong type: not the schema
        if batch[2].query in text:
            return "not an object"
        return {"answer": "ok", "citations": [{"source": "A.pdf", "quote": "q"}]}

    server.answer = answer
    answers = respond(model(server), batch)
    assert answers[0].error is None and answers[0].citations[0].source == "A.pdf"
    assert "answer schema" in (answers[by_query[batch[1].query]].error or "")
    assert answers[2].error is not None


def test_unreadable_reply_and_persistent_errors(server: FakeOpenAI) -> None:
    server.script(CHAT, Scripted(200, body=b"{{{"))
    assert respond(model(server, max_retries=0), cases()[:1])[0].error
    server.script(CHAT, *[Scripted(500)] * 2)
    adapter = model(server, max_retries=1)
    failed = respond(adapter, cases()[:1])[0]
    assert failed.error and "HTTP 500" in failed.error
    assert adapter.usage()["errors"] == 1


def test_429_then_500s_then_success(server: FakeOpenAI) -> None:
    server.script(CHAT, Scripted(429, headers={"Retry-After": "1"}), Scripted(500),
                  Scripted(500))
    answers = respond(model(server, max_retries=3), cases()[:1])
    assert answers[0].error is None
    assert server.count(CHAT) == 4
    assert server.times[1][1] - server.times[0][1] >= 0.95


def test_a_timeout_is_retried(server: FakeOpenAI) -> None:
    server.script(CHAT, Scripted(delay=HELD))
    answers = respond(model(server, timeout=SHORT_TIMEOUT, max_retries=1), cases()[:1])
    assert answers[0].error is None and server.count(CHAT) == 2


def test_calls_are_persisted_and_never_paid_twice(server: FakeOpenAI, tmp_path: Path) -> None:
    batch = cases()
    first = respond(model(server, tmp_path), batch)
    assert server.count(CHAT) == 3
    adapter = model(server, tmp_path, concurrency=1)
    again = respond(adapter, batch)
    assert server.count(CHAT) == 3
    assert [a.citations for a in again] == [a.citations for a in first]
    assert adapter.usage()["cached"] == 3
    # Another prompt is another call.
    prompt = tmp_path / "p.j2"
    prompt.write_text("{% block user %}{{ query }}{% for p in passages %}\n"
                      "<passage number=\"{{ loop.index }}\">\nsource: {{ p.source }}\n"
                      "{{ p.content }}\n</passage>{% endfor %}{% endblock %}", encoding="utf-8")
    respond(model(server, tmp_path, prompt=str(prompt)), batch)
    assert server.count(CHAT) == 6


def test_parse_answer() -> None:
    answer, cits = parse_answer('{"answer": "a", "citations": [{"source": "S", "quote": "q"}]}')
    assert answer == "a" and cits[0].source == "S" and cits[0].content == "q"
    with pytest.raises(ValueError, match="not JSON"):
        parse_answer("Sure! Here it is")
    with pytest.raises(ValueError, match="no content"):
        parse_answer(None)


def test_identity_and_early_checks() -> None:
    adapter = OpenaiModel(openai_api_key="sk-zzz", concurrency=3)
    ident = adapter.identity()
    assert "openai_api_key" not in ident and "concurrency" not in ident
    assert ident["model"] == "gpt-4o-mini" and len(ident["prompt_sha"]) == 12
    assert "sk-zzz" not in repr(adapter)
    with pytest.raises(RagciteError, match=r"model\.openai_api_key"):
        OpenaiModel().check()
    with pytest.raises(RagciteError, match="structured_output"):
        OpenaiModel(openai_api_key="k", structured_output="xml").check()


def test_the_markers_style_cites_the_numbered_passages_it_showed(server: FakeOpenAI) -> None:
    # The model answers with markers over the two passages shown: [1] and [2] cite them, in
    # the order shown; [5] points past them (dangling, not a citation).
    server.answer = lambda body: {"answer": "Ask five days ahead [1]. Use the VPN [2][5]."}
    batch = cases()[:1]
    (answer,) = respond(model(server, citation_style="markers"), batch)
    body = server.bodies[0][1]
    assert body["response_format"]["json_schema"]["schema"] == STYLES["markers"][1]
    assert "square brackets" in body["messages"][0]["content"]
    shown = re.findall(r"source: (.*)\n(.*)\n</passage>", body["messages"][-1]["content"])
    assert len(shown) == 2
    assert [(d.source, d.text) for d in answer.documents] == shown
    assert [(c.source, c.content, c.claim) for c in answer.citations] == [
        (*shown[0], "Ask five days ahead [1]."), (*shown[1], "Use the VPN [2][5].")]
    assert (answer.dangling, answer.unread_markers, answer.error) == (1, 0, None)
    # The same model in the quotes style: the schema asks for quoted citations.
    respond(model(server), batch)
    assert server.bodies[1][1]["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA
    assert OpenaiModel(citation_style="markers").identity()["prompt_sha"] != (
        OpenaiModel().identity()["prompt_sha"])
    with pytest.raises(RagciteError, match="citation_style"):
        OpenaiModel(openai_api_key="k", citation_style="footnotes").check()

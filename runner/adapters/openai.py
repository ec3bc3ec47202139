"""The `openai` adapter: BM25 retrieval over the knowledge base (the `extractive` retriever),
then an OpenAI-compatible chat model answers with citations (source and verbatim quote).

The prompt is a Jinja template; the reply is constrained to :data:`ANSWER_SCHEMA` through
structured output (``structured_output: json_object`` for servers without JSON-schema support).
A call that fails after its retries (:func:`runner.api.client.retrying`), or a reply that is not
that JSON, is ``Response(error=...)``. Every call is persisted as it returns, keyed by a digest
of the exact request, so an interrupted run resumes without paying twice.
"""

from __future__ import annotations

import json
import reprlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from runner.adapters.base import AdapterContext, BaseAdapter
from runner.adapters.extractive import ExtractiveModel, Retrieval
from runner.api.cache import ResultStore, request_key
from runner.api.client import OpenaiCaller, describe_error, effective_base_url, shared
from runner.api.prompts import check_prompt, load_prompt
from runner.api.usage import token_count
from runner.config.constraints import POSITIVE, OneOf, Range, allows
from runner.data.models import Case, Citation, Response, Source
from runner.redact import known_secrets, scrub_data

NAMESPACE = "openai-chat"

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "citations": {"type": "array", "items": {
        "type": "object",
        "properties": {"source": {"type": "string"}, "quote": {"type": "string"}},
        "required": ["source", "quote"], "additionalProperties": False}}},
    "required": ["answer", "citations"],
    "additionalProperties": False,
}

#: Each citation style's packaged prompt and reply schema: ``quotes`` (source and verbatim
#: quote per citation) or ``markers`` (an answer citing the numbered passages with ``[n]``).
STYLES: dict[str, tuple[str, dict[str, Any]]] = {
    "quotes": ("rag_answer.j2", ANSWER_SCHEMA),
    "markers": ("rag_markers.j2", {"type": "object", "properties": {"answer": {"type": "string"}},
                                   "required": ["answer"], "additionalProperties": False})}


class _Quote(BaseModel):  # other keys of a reply are ignored (pydantic's default)
    source: Source
    quote: str = ""


class _Answer(BaseModel):
    answer: str = ""
    citations: list[_Quote] = []


def parse_answer(content: Any) -> tuple[str, list[Citation]]:
    """The answer and citations of a structured reply.

    Raises:
        ValueError: Not JSON, or not the expected shape.
    """
    if not isinstance(content, str) or not content.strip():
        raise ValueError(f"the model returned no content as text: {reprlib.repr(content)}")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not JSON ({exc.msg} at char {exc.pos}): "
                         f"{content[:80]!r}") from None
    try:
        parsed = _Answer.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "reply"
        raise ValueError(f"the reply does not match the answer schema: {where}: "
                         f"{err['msg']}") from None
    return parsed.answer, [Citation(source=q.source, content=q.quote) for q in parsed.citations]


@dataclass
class OpenaiModel(Retrieval, OpenaiCaller, BaseAdapter):
    """Retrieve with BM25, answer with an OpenAI-compatible chat model, cite verbatim quotes.

    The chat ``model``, its server and transport are the settings of :class:`OpenaiCaller`.

    Args:
        citation_style: ``quotes`` (the model names each citation's source and quotes it) or
            ``markers`` (the model cites the numbered passages with ``[n]`` markers; the
            response's documents are the passages it was shown, in order, and its markers are
            read as in any answer with markers, docs/formats.md).
        prompt: A packaged prompt (``templates/prompts/``) or the path of your own Jinja file
            with ``{% block system %}`` and ``{% block user %}``; variables ``query`` and
            ``passages`` (a list of {source, content}); null: the citation style's prompt
            (``rag_answer.j2``, ``rag_markers.j2``).
        top_k: Passages retrieved per query and shown to the model; it and how the knowledge
            base is split and tokenised (``chunk_unit``, ``chunk_size``, ``chunk_overlap``,
            ``stopwords``) are the settings of :class:`~runner.adapters.extractive.Retrieval`.
        structured_output: ``json_schema`` (strict schema) or ``json_object`` (JSON mode).
        temperature: Sampling temperature.
        max_tokens: Completion tokens allowed per answer.
    """

    citation_style: str = field(default="quotes", metadata=allows(
        OneOf(tuple(STYLES), "style")))
    prompt: str | None = None
    top_k: int = field(default=5, metadata=allows(POSITIVE))
    structured_output: str = field(default="json_schema", metadata=allows(
        OneOf(("json_schema", "json_object"), "mode")))
    temperature: float = field(default=0.0, metadata=allows(Range(0, 2)))
    max_tokens: int = field(default=1024, metadata=allows(POSITIVE))
    concurrency: int = shared("concurrency", 16)
    timeout: float = shared("timeout", 120.0)

    where: ClassVar[str] = "model"
    what: ClassVar[str] = "model=openai"

    # --- the optional hooks the pipeline calls ---------------------------------------------

    def check(self) -> None:
        """Fail early with a one-line message: missing key, bad settings, broken prompt."""
        super().check()
        check_prompt(self._prompt, "model.prompt")

    def identity(self) -> dict[str, Any]:
        """The fields plus the prompt's SHA-256."""
        return {**super().identity(), "base_url": effective_base_url(self.base_url),
                "prompt_sha": load_prompt(self._prompt).sha}

    @property
    def _prompt(self) -> str:
        return self.prompt or STYLES[self.citation_style][0]

    def bind(self, context: AdapterContext) -> None:
        """Index the knowledge base for retrieval."""
        super().bind(context)
        self._retriever = ExtractiveModel(**{f.name: getattr(self, f.name)
                                             for f in fields(Retrieval)})
        self._retriever.bind(context)

    # --- answering --------------------------------------------------------------------------

    def request(self, query: str, passages: Sequence[Citation]) -> dict[str, Any]:
        """The chat-completion request for one case."""
        return {
            "model": self.model,
            "messages": load_prompt(self._prompt).render(
                query=query, passages=[{"source": p.source, "content": p.content}
                                       for p in passages]),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "cited_answer", "strict": True, "schema": STYLES[self.citation_style][1]}}
            if self.structured_output == "json_schema" else {"type": "json_object"},
        }

    async def respond(self, cases: Sequence[Case]) -> list[Response]:
        """Retrieve for the whole batch at once, then answer every case concurrently."""
        if not cases:
            return []
        self.check()
        shown = [r.citations for r in self._retriever.respond_sync(cases)]
        requests = [self.request(c.query, passages) for c, passages in zip(cases, shown)]
        keys = [request_key("chat", effective_base_url(self.base_url), r) for r in requests]
        with ResultStore(self.context.cache_dir, NAMESPACE, self._memory) as store:  # bound
            out = {key: self._response(value["content"], value.get("usage"), None)
                   for key, value in store.get_many(keys).items()}
            self._usage.add(cached=len(out))
            todo = {k: r for k, r in zip(keys, requests) if k not in out}

            async def answer(client: Any, key: str) -> None:
                out[key] = await self._call(client, todo[key], store, key)

            await self._send_each(list(todo), answer)
        return [self._numbered(out[k], passages) for k, passages in zip(keys, shown)]

    def _numbered(self, response: Response, passages: Sequence[Citation]) -> Response:
        """In the ``markers`` style, the response over the passages shown (its documents, in
        order), whose markers make its citations."""
        if self.citation_style == "quotes" or response.error is not None:
            return response
        return Response.model_validate({
            **response.model_dump(exclude={"citations", "unread_markers"}),
            "documents": [{"source": p.source, "text": p.content} for p in passages]})

    async def _call(self, client: Any, req: dict[str, Any], store: ResultStore,
                    key: str) -> Response:
        start = time.perf_counter()
        resp = await self._post(client, "/chat/completions", req)
        latency = round(time.perf_counter() - start, 4)
        if isinstance(resp, Exception):
            return Response(error="openai call failed: "
                                  f"{describe_error(resp, 'model', self.max_retry_after)}",
                            latency_s=latency)
        try:
            u = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
            self._usage.add(requests=1, input_tokens=u.get("prompt_tokens"),
                            output_tokens=u.get("completion_tokens"))
            usage = {k: float(u[k]) for k in ("prompt_tokens", "completion_tokens")
                     if token_count(u.get(k)) is not None} or None  # the figures known
            choice = resp["choices"][0]
            refusal = choice["message"].get("refusal")
            error = (f"the model refused: {str(refusal)[:200]}" if refusal
                     else "the reply was cut off at model.max_tokens"
                     if choice.get("finish_reason") == "length" else None)
            content = choice["message"].get("content")
        except Exception as exc:
            return Response(error=f"openai reply is malformed: {describe_error(exc)}",
                            latency_s=latency)
        if error:
            return Response(error=error, usage=usage, latency_s=latency)
        response = self._response(content, usage, latency)
        if response.error is None:
            # A key the server echoed is not cached (the response itself is scrubbed later).
            store.put(key, scrub_data({"content": content, "usage": usage}, known_secrets()))
        return response

    @staticmethod
    def _response(content: Any, usage: dict[str, float] | None,
                  latency: float | None) -> Response:
        try:
            answer, citations = parse_answer(content)
        except ValueError as exc:
            return Response(error=str(exc), usage=usage, latency_s=latency)
        return Response(answer=answer, citations=citations, usage=usage, latency_s=latency)

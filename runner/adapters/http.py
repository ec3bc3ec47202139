"""The `http` adapter: the user's own RAG service over HTTP.

The JSON body of each case is rendered from a Jinja template (``body``); the answer and the
citations are read from the JSON reply with JMESPath. Headers name environment variables, never
values. 408/409/429/5xx replies, timeouts and connection errors are retried with exponential
backoff; a ``Retry-After`` is waited out up to ``max_retry_after`` seconds and a longer one
fails the case at once, saying so (the same rule and message as the openai components). A
401/403 stops the run with one line (the first request goes alone, so a refused credential
costs one request). The raw replies are persisted as they arrive, keyed by (method, url, body):
changing only the JMESPath expressions re-reads them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import ValidationError

from runner.adapters.base import BaseAdapter
from runner.api.cache import ResultStore, request_key
from runner.api.client import (
    MAX_BACKOFF,
    Caller,
    Transport,
    http_client,
    httpx_module,
    refuse_key,
    retrying,
    waits_too_long,
)
from runner.api.usage import token_count
from runner.config.constraints import Range, allows
from runner.data.loading import validation_to_data_error
from runner.data.mapping import compile_expression, shown
from runner.data.models import Case, Response
from runner.errors import RagciteError
from runner.redact import ENV_REF, header_env_names, known_secrets, protect, scrub_data, scrub_text

NAMESPACE = "http-replies"


def header_value(spec: str, name: str) -> str:
    """The value of one header from its spec: an environment variable name (``RAG_TOKEN``) or
    text with ``$NAME`` references (``Bearer $RAG_TOKEN``).

    Raises:
        RagciteError: The spec names no variable (a literal secret), or a variable is unset.
    """
    spec = str(spec)
    refs = header_env_names(spec)
    if not refs:
        raise RagciteError(
            f"model.headers.{name}: give the name of an environment variable (RAG_TOKEN) "
            f"or text referring to one (Bearer $RAG_TOKEN), never the value itself")
    missing = [r for r in refs if not os.environ.get(r)]
    if missing:
        raise RagciteError(f"model.headers.{name}: the environment variable {missing[0]} "
                           "is not set")
    protect(os.environ[r] for r in refs)  # a service that echoes its token shows ***
    template = spec if ENV_REF.search(spec) else "$" + spec
    return ENV_REF.sub(lambda m: os.environ[m.group(1) or m.group(2)], template)


@dataclass
class HttpModel(Caller, Transport, BaseAdapter):
    """POST each case to your RAG service and read its answer and citations from the reply.

    Its transport settings (``concurrency``, ``timeout``, ``max_retries``,
    ``max_retry_after``) are those of :class:`Transport`.

    Args:
        url: The endpoint.
        method: HTTP method (``POST``; with ``GET`` the body is not sent).
        body: Jinja template of the JSON body; variables ``query``, ``id``, ``metadata``,
            ``case`` (the case as a dict). Use ``| tojson`` to quote values.
        headers: Header name → environment variable name, or text with ``$NAME`` references
            (``Authorization: "Bearer $RAG_TOKEN"``). Values are never written anywhere.
        citations: JMESPath giving a list of ``{source, content}`` from the reply, e.g.
            ``"refs[].{source: doc, content: quote}"``.
        response: JMESPath of the whole response in any shape of docs/formats.md (``@`` for a
            reply that is one: ``{answer, documents}`` with markers, ``{provider, raw,
            documents}``, citations with offsets, ...), read as a stored response is; when
            set, `citations` and `answer` are not used.
        answer: JMESPath of the answer text (null: none).
        tokens: JMESPath of a token-usage object in the reply (``{prompt_tokens,
            completion_tokens}`` or ``{input_tokens, output_tokens}``), null for none.
        backoff: First retry delay in seconds (doubles per attempt, at most 8 s).
    """

    url: str = "???"
    method: str = "POST"
    body: str = '{"query": {{ query | tojson }}}'
    headers: dict[str, str] = field(default_factory=dict, metadata={"identity": False})
    citations: str = "citations"
    answer: str | None = "answer"
    response: str | None = None
    tokens: str | None = None
    backoff: float = field(default=0.5, metadata=allows(Range(0, MAX_BACKOFF, unit="seconds"),
                                                        identity=False))

    # --- the optional hooks the pipeline calls ---------------------------------------------

    def check(self) -> None:
        """Fail early: no URL, a bad template or JMESPath, a header variable not set."""
        if not re.match(r"^https?://", self.url or ""):
            raise RagciteError(f"model.url must be an http(s) URL, got {self.url!r}")
        self._template  # noqa: B018 - compiled now, so a broken template fails early
        exprs = {"citations": self.citations, "answer": self.answer, "tokens": self.tokens,
                 "response": self.response}
        for key, expr in ((k, e) for k, e in exprs.items() if e is not None):
            try:
                compile_expression(expr)
            except JMESPathError as exc:
                raise RagciteError(f"model.{key}: invalid JMESPath {shown(expr)}: "
                                   f"{' '.join(str(exc).split())}") from None
        self._headers()

    # --- requests -------------------------------------------------------------------------

    @functools.cached_property
    def _template(self) -> jinja2.Template:
        env = jinja2.Environment(autoescape=False, undefined=jinja2.StrictUndefined)
        try:
            return env.from_string(self.body)
        except jinja2.TemplateSyntaxError as exc:
            raise RagciteError(f"model.body: template line {exc.lineno}: "
                               f"{exc.message}") from None

    def _headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", "Accept": "application/json",
                **{str(name): header_value(spec, str(name))
                   for name, spec in (self.headers or {}).items()}}

    def render(self, case: Case) -> Any:
        """The JSON body for one case.

        Raises:
            ValueError: The template fails or renders invalid JSON.
        """
        try:
            text = self._template.render(query=case.query, id=case.id, metadata=case.metadata,
                                         case=case.model_dump(mode="json", exclude={"response"}))
        except jinja2.TemplateError as exc:
            raise ValueError(f"model.body: {exc}") from None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"model.body rendered invalid JSON ({exc.msg} at char {exc.pos}): "
                             f"{text[:80]!r}") from None

    def extract(self, reply: Any) -> Response:
        """The response read out of a JSON reply with the configured JMESPath expressions (the
        object at `response`, else the citations and the answer), validated as a stored response
        is; a problem is the case's error."""
        key, expr = ("response", self.response) if self.response else ("citations", self.citations)
        try:
            found = jmespath.search(expr, reply)
            response = Response.model_validate(found if self.response else self._read(reply, found))
        except JMESPathError as exc:
            return Response(error=f"model.{key}: {exc}")
        except ValidationError as exc:
            where = f"the reply's {key} at {expr!r}"
            return Response(error=str(validation_to_data_error(exc, where, None)))
        figures = self._figures(reply)  # its token counts (a figure not a count left out)
        return response.model_copy(update={"usage": None if figures is None else {
            k: float(v) for k, v in figures.items() if token_count(v) is not None}})

    def _read(self, reply: Any, citations: Any) -> dict[str, Any]:
        """The answer at `answer` (JSON text when not a string; empty for none) and the
        ``{source, content}`` of each citation object of a list (content as text, empty for
        none; other keys dropped), to be validated."""
        answer = jmespath.search(self.answer, reply) if self.answer else None
        if isinstance(citations, list):
            citations = [{"source": c.get("source"), "content": "" if c.get("content") is None
                          else str(c["content"])} if isinstance(c, dict) else c for c in citations]
        return {"answer": answer if isinstance(answer, str) else "" if answer is None
                else json.dumps(answer, ensure_ascii=False), "citations": citations}

    def _figures(self, reply: Any) -> dict[str, Any] | None:
        """The usage object at `tokens` as the reply gave it ({} when it has none), or None
        when `tokens` is not set."""
        if not self.tokens:
            return None
        raw = jmespath.search(self.tokens, reply)
        return raw if isinstance(raw, dict) else {}

    def _client(self) -> Any:
        limits = httpx_module().Limits(max_connections=int(self.concurrency))
        return http_client(timeout=float(self.timeout), limits=limits, headers=self._headers())

    async def respond(self, cases: Sequence[Case]) -> list[Response]:
        """Send every case of the batch, concurrently."""
        if not cases:
            return []
        self.check()
        out: list[Response | None] = [None] * len(cases)
        bodies: dict[int, Any] = {}
        for i, case in enumerate(cases):
            try:
                bodies[i] = self.render(case)
            except ValueError as exc:
                out[i] = Response(error=str(exc))
        keys = {i: request_key(self.method.upper(), self.url, b) for i, b in bodies.items()}
        cache_dir = self._context.cache_dir if self._context is not None else None
        with ResultStore(cache_dir, NAMESPACE, self._memory) as store:
            found = store.get_many(list(keys.values()))
            for i, key in keys.items():
                if key in found:
                    out[i] = self.extract(found[key]["reply"])
                    self._usage.add(cached=1)
            todo = [i for i in keys if out[i] is None]

            async def send(client: Any, i: int) -> None:
                out[i] = await self._send(client, bodies[i], store, keys[i])

            await self._send_each(todo, send)
        return [r if r is not None else Response(error="no response") for r in out]

    async def _send(self, client: Any, body: Any, store: ResultStore, key: str) -> Response:
        httpx2 = httpx_module()
        start = time.perf_counter()
        try:
            resp = await retrying(self.max_retries, self.max_retry_after, self.backoff)(
                self._attempt, client, body)
        except httpx2.HTTPStatusError as exc:
            text = " ".join(scrub_text(exc.response.text, known_secrets()).split())[:200]
            last = waits_too_long(exc, float(self.max_retry_after), "model") or text
            return self._failed(f"HTTP {exc.response.status_code}: {last}", start)
        except httpx2.TransportError as exc:  # timeouts and connection errors
            return self._failed(f"{type(exc).__name__}: {exc}" if str(exc)
                                else type(exc).__name__, start)
        latency = round(time.perf_counter() - start, 4)
        try:
            reply = scrub_data(resp.json(), known_secrets())
        except ValueError:
            self._usage.add(errors=1)
            text = scrub_text(resp.text, known_secrets())
            return Response(error=f"the service replied with invalid JSON: {text[:120]!r}",
                            latency_s=latency)
        raw = self._figures(reply)  # the token figures when `tokens` is set
        tokens: dict[str, Any] = {} if raw is None else {
            "input_tokens": raw.get("prompt_tokens", raw.get("input_tokens")),
            "output_tokens": raw.get("completion_tokens", raw.get("output_tokens"))}
        self._usage.add(requests=1, **tokens)
        response = self.extract(reply)
        if response.error is None:
            store.put(key, {"reply": reply})
        return response.model_copy(update={"latency_s": latency})

    async def _attempt(self, client: Any, body: Any) -> Any:
        """One request; a reply that is not a success raises (``HTTPStatusError``)."""
        method = self.method.upper()
        resp = await client.request(method, self.url,
                                    **({} if method == "GET" else {"json": body}))
        refuse_key(resp.status_code, "model=http", "the environment variables model.headers names")
        self._key_accepted = True
        resp.raise_for_status()
        return resp

    def _failed(self, last: str, start: float) -> Response:
        self._usage.add(errors=1)
        return Response(error=f"the service failed: {last}",
                        latency_s=round(time.perf_counter() - start, 4))

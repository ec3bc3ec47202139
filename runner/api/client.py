"""Shared plumbing of the components that call a server (OpenAI-compatible APIs, RAG services).

- :func:`http_client`: the HTTP client of every API component, whose timeout is a deadline: each
  request attempt ends within it, wall-clock, the whole reply included (httpx's own timeout
  bounds each read, so a server trickling a byte a second would never time out).
- :func:`retrying`: the one retry policy of every API component (the openai SDK's own retries
  are off), with the one reading of ``Retry-After`` (:func:`retry_after`) and its ceiling
  ``max_retry_after``; a longer wait fails the call at once, saying so (:func:`describe_error`).
- :func:`require_key`, :func:`refuse_key`: a missing key fails before any work, a 401/403 reply
  stops the run with one line (the component's :class:`Gate` closes; a component's first
  request goes alone until the server has accepted the key, so a bad key costs one request).
- :class:`Caller`, :class:`OpenaiCaller`: what every API component shares (usage, one gated
  client per batch, the retried POST); results persist in a :class:`~runner.api.cache.ResultStore`.
- :class:`Transport`, :class:`OpenaiCaller`: the settings they share, declared once with their
  ranges (:func:`shared` gives one of them another default in a component).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import functools
import importlib
import logging
import math
import os
import random
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import tenacity

from runner.api.usage import Usage
from runner.config.constraints import COUNT, POSITIVE, SECONDS, Range, allows
from runner.errors import RagciteError

T = TypeVar("T")

MAX_RETRY_AFTER = 60.0
"""Default ceiling (s) on a server's ``Retry-After`` that a call waits out (``max_retry_after``)."""
RETRY_AFTER = Range(0, 120, unit="seconds")
"""What ``max_retry_after`` allows."""
MAX_BACKOFF = 8.0
"""The longest wait between two attempts without a ``Retry-After``."""
_RETRIED = frozenset({408, 409, 429})
_REFUSED = {401: "401 Unauthorized", 403: "403 Forbidden"}


def require_key(key: str | None, where: str, what: str) -> str:
    """The key, or the one-line RagciteError a user can act on (`where`: the config path,
    ``matcher``; `what`: the component as chosen, ``matcher=llm``)."""
    if key is not None and str(key).strip() and str(key) != "???":
        return str(key)
    raise RagciteError(
        f"{what} needs an API key: set the OPENAI_API_KEY environment variable or pass "
        f"{where}.openai_api_key=... (for a local server that checks no key, any value works)")


def effective_base_url(base_url: str | None) -> str | None:
    """The server a client really talks to: `base_url`, else ``$OPENAI_BASE_URL``, else None
    (OpenAI). Part of every cache key, so two servers never share results."""
    return base_url or os.environ.get("OPENAI_BASE_URL") or None


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from a reply's ``retry-after-ms`` or ``Retry-After`` header (seconds or
    an HTTP date), or None when it gives none."""
    ms, value = (headers or {}).get("retry-after-ms"), (headers or {}).get("retry-after")
    for text, divisor in ((ms, 1000.0), (value, 1.0)):
        with contextlib.suppress(TypeError, ValueError):
            seconds = float(text) / divisor  # type: ignore[arg-type]
            return None if math.isnan(seconds) else max(0.0, seconds)
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)  # type: ignore[arg-type]
        return max(0.0, when.timestamp() - time.time())
    return None


def httpx_module() -> Any:
    """The HTTP client library: httpx2 (openai 3.x's), else httpx (Python 3.10)."""
    try:
        return importlib.import_module("httpx2")
    except ImportError:  # pragma: no cover - Python 3.10
        return importlib.import_module("httpx")


@functools.cache
def _deadline_client() -> type:
    import anyio

    httpx = httpx_module()

    class DeadlineClient(httpx.AsyncClient):  # type: ignore[name-defined]
        async def send(self, request: Any, **kwargs: Any) -> Any:
            seconds = (request.extensions.get("timeout") or self.timeout.as_dict())["read"]
            try:
                with anyio.fail_after(seconds):
                    return await super().send(request, **kwargs)
            except TimeoutError:
                raise httpx.ReadTimeout(f"no complete reply within {seconds:g} s",
                                        request=request) from None

    return DeadlineClient


def http_client(**kwargs: Any) -> Any:
    """An ``httpx.AsyncClient`` (`kwargs` as for it) whose ``timeout`` is a deadline: a request
    attempt not completed within it, the whole reply read, raises ``httpx.ReadTimeout``
    (retried like any timeout by :func:`retrying`). The client logs no request at INFO
    (thousands of lines a run) unless the user configured its logger."""
    for logger in map(logging.getLogger, ("httpx2", "httpx")):
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
    return _deadline_client()(**kwargs)


def _reply(exc: BaseException | None) -> Any:
    """The HTTP reply of an error status (the openai SDK's or httpx's exception), else None."""
    import openai

    if isinstance(exc, (openai.APIStatusError, httpx_module().HTTPStatusError)):
        return exc.response
    return None


def _retryable(exc: BaseException, max_retry_after: float) -> bool:
    """Whether a failed attempt is tried again (the rule of the openai SDK): a connection error
    or timeout, or a 408/409/429/5xx reply (or one whose ``x-should-retry`` says so) that does
    not ask to wait longer than `max_retry_after`."""
    import openai

    reply = _reply(exc)
    if reply is None:
        return isinstance(exc, (openai.APIConnectionError, httpx_module().TransportError))
    after, flag = retry_after(reply.headers), reply.headers.get("x-should-retry")
    return (after is None or after <= max_retry_after) and (
        flag == "true" if flag in ("true", "false") else _retried_status(reply))


def _retried_status(reply: Any) -> bool:
    return bool(reply.status_code in _RETRIED or reply.status_code >= 500)


def backoff_delay(attempt: int, base: float, after: float | None) -> float:
    """The wait before retry `attempt` (0-based): the reply's ``Retry-After`` (`after`, already
    within the ceiling) when it gives a positive one, else ``min(base·2^attempt, 8)`` minus up to
    25 % jitter."""
    return after or min(base * 2 ** attempt, MAX_BACKOFF) * (1 - 0.25 * random.random())


def retrying(max_retries: int, max_retry_after: float, backoff: float = 0.5) -> Any:
    """The retry policy of every API component, a ``tenacity.AsyncRetrying``:
    ``await retrying(...)(fn, *args, **kwargs)`` calls ``fn`` up to ``max_retries + 1`` times and
    re-raises the last error.

    One mechanism, tenacity, for the openai SDK's calls and the `http` adapter's alike: the
    SDK's own retries live inside an OpenAI client (they cannot serve a user's RAG service, nor
    take the adapter's ``backoff``), and httpx's transport retries cover connection failures
    only and would run inside each attempt's deadline. Make one per call (its state is per call).

    Args:
        max_retries: Retries after the first attempt.
        max_retry_after: The longest ``Retry-After`` (s) waited out; a longer one is not retried.
        backoff: The first wait without a ``Retry-After`` (doubling, at most 8 s).
    """
    ceiling = float(max_retry_after)

    def wait(state: tenacity.RetryCallState) -> float:
        reply = _reply(state.outcome.exception() if state.outcome else None)
        return backoff_delay(state.attempt_number - 1, float(backoff),
                             retry_after(reply.headers) if reply is not None else None)

    return tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(int(max_retries) + 1), wait=wait, reraise=True,
        retry=tenacity.retry_if_exception(lambda exc: _retryable(exc, ceiling)))


def waits_too_long(exc: BaseException, max_retry_after: float,
                   where: str = "matcher") -> str | None:
    """What a retryable error reply whose ``Retry-After`` exceeds `max_retry_after` (the call
    was then not retried) says about it, naming ``<where>.max_retry_after``; else None."""
    reply = _reply(exc)
    after = retry_after(reply.headers) if reply is not None else None
    if after is None or after <= max_retry_after or not _retried_status(reply):
        return None
    return (f"Retry-After {after:g} s exceeds the ceiling of {max_retry_after:g} s "
            f"({where}.max_retry_after); not retried")


def describe_error(exc: BaseException, where: str = "matcher",
                   max_retry_after: float = MAX_RETRY_AFTER) -> str:
    """A one-line description of a failed call (status code and the server's message).

    A retryable reply that asked to wait longer than `max_retry_after` says so, naming the
    key (``<where>.max_retry_after``).
    """
    status = getattr(exc, "status_code", None)
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    text = waits_too_long(exc, max_retry_after, where) or " ".join(str(exc).split())
    text = text[:297] + "..." if len(text) > 300 else text
    return f"{head}: {text}" if text else head


def refuse_key(status: int | None, what: str, hint: str) -> None:
    """Stop the run (a RagciteError) when the server refused the credentials (401/403);
    `hint` says where they come from (``OPENAI_API_KEY or matcher.openai_api_key``)."""
    if status in _REFUSED:
        raise RagciteError(f"{what}: the server refused the API key ({_REFUSED[status]}); "
                           f"set a valid key in {hint}")


class Gate(asyncio.Semaphore):
    """``asyncio.Semaphore(concurrency)`` for the calls of one component, closed for good when
    a call inside it raises a RagciteError (a refused key): a call still waiting sends nothing."""

    closed = False

    async def __aenter__(self) -> None:
        await self.acquire()
        if self.closed:
            self.release()
            raise RuntimeError("an earlier call stopped the run")

    async def __aexit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is not None and issubclass(kind, RagciteError):
            self.closed = True
        self.release()


async def gather_all(aws: Iterable[Awaitable[Any]]) -> list[Any]:
    """``asyncio.gather``, except that the first exception cancels the others (no request is
    sent after a fault that stops the run)."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def send_all(items: Sequence[T], send: Callable[[T], Awaitable[Any]],
                   alone_first: bool) -> None:
    """``send`` every item concurrently; the first one alone when `alone_first` (a component
    whose key the server has not yet accepted: a refused key then costs one request)."""
    rest = list(items)
    if alone_first and rest:
        await send(rest.pop(0))
    await gather_all(send(item) for item in rest)


class Caller:
    """What a component that calls a server keeps between batches, and how it sends a batch.

    Its state is made on first use; a subclass gives :meth:`_client`.
    """

    concurrency: int
    model: str | None = None  # the priced model (OpenaiCaller's field); None for a plain HTTP API
    _key_accepted = False  # until a reply: the first request goes alone

    @functools.cached_property
    def _usage(self) -> Usage:
        return Usage(model=self.model)

    @functools.cached_property
    def _memory(self) -> dict[tuple[str, str], Any]:
        """The results when no cache folder is set."""
        return {}

    def usage(self) -> dict[str, Any]:
        """Requests, tokens and cache hits of this run."""
        return self._usage.to_dict()

    def _client(self) -> contextlib.AbstractAsyncContextManager[Any]:
        raise NotImplementedError

    async def _send_each(self, items: Sequence[T],
                         send: Callable[[Any, T], Awaitable[None]]) -> None:
        """``send(client, item)`` for every item on one client, at most ``concurrency`` at once
        (one :class:`Gate`), in bounded waves; the first alone until the key was accepted."""
        if not items:
            return
        gate = Gate(int(self.concurrency))
        async with self._client() as client:
            async def one(item: T) -> None:
                async with gate:
                    await send(client, item)

            wave = max(1024, 64 * int(self.concurrency))  # few pending coroutines at once
            for start in range(0, len(items), wave):
                await send_all(items[start:start + wave], one, alone_first=not self._key_accepted)


@dataclass
class Transport:
    """The settings of how a component reaches its server; none of them changes a result, so
    none is part of its identity.

    Args:
        concurrency: Requests in flight at once.
        timeout: Seconds per request attempt, the whole reply included (a deadline).
        max_retries: Retries of a failed request (408/409/429/5xx, timeouts, connection errors).
        max_retry_after: The longest ``Retry-After`` (seconds, 0 to 120) waited out; a
            retryable reply asking for longer fails the call at once, saying so.
    """

    concurrency: int = field(default=8, metadata=allows(POSITIVE, identity=False))
    timeout: float = field(default=60.0, metadata=allows(SECONDS, identity=False))
    max_retries: int = field(default=4, metadata=allows(COUNT, identity=False))
    max_retry_after: float = field(default=MAX_RETRY_AFTER,
                                   metadata=allows(RETRY_AFTER, identity=False))


@dataclass
class OpenaiCaller(Caller, Transport):
    """A :class:`Caller` on an OpenAI-compatible API (``where``: ``matcher`` or ``model``;
    ``what``: the component as chosen, ``matcher=llm``), with the settings of :class:`Transport`.

    Args:
        model: The model the server runs.
        base_url: An OpenAI-compatible server (vLLM, Ollama, LiteLLM, ...); null = OpenAI (or
            the ``OPENAI_BASE_URL`` environment variable).
        openai_api_key: The key; ``${oc.env:OPENAI_API_KEY,null}`` in the config. Never part of
            any output.
    """

    where: ClassVar[str]
    what: ClassVar[str]
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    openai_api_key: str | None = field(default=None, repr=False, metadata={"identity": False})

    def check(self) -> None:
        """A missing key fails before any work (:func:`require_key`)."""
        require_key(self.openai_api_key, self.where, self.what)

    def _client(self) -> Any:
        """An asynchronous OpenAI-compatible client, closed on leaving it (create it inside the
        event loop that uses it), without retries of its own: its calls go through
        :func:`retrying`."""
        import openai

        timeout = float(self.timeout)
        return openai.AsyncOpenAI(
            api_key=require_key(self.openai_api_key, self.where, self.what),
            base_url=self.base_url or None, timeout=timeout, max_retries=0,
            http_client=http_client(timeout=timeout, follow_redirects=True,
                                    limits=openai.DEFAULT_CONNECTION_LIMITS))

    async def _post(self, client: Any, path: str, body: dict[str, Any]) -> Any:
        """The reply of the SDK's generic POST, retried by :func:`retrying`: a dict, as sent
        (its typed models would turn "12" into 12), or the exception of a call that failed (an
        error status after the retries, an unreadable reply). A refused key stops the run; a reply
        means the server took it, so later requests need not go alone."""
        try:
            reply = await retrying(self.max_retries, self.max_retry_after)(
                client.post, path, body=body, cast_to=dict)
        except Exception as exc:
            refuse_key(getattr(exc, "status_code", None), self.what,
                       f"OPENAI_API_KEY or {self.where}.openai_api_key")
            self._usage.add(errors=1)
            return exc
        self._key_accepted = True  # a reply: the server took the key
        return reply


def shared(name: str, default: Any) -> Any:
    """The field of the shared setting `name` (:class:`OpenaiCaller`) with another default, for
    a component that declares ``concurrency: int = shared("concurrency", 32)``."""
    declared = OpenaiCaller.__dataclass_fields__[name]
    return field(default=default, repr=declared.repr, metadata=declared.metadata)


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``factory()`` to completion from synchronous code.

    In a thread without an event loop this is ``asyncio.run``; inside a running loop (Jupyter)
    the coroutine runs on a fresh loop in a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()

"""A scriptable OpenAI-compatible server on 127.0.0.1 for tests and benchmarks.

The real ``openai`` SDK (and the `http` adapter) talk to it over loopback; nothing is mocked.

Endpoints: ``POST /v1/embeddings``, ``POST /v1/chat/completions``, ``GET /v1/models`` and
``POST /rag`` (a stand-in for a user's RAG service). Each reply is computed by a default handler
from the request, unless a test queued a scripted reply for that path::

    with FakeOpenAI() as server:
        server.script("/v1/chat/completions", Scripted(429, headers={"Retry-After": "1"}))
        server.judgments[("ref text", "cit text")] = 0.8     # P(yes) via log-probabilities
        server.vectors["some text"] = [1.0, 0.0, 0.0]
        ... LlmMatcher(base_url=server.v1, ...) ...
        server.input_faults["poison"] = Scripted(500)         # any embeddings request with it
        server.edits["/v1/embeddings"] = lambda body, reply: ...  # a default reply, altered
        server.counts["/v1/chat/completions"]   # requests received (retries included)
        server.bodies                           # (path, parsed JSON body) of each request

``latency`` adds a delay to every request (benchmarks); a delay ends early when the server
stops, so ``Scripted(delay=HELD)`` is a reply that never comes while a test runs. ``gather = n``
answers requests in groups of n (counted since ``reset_counts``), each once its whole group is in
flight (``max_in_flight`` is the most seen at once): proof of concurrency that does not depend
on timing. The handler sets ``disable_nagle_algorithm``
(without it each call takes ~44 ms on loopback).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_REF = re.compile(r"<reference_passage>\n(.*?)\n</reference_passage>", re.S)
_CIT = re.compile(r"<cited_passage>\n(.*?)\n</cited_passage>", re.S)
_QUESTION = re.compile(r"<question>\n(.*?)\n</question>", re.S)
_PASSAGE = re.compile(r"<passage number=\"\d+\">\nsource: (.*?)\n(.*?)\n</passage>", re.S)
HELD = 600.0
"""A delay no test waits out: the reply of a server that hangs (it ends when the server stops)."""
SHORT_TIMEOUT = 2.0
"""A client timeout that a HELD reply outlasts and a prompt one meets, even on a loaded machine
(a reply on loopback takes milliseconds)."""
GATHER_BOUND = 60.0
"""Seconds a request waits for the others of its `gather` before it is answered anyway."""


@dataclass
class Scripted:
    """One scripted reply: a status, a JSON (dict/list) or raw (bytes) body, headers, a delay.

    ``body=None`` with status 200 means "the default handler's reply, after `delay`".
    ``trickle`` > 0 sends the body one byte every `trickle` seconds (a server that trickles:
    each read gets a byte well within any read timeout), until the client hangs up.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0


def default_vector(text: str, dims: int = 8) -> list[float]:
    """A deterministic pseudo-random vector for a text."""
    raw = hashlib.sha256(text.encode("utf-8")).digest()
    return [(b - 127.5) / 127.5 for b in raw[:dims]]


def _logprob(p: float) -> float:
    return math.log(p) if p > 0 else -9999.0


class FakeOpenAI:
    """The server; use as a context manager (or call start/stop)."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self.queues: dict[str, deque[Scripted]] = defaultdict(deque)
        self.counts: Counter[str] = Counter()
        self.bodies: list[tuple[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.targets: list[str] = []  # each request's path and query, as sent
        self.times: list[tuple[str, float]] = []  # (path, arrival time.monotonic())
        # Embedding inputs the server rejects with a 400 (as for a text over the token limit).
        self.reject_inputs: set[str] = set()
        # Embedding inputs whose every request gets this reply (a 500, a truncated body, ...).
        self.input_faults: dict[str, Scripted] = {}
        self.vectors: dict[str, list[float]] = {}
        # (reference, citation) → P(yes) (a float) or a literal answer (a str, no logprobs).
        self.judgments: dict[tuple[str, str], float | str] = {}
        self.default_p_yes: Callable[[str, str], float] = (
            lambda ref, cit: 0.95 if ref == cit else 0.05)
        self.logprobs = True
        # Path → edit(request body, default reply) → the reply sent: a reply right in all but
        # one point (a duplicated index, a refusal, usage figures of -5 or "12").
        self.edits: dict[str, Callable[[Any, Any], Any]] = {}
        # Structured answers of the `openai` adapter: request body → {"answer", "citations"}.
        self.answer: Callable[[dict[str, Any]], Any] = self._default_answer
        # The `/rag` endpoint: request body → reply.
        self.rag: Callable[[dict[str, Any]], Any] = self._default_rag
        self.gather = 0
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Condition()
        self._stopped = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- control ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    @property
    def v1(self) -> str:
        """The base URL for OpenAI clients."""
        return self.url + "/v1"

    def script(self, path: str, *replies: Scripted) -> None:
        """Queue replies for the next requests to `path` (then the default handler resumes)."""
        with self._lock:
            self.queues[path].extend(replies)

    def count(self, path: str) -> int:
        with self._lock:
            return self.counts[path]

    def reset_counts(self) -> None:
        with self._lock:
            self.counts.clear()
            self.bodies.clear()
            self.headers_seen.clear()
            self.targets.clear()
            self.times.clear()
            self.max_in_flight = self.in_flight

    def start(self) -> FakeOpenAI:
        owner = self

        class Handler(_Handler):
            server_owner = owner

        self._stopped.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()  # held replies end now
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- default handlers ------------------------------------------------------------------

    def handle(self, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        if path == "/v1/embeddings":
            inputs = body.get("input")
            bad = self.reject_inputs.intersection([inputs] if isinstance(inputs, str)
                                                  else inputs or [])
            if bad:
                return 400, {"error": {"message": "This model's maximum context length is "
                                                  "8192 tokens", "type": "invalid_request_error",
                                       "code": None, "param": None}}, {}
            return 200, self._embeddings(body), {}
        if path == "/v1/chat/completions":
            return 200, self._chat(body), {}
        if path == "/v1/models":
            return 200, {"object": "list", "data": []}, {}
        if path == "/_stats":  # for a server in another process (benchmarks)
            with self._lock:
                return 200, {"counts": dict(self.counts)}, {}
        if path == "/rag":
            return 200, self.rag(body), {}
        return 404, {"error": {"message": f"no route {path}"}}, {}

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"]
        if isinstance(inputs, str):
            inputs = [inputs]
        data = []
        for i, text in enumerate(inputs):
            vec = self.vectors.get(text) or default_vector(text, int(body.get("dimensions") or 8))
            emb: Any = vec
            if body.get("encoding_format") == "base64":
                emb = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(t.split()) for t in inputs)
        return {"object": "list", "data": data, "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        tokens = len(text.split())
        if body.get("response_format"):
            content = json.dumps(self.answer(body))
            return _completion(body, content, None, tokens, 20)
        ref_m, cit_m = _REF.search(text), _CIT.search(text)
        ref = ref_m.group(1) if ref_m else ""
        cit = cit_m.group(1) if cit_m else ""
        verdict = self.judgments.get((ref, cit))
        if verdict is None:
            verdict = self.default_p_yes(ref, cit)
        if isinstance(verdict, str):
            return _completion(body, verdict, None, tokens, 1)
        p = float(verdict)
        answer = "Yes" if p >= 0.5 else "No"
        logprobs = None
        if body.get("logprobs") and self.logprobs:
            top: list[dict[str, Any]] = [
                {"token": "Yes", "logprob": _logprob(p), "bytes": None},
                {"token": "No", "logprob": _logprob(1 - p), "bytes": None}]
            top.sort(key=lambda t: -float(t["logprob"]))
            k = int(body.get("top_logprobs") or 1)
            logprobs = {"content": [{"token": answer, "logprob": _logprob(max(p, 1 - p)),
                                     "bytes": None, "top_logprobs": top[:k]}],
                        "refusal": None}
        return _completion(body, answer, logprobs, tokens, 1)

    @staticmethod
    def _default_answer(body: dict[str, Any]) -> Any:
        """Cite the first retrieved passage verbatim."""
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        passages = _PASSAGE.findall(text)
        cits = [{"source": s, "quote": q} for s, q in passages[:1]]
        question = _QUESTION.search(text)
        return {"answer": f"answer to {question.group(1) if question else '?'}",
                "citations": cits}

    @staticmethod
    def _default_rag(body: dict[str, Any]) -> Any:
        return {"text": f"answer to {body.get('question')}", "refs": []}


def _completion(body: dict[str, Any], content: str, logprobs: Any, prompt_tokens: int,
                completion_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "test"),
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": logprobs,
                     "message": {"role": "assistant", "content": content, "refusal": None}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class _Handler(BaseHTTPRequestHandler):
    server_owner: FakeOpenAI
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        return

    def _serve(self) -> None:
        owner = self.server_owner
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = None
        with owner._lock:
            owner.counts[path] += 1
            owner.bodies.append((path, body))
            owner.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
            owner.targets.append(self.path)
            owner.times.append((path, time.monotonic()))
            scripted = owner.queues[path].popleft() if owner.queues[path] else None
            if scripted is None and path == "/v1/embeddings" and isinstance(body, dict):
                inputs = body.get("input")
                scripted = next((owner.input_faults[t] for t in (
                    [inputs] if isinstance(inputs, str) else inputs or [])
                    if t in owner.input_faults), None)
            owner.in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
            owner._lock.notify_all()
            if owner.gather:  # the n requests of a group, since reset_counts, are all in flight
                group_end = (len(owner.bodies) - 1) // owner.gather * owner.gather + owner.gather
                owner._lock.wait_for(lambda: len(owner.bodies) >= group_end, GATHER_BOUND)
        owner._stopped.wait(owner.latency + (scripted.delay if scripted else 0.0))
        with owner._lock:  # before the reply: the client may send its next request at once
            owner.in_flight -= 1
        if body is None:
            status, payload, headers = 400, {"error": {"message": "invalid JSON body"}}, {}
        elif scripted is not None and (scripted.status != 200 or scripted.body is not None):
            status = scripted.status
            payload = scripted.body if scripted.body is not None else {
                "error": {"message": f"scripted status {scripted.status}", "type": "test"}}
            headers = scripted.headers
        else:
            status, payload, headers = owner.handle(path, body)
            if status == 200 and path in owner.edits:
                payload = owner.edits[path](body, payload)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if scripted is not None and scripted.trickle:
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(scripted.trickle)
            else:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()


def main() -> None:
    """Serve in this process until stdin closes (benchmarks run the server in a child process,
    so that it does not share the client's interpreter lock): prints the base URL first."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="A scripted OpenAI-compatible test server")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--p-yes", type=float, default=None,
                        help="P(yes) of every judgment (default: 0.95 if equal, else 0.05)")
    args = parser.parse_args()
    server = FakeOpenAI(latency=args.latency)
    if args.p_yes is not None:
        p_yes = args.p_yes
        server.default_p_yes = lambda ref, cit: p_yes
    with server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()

"""The `embeddings` matcher: cosine similarity of embedding vectors (SPEC 4.2).

Vectors come from an OpenAI-compatible embeddings API, each distinct text embedded once, in
requests within the API's limits (``max_inputs``, ``max_request_tokens``). They are stored on
disk as they arrive, keyed by (server, model, dimensions, text), so reruns and sweeps embed
nothing again. The raw cosine is kept (it may be below 0). :class:`EmbeddingVectors` (the vector
cache and the cosine) also serves ``LocalEmbeddingsMatcher``. Vectors are stored compactly (base64
float32) and checked to be usable numbers.
"""

from __future__ import annotations

import base64
import reprlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ValidationError

from runner.api.cache import ResultStore, digest, text_key
from runner.api.client import (
    Caller,
    Gate,
    OpenaiCaller,
    describe_error,
    effective_base_url,
    gather_all,
    run_sync,
    send_all,
    shared,
    waits_too_long,
)
from runner.config.constraints import POSITIVE, OneOf, Range, allows
from runner.matchers.base import BaseMatcher, CacheFolder, Checked, PairError, Similarity, TextPair

Vector = np.ndarray
_PAIR_CHUNK = 8192


def encode_vector(vec: Any) -> str:
    """A vector as base64 of little-endian float32 (compact cache storage)."""
    return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(data: str) -> Vector:
    """The inverse of :func:`encode_vector`."""
    return np.frombuffer(base64.b64decode(data), dtype="<f4")


def vector_problem(vec: Vector) -> str | None:
    """Why a vector is not a usable embedding (NaN or infinite values, all zeros, empty), or
    None for a good one."""
    if vec.ndim != 1 or vec.size == 0:
        return "an empty vector"
    if not np.isfinite(vec).all():
        return "a vector with NaN or infinite values"
    if not vec.any():
        return "an all-zero vector"
    return None


def usual_length(lengths: Sequence[int], expected: int | None = None) -> int | None:
    """The length vectors must have: `expected` (``dimensions``) when set, else the most common
    length (the longer on a tie), or None when there are no vectors."""
    if expected is not None:
        return int(expected)
    counts = Counter(lengths)
    return max(counts, key=lambda n: (counts[n], n)) if counts else None


def wrong_length(n: int, usual: int) -> PairError:
    """The error of a text whose vector has `n` values where the others have `usual`."""
    return PairError(f"embedding vector of length {n}, the others have {usual} (a server "
                     "that changed the model behind the same name? rerun with cache.clear=true)")


def cosine_pairs(pairs: Sequence[TextPair], vectors: dict[str, Vector | PairError]
                 ) -> list[Similarity]:
    """Cosine similarity per pair (a PairError where either text has no usable vector, or one
    whose length differs from the others')."""
    usual = usual_length([len(v) for v in vectors.values() if not isinstance(v, PairError)])
    ok = {t: v for t, v in vectors.items() if not isinstance(v, PairError) and len(v) == usual}
    errors = {t: v if isinstance(v, PairError) else wrong_length(len(v), usual or 0)
              for t, v in vectors.items() if t not in ok}
    out: list[Similarity] = [errors.get(a) or errors.get(b) or 0.0 for a, b in pairs]
    good = [i for i, sim in enumerate(out) if not isinstance(sim, PairError)]
    row = {t: i for i, t in enumerate(ok)}
    matrix = np.array(list(ok.values()), dtype=np.float32).reshape(len(ok), usual or 0)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)  # in place; zero rows stay 0
    for start in range(0, len(good), _PAIR_CHUNK):
        idx = good[start:start + _PAIR_CHUNK]
        ia = np.fromiter((row[pairs[i][0]] for i in idx), dtype=np.int64, count=len(idx))
        ib = np.fromiter((row[pairs[i][1]] for i in idx), dtype=np.int64, count=len(idx))
        sims = np.einsum("ij,ij->i", matrix[ia], matrix[ib])
        for i, sim in zip(idx, np.clip(sims, -1.0, 1.0).tolist()):
            out[i] = sim
    return out


Keep = Callable[[list[str], list[Vector | PairError]], None]
"""Takes the vectors of some texts as they arrive (:meth:`EmbeddingVectors.embed`)."""


def estimate_tokens(text: str, chars_per_token: float = 3.0) -> int:
    """A cheap upper-leaning token estimate: ASCII chars / `chars_per_token`, plus one token per
    non-ASCII character (CJK and other scripts take about one token per character or more)."""
    n_ascii = len(text.encode("ascii", "ignore"))
    return int(n_ascii / chars_per_token) + (len(text) - n_ascii) + 1


def plan_requests(texts: Sequence[str], max_inputs: int, max_tokens: int,
                  chars_per_token: float = 3.0) -> list[list[str]]:
    """Split texts into consecutive request batches within both limits.

    A single text over `max_tokens` still gets a request of its own (the server then decides).
    """
    batches: list[list[str]] = []
    tokens = 0
    for text in texts:
        est = estimate_tokens(text, chars_per_token)
        if not batches or len(batches[-1]) >= max_inputs or tokens + est > max_tokens:
            batches.append([])
            tokens = 0
        batches[-1].append(text)
        tokens += est
    return batches


@dataclass
class EmbeddingVectors(BaseMatcher, CacheFolder, Caller):
    """Base of the embedding matchers: a per-text vector cache and cosine similarities.

    Subclasses implement :meth:`vector_identity` and :meth:`embed`.
    """

    def vector_identity(self) -> dict[str, Any]:
        """What determines a text's vector (the cache namespace)."""
        raise NotImplementedError

    async def embed(self, texts: list[str], keep: Keep) -> None:
        """The vectors of texts that are not cached: ``keep(texts, vectors)`` as each batch
        arrives (a vector, or the PairError of a text without one, per text)."""
        raise NotImplementedError

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Cosine of each pair; each distinct text is embedded at most once, ever."""
        if not pairs:
            return []
        if isinstance(self, Checked):  # the key, or the extra (each backend's own check)
            self.check()
        return run_sync(lambda: self._similarities(pairs))

    async def _similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        # One event loop per call; the store is opened in its thread (SQLite is per thread).
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        namespace = "emb-" + digest(self.vector_identity())[:32]
        with ResultStore(self._cache_dir, namespace, self._memory) as store:
            keys = {t: text_key(t) for t in texts}
            found = store.get_many(list(keys.values()))
            decoded = {t: decode_vector(found[k]) for t, k in keys.items() if k in found}
            # A cached vector that is not a usable one (an older version's): embedded again.
            vectors: dict[str, Vector | PairError] = {
                t: v for t, v in decoded.items() if vector_problem(v) is None}
            self._usage.add(cached=len(vectors))

            def keep(batch: list[str], got: list[Vector | PairError]) -> None:
                for t, vec in zip(batch, got):  # vectors are stored as they arrive
                    vectors[t] = vec
                    if not isinstance(vec, PairError):
                        store.put(keys[t], encode_vector(vec))

            missing = [t for t in texts if t not in vectors]
            if missing:
                await self.embed(missing, keep)
        return cosine_pairs(pairs, vectors)


@dataclass
class EmbeddingsMatcher(EmbeddingVectors, OpenaiCaller):
    """Cosine similarity of vectors from an OpenAI-compatible embeddings API.

    The embedding ``model``, its server and transport are the settings of :class:`OpenaiCaller`.

    Args:
        dimensions: Ask for shorter vectors (models that support it); null = the model's own.
        max_inputs: Texts per request (the API allows 2048).
        max_request_tokens: Estimated tokens per request (the API allows 300,000).
        chars_per_token: ASCII characters per token in that estimate (3 leans safe).
        encoding_format: ``base64`` (compact) or ``float`` (for servers without base64).
    """

    levels: ClassVar[Mapping[str, float]] = {"strict": 0.9, "default": 0.8, "lenient": 0.7}
    similarity_range: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    where: ClassVar[str] = "matcher"
    what: ClassVar[str] = "matcher=embeddings"
    model: str = "text-embedding-3-small"
    dimensions: int | None = field(default=None, metadata=allows(POSITIVE))
    max_inputs: int = field(default=2048, metadata=allows(POSITIVE, identity=False))
    max_request_tokens: int = field(default=300_000, metadata=allows(POSITIVE, identity=False))
    chars_per_token: float = field(default=3.0, metadata=allows(Range(low=0.1), identity=False))
    encoding_format: str = field(default="base64", metadata=allows(
        OneOf(("base64", "float"), "encoding"), identity=False))
    concurrency: int = shared("concurrency", 4)

    def vector_identity(self) -> dict[str, Any]:
        """Server, model and dimensions: a text's vector depends on nothing else."""
        return {"backend": "openai", "base_url": effective_base_url(self.base_url),
                "model": self.model, "dimensions": self.dimensions}

    def identity(self) -> dict[str, Any]:
        """The fields without secrets and transport settings; the server as really used (last,
        after the model's settings)."""
        fields = {k: v for k, v in super().identity().items() if k != "base_url"}
        return {**fields, "base_url": effective_base_url(self.base_url)}

    async def embed(self, texts: list[str], keep: Keep) -> None:
        """Embed through the API: request batches concurrently, vectors stored as they come.

        A request that fails (a 400, a 5xx after the retries, a truncated or malformed reply)
        is split in halves to isolate the text(s) at fault, so the others keep their vectors;
        the splitting stops where both halves of a split fail alike with a 5xx or a bad reply
        (the server, not one text). A 401/403 stops the run (a RagciteError).
        """
        sem = Gate(int(self.concurrency))

        async def attempt(batch: list[str]) -> _Fault | None:
            async with sem:
                result = await self._request(client, batch)
            if isinstance(result, _Fault):
                return result
            keep(batch, result)
            return None

        async def isolate(batch: list[str], fault: _Fault) -> None:
            if len(batch) == 1 or fault.kind == "final":
                keep(batch, [fault.error] * len(batch))
                return
            halves = [batch[:len(batch) // 2], batch[len(batch) // 2:]]
            faults = await gather_all(attempt(h) for h in halves)
            if fault.kind == "server" and all(f is not None for f in faults):  # the server's
                faults = [_Fault(f.error, "final") for f in faults if f is not None]
            await gather_all(isolate(h, f) for h, f in zip(halves, faults) if f is not None)

        async def send(batch: list[str]) -> None:
            fault = await attempt(batch)
            if fault is not None:
                await isolate(batch, fault)

        async with self._client() as client:  # used by attempt
            batches = plan_requests(texts, int(self.max_inputs), int(self.max_request_tokens),
                                    float(self.chars_per_token))
            await send_all(batches, send, alone_first=not self._key_accepted)

    async def _request(self, client: Any, batch: list[str]) -> list[Vector | PairError] | _Fault:
        """One request: a vector (or the PairError of an unusable one) per text, or the fault."""
        dims = {} if self.dimensions is None else {"dimensions": int(self.dimensions)}
        resp = await self._post(client, "/embeddings", {
            "model": self.model, "input": batch, "encoding_format": self.encoding_format, **dims})
        if isinstance(resp, Exception):
            return _Fault.of(resp, self.max_retry_after)
        usage = resp.get("usage") if isinstance(resp, dict) else None
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if tokens is None:  # none reported: the estimate
            tokens = sum(estimate_tokens(t, self.chars_per_token) for t in batch)
        self._usage.add(requests=1, input_tokens=tokens)
        try:
            data = sorted(_Reply.model_validate(resp, strict=True).data, key=lambda d: d.index)
            if [d.index for d in data] != list(range(len(batch))):
                raise ValueError(f"index values {reprlib.repr([d.index for d in data])} "
                                 f"instead of 0..{len(batch) - 1}, each once")
            vectors = [decode_vector(d.embedding) if isinstance(d.embedding, str)
                       else np.asarray(d.embedding, dtype=np.float32) for d in data]
        except Exception as exc:
            return _Fault(PairError(f"embeddings reply is malformed: {_problem(exc)}"),
                          "server")
        # Each vector, or the PairError saying why it is not a number the matcher can use.
        usual = usual_length([v.size for v in vectors if v.ndim == 1], self.dimensions)
        return [PairError(f"the embeddings server returned {problem}")
                if (problem := vector_problem(vec)) else
                wrong_length(vec.size, usual or 0) if vec.size != usual else vec
                for vec in vectors]


class _Vector(BaseModel):
    """One item of an embeddings reply, read strictly: an integer ``index`` and numbers (or
    base64 text); numbers sent as strings (``"0.1"``) or booleans are refused (validated with
    ``strict=True``)."""

    index: int
    embedding: list[float] | str


class _Reply(BaseModel):
    data: list[_Vector]


def _problem(exc: Exception) -> str:
    """What is wrong with a reply: the first place pydantic refused (``data[1].embedding[0]:
    input should be a valid number, got '0.1'``), else the exception's description."""
    if not isinstance(exc, ValidationError):
        return str(exc) if type(exc) is ValueError else describe_error(exc)
    err = exc.errors()[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]
                    if "[" not in str(p))  # not the union's member (list[float])
    return f"{where.lstrip('.')}: {err['msg'].lower()}, got {reprlib.repr(err['input'])}"


@dataclass(frozen=True)
class _Fault:
    """A failed embeddings request: the error of its texts, and how to go on.

    ``kind``: ``bad_request`` (a 400: split to find the text), ``server`` (a 5xx after the
    retries, a truncated or malformed reply: split, unless both halves fail alike) or ``final``
    (429 after the retries, a Retry-After over the ceiling, timeouts, connection errors, and the
    faults of both halves of a server fault: its texts keep the error, no split).
    """

    error: PairError
    kind: str

    @staticmethod
    def of(exc: BaseException, max_retry_after: float) -> _Fault:
        """The fault of an exception raised by the SDK."""
        import openai

        message = describe_error(exc, "matcher", max_retry_after)
        status = getattr(exc, "status_code", None) or 0
        if status == 400:
            kind = "bad_request"
        elif status >= 500 and waits_too_long(exc, max_retry_after) is None:
            kind = "server"
        elif status == 0 and not isinstance(exc, openai.APIConnectionError):
            kind = "server"  # a reply the SDK could not read (truncated JSON)
            message = f"embeddings reply is malformed: {message}"
        else:
            kind = "final"
        return _Fault(PairError(message), kind)

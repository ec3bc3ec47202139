"""The `embeddings` matcher: cosine similarity of embedding vectors (SPEC 4.2).

Vectors come from an OpenAI-compatible embeddings API, each distinct text embedded once, in
requests within the API's limits (``max_inputs``, ``max_request_tokens``). They are stored on
disk as they arrive, keyed by (server, model, dimensions, text), so reruns and sweeps embed
nothing again. The raw cosine is kept (it may be below 0). :class:`EmbeddingVectors` (the vector
cache and the cosine) also serves ``LocalEmbeddingsMatcher``.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from runner.apiclient import (
    ResultStore,
    describe_error,
    effective_base_url,
    openai_client,
    require_key,
    require_positive,
    run_sync,
)
from runner.cache import digest, text_key
from runner.matchers.base import BaseMatcher, PairError, Similarity, TextPair
from runner.usage import Usage

Vector = np.ndarray
_PAIR_CHUNK = 8192


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
    cur: list[str] = []
    cur_tokens = 0
    for text in texts:
        est = estimate_tokens(text, chars_per_token)
        if cur and (len(cur) >= max_inputs or cur_tokens + est > max_tokens):
            batches.append(cur)
            cur, cur_tokens = [], 0
        cur.append(text)
        cur_tokens += est
    if cur:
        batches.append(cur)
    return batches


def encode_vector(vec: Any) -> str:
    """A vector as base64 of little-endian float32 (compact cache storage)."""
    return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(data: str) -> Vector:
    """The inverse of :func:`encode_vector`."""
    return np.frombuffer(base64.b64decode(data), dtype="<f4")


def cosine_pairs(pairs: Sequence[TextPair], vectors: dict[str, Vector | PairError]
                 ) -> list[Similarity]:
    """Cosine similarity per pair (a PairError where either text has no vector)."""
    out: list[Similarity] = [0.0] * len(pairs)
    ok_texts = [t for t, v in vectors.items() if not isinstance(v, PairError)]
    if ok_texts:
        dims = {len(vectors[t]) for t in ok_texts}  # type: ignore[arg-type]
        if len(dims) > 1:
            from runner.errors import RagciteError

            raise RagciteError(f"embedding vectors of different lengths {sorted(dims)}: the "
                               "server changed the model behind the same name; rerun with "
                               "cache.clear=true")
        matrix = np.stack([np.asarray(vectors[t], dtype=np.float32) for t in ok_texts])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)  # in place; zero rows stay 0
        row = {t: i for i, t in enumerate(ok_texts)}
    good: list[int] = []
    for i, (a, b) in enumerate(pairs):
        va, vb = vectors[a], vectors[b]
        if isinstance(va, PairError):
            out[i] = va
        elif isinstance(vb, PairError):
            out[i] = vb
        else:
            good.append(i)
    for start in range(0, len(good), _PAIR_CHUNK):
        idx = good[start:start + _PAIR_CHUNK]
        ia = np.fromiter((row[pairs[i][0]] for i in idx), dtype=np.int64, count=len(idx))
        ib = np.fromiter((row[pairs[i][1]] for i in idx), dtype=np.int64, count=len(idx))
        sims = np.einsum("ij,ij->i", matrix[ia], matrix[ib])
        for i, s in zip(idx, np.clip(sims, -1.0, 1.0).tolist()):
            out[i] = float(s)
    return out


@dataclass
class EmbeddingVectors(BaseMatcher):
    """Base of the embedding matchers: a per-text vector cache and cosine similarities.

    Subclasses implement :meth:`vector_identity` and :meth:`embed`.
    """

    def __post_init__(self) -> None:
        self._cache_dir: Path | None = None
        self._memory: dict[tuple[str, str], Any] = {}
        self._usage = Usage(model=getattr(self, "model", None))

    def bind_cache(self, directory: Path | None) -> None:
        """Store vectors under the run's cache folder (None: keep them in memory)."""
        self._cache_dir = Path(directory) if directory is not None else None

    def usage(self) -> dict[str, Any]:
        """Requests, tokens and cached texts of this run."""
        return self._usage.to_dict()

    def vector_identity(self) -> dict[str, Any]:
        """What determines a text's vector (the cache namespace)."""
        raise NotImplementedError

    async def embed(self, texts: list[str], store: ResultStore
                    ) -> dict[str, Vector | PairError]:
        """Vectors for texts that are not cached; each one is ``store.put`` as it arrives."""
        raise NotImplementedError

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Cosine of each pair; each distinct text is embedded at most once, ever."""
        if not pairs:
            return []
        check = getattr(self, "check", None)
        if callable(check):
            check()
        return run_sync(lambda: self._similarities(pairs))

    async def _similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        # One event loop per call; the store is opened in its thread (SQLite is per thread).
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        namespace = "emb-" + digest(self.vector_identity())[:32]
        vectors: dict[str, Vector | PairError] = {}
        with ResultStore(self._cache_dir, namespace, self._memory) as store:
            keys = {t: text_key(t) for t in texts}
            found = store.get_many(list(keys.values()))
            for t, k in keys.items():
                if k in found:
                    vectors[t] = decode_vector(found[k])
            self._usage.add(cached=len(vectors))
            missing = [t for t in texts if t not in vectors]
            if missing:
                vectors.update(await self.embed(missing, store))
        return cosine_pairs(pairs, vectors)


@dataclass
class EmbeddingsMatcher(EmbeddingVectors):
    """Cosine similarity of vectors from an OpenAI-compatible embeddings API.

    Args:
        model: The embedding model.
        dimensions: Ask for shorter vectors (models that support it); null = the model's own.
        base_url: An OpenAI-compatible server (vLLM, Ollama, LiteLLM, ...); null = OpenAI (or
            the ``OPENAI_BASE_URL`` environment variable).
        openai_api_key: The key; ``${oc.env:OPENAI_API_KEY,null}`` in the config. Never part of
            any output.
        max_inputs: Texts per request (the API allows 2048).
        max_request_tokens: Estimated tokens per request (the API allows 300,000).
        chars_per_token: ASCII characters per token in that estimate (3 leans safe).
        encoding_format: ``base64`` (compact) or ``float`` (for servers without base64).
        concurrency: Requests in flight at once.
        timeout: Seconds per request attempt.
        max_retries: Retries of a failed request (429, 5xx, timeouts, connection errors).
    """

    levels: ClassVar[Mapping[str, float]] = {"strict": 0.9, "default": 0.8, "lenient": 0.7}
    similarity_range: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    model: str = "text-embedding-3-small"
    dimensions: int | None = None
    base_url: str | None = None
    openai_api_key: str | None = field(default=None, repr=False, metadata={"identity": False})
    max_inputs: int = field(default=2048, metadata={"identity": False})
    max_request_tokens: int = field(default=300_000, metadata={"identity": False})
    chars_per_token: float = field(default=3.0, metadata={"identity": False})
    encoding_format: str = field(default="base64", metadata={"identity": False})
    concurrency: int = field(default=4, metadata={"identity": False})
    timeout: float = field(default=60.0, metadata={"identity": False})
    max_retries: int = field(default=4, metadata={"identity": False})

    def check(self) -> None:
        """Fail early with a one-line message: missing key or bad settings."""
        from runner.errors import RagciteError

        require_key(self.openai_api_key, "matcher", "matcher=embeddings")
        require_positive(self.max_inputs, "matcher.max_inputs")
        require_positive(self.max_request_tokens, "matcher.max_request_tokens")
        require_positive(self.chars_per_token, "matcher.chars_per_token", 0.1)
        require_positive(self.concurrency, "matcher.concurrency")
        require_positive(self.timeout, "matcher.timeout", 0.001)
        require_positive(self.max_retries, "matcher.max_retries", 0)
        if self.dimensions is not None:
            require_positive(self.dimensions, "matcher.dimensions")
        if self.encoding_format not in ("base64", "float"):
            raise RagciteError(f"matcher.encoding_format must be base64 or float, "
                               f"got {self.encoding_format!r}")

    def vector_identity(self) -> dict[str, Any]:
        """Server, model and dimensions: a text's vector depends on nothing else."""
        return {"backend": "openai", "base_url": effective_base_url(self.base_url),
                "model": self.model, "dimensions": self.dimensions}

    def identity(self) -> dict[str, Any]:
        """The fields without secrets and transport settings; the server as really used."""
        return {**super().identity(), "base_url": effective_base_url(self.base_url)}

    async def embed(self, texts: list[str], store: ResultStore
                    ) -> dict[str, Vector | PairError]:
        """Embed through the API: request batches concurrently, vectors stored as they come."""
        out: dict[str, Vector | PairError] = {}
        client = openai_client(require_key(self.openai_api_key, "matcher", "matcher=embeddings"),
                               self.base_url, self.timeout, self.max_retries)
        sem = asyncio.Semaphore(int(self.concurrency))

        async def run(batch: list[str]) -> None:
            async with sem:
                result = await self._request(client, batch)
            if isinstance(result, PairError):
                # A 400 (one text too long, a bad character) spoils the whole request: split
                # it to isolate the offending text(s) and keep the rest.
                if result.message.startswith("BadRequestError") and len(batch) > 1:
                    half = len(batch) // 2
                    await asyncio.gather(run(batch[:half]), run(batch[half:]))
                    return
                for t in batch:
                    out[t] = result
                return
            for t, vec in zip(batch, result):
                out[t] = vec
                store.put(text_key(t), encode_vector(vec))

        try:
            batches = plan_requests(texts, int(self.max_inputs), int(self.max_request_tokens),
                                    float(self.chars_per_token))
            await asyncio.gather(*(run(b) for b in batches))
        finally:
            await client.close()
        return out

    async def _request(self, client: Any, batch: list[str]) -> list[Vector] | PairError:
        kwargs: dict[str, Any] = {"model": self.model, "input": batch,
                                  "encoding_format": self.encoding_format}
        if self.dimensions is not None:
            kwargs["dimensions"] = int(self.dimensions)
        try:
            resp = await client.embeddings.create(**kwargs)
        except Exception as exc:  # APIError after the SDK's retries, or an unreadable reply
            self._usage.add(errors=1)
            return PairError(describe_error(exc))
        try:
            usage = getattr(resp, "usage", None)
            tokens = getattr(usage, "prompt_tokens", None)
            if tokens is None:
                tokens = sum(estimate_tokens(t, self.chars_per_token) for t in batch)
            self._usage.add(requests=1, input_tokens=tokens)
            data = sorted(resp.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise ValueError(f"{len(data)} vectors for {len(batch)} inputs")
            vectors = []
            for item in data:
                emb = item.embedding
                vec = (decode_vector(emb) if isinstance(emb, str)
                       else np.asarray(emb, dtype=np.float32))
                if vec.ndim != 1 or vec.size == 0:
                    raise ValueError("an empty vector")
                vectors.append(vec)
            if len({v.size for v in vectors}) > 1:
                raise ValueError("vectors of different lengths")
            return vectors
        except Exception as exc:
            return PairError(f"embeddings reply is malformed: {describe_error(exc)}")

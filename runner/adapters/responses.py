"""The adapter stage: one response per case, from the on-disk cache or the system under test."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from tqdm import tqdm

from runner.adapters.base import ModelAdapter
from runner.api.cache import CACHE_VERSION, CacheStats, DiskCache, digest, text_key
from runner.api.client import run_sync
from runner.data.models import Case, Response
from runner.errors import RagciteError
from runner.redact import known_secrets, scrub_data, terminal

log = logging.getLogger("ragcite")


def _scrubbed(response: Response) -> Response:
    """The response with every secret this process knows replaced by ``***``: in its answer,
    error, citations, documents, provider reply and usage names alike."""
    secrets = known_secrets()
    texts = [response.answer, response.error or "", response.provider or "",
             *(response.usage or {}),
             *(t for c in response.citations for t in (c.source, c.content, c.claim)),
             *(t for d in response.documents for t in (d.source, d.text, d.id or ""))]
    if not secrets or (not any(s in t for t in texts for s in secrets)
                       and scrub_data(response.raw, secrets) == response.raw):
        return response
    return Response.model_validate(scrub_data(response.model_dump(mode="json"), secrets))


def _ask(adapter: ModelAdapter, batch: list[Case]) -> list[Response]:
    """The adapter's responses to a batch, secrets scrubbed; a batch that fails makes every
    case an error."""
    try:
        answers = run_sync(lambda: adapter.respond(batch))  # also inside a running loop
        if len(answers) != len(batch):
            raise RuntimeError(f"the adapter returned {len(answers)} responses for "
                               f"{len(batch)} cases")
        return [_scrubbed(a) for a in answers]
    except RagciteError:
        raise
    except Exception as exc:  # the whole batch failed: every case is an error
        log.warning("model adapter failed on a batch: %s: %s", type(exc).__name__, exc)
        return [_scrubbed(Response(error=f"{type(exc).__name__}: {exc}")) for _ in batch]


def get_responses(adapter: ModelAdapter, cases: Sequence[Case], dataset_digest: str,
                  cache: DiskCache | None, stats: CacheStats, batch_size: int,
                  progress: bool) -> list[Response]:
    """Responses for every case, from the cache when possible, else from the adapter in batches.

    Responses are cached per (adapter identity, dataset, case id and query). Error responses
    are not cached, so a rerun retries the failed cases.
    """
    cache = cache if adapter.cacheable else None
    ns = "resp-" + digest({"v": CACHE_VERSION, "a": adapter.identity(),
                           "d": dataset_digest})[:32]
    keys = [text_key(c.id, c.query) for c in cases] if cache is not None else []
    out: list[Response | None] = [None] * len(cases)
    with cache.lock(ns) if cache is not None else contextlib.nullcontext():
        if cache is not None:
            found: dict[str, Any] = cache.get_many(ns, keys)
            out = [Response.model_validate(found[k]) if k in found else None for k in keys]
        missing = [i for i, r in enumerate(out) if r is None]
        with tqdm(total=len(missing), desc="model", unit="case", leave=False, file=terminal(),
                  disable=None if progress else True) as bar:  # None: on a terminal only
            for start in range(0, len(missing), batch_size):
                idx = missing[start:start + batch_size]
                answers = _ask(adapter, [cases[i] for i in idx])
                for i, resp in zip(idx, answers):
                    out[i] = resp
                if cache is not None:
                    cache.put_many(ns, [(keys[i], r.model_dump(mode="json"))
                                        for i, r in zip(idx, answers) if r.error is None])
                bar.update(len(idx))
    stats.add("responses", len(cases) - len(missing), len(missing))
    return [r if r is not None else Response(error="no response") for r in out]

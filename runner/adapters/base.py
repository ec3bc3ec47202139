"""The model-adapter protocol: the RAG system under test, asked for many cases at once.

An adapter answers a batch of cases with one :class:`~runner.data.models.Response` each. The
interface is asynchronous so that adapters calling services can run requests concurrently; a
synchronous adapter implements :meth:`BaseAdapter.respond_sync` and inherits the rest.

A failure for one case is reported as ``Response(error=...)``: the case is then counted as an
error, never scored as 0. Any class with these members plugs in through Hydra
(``model._target_=my_pkg.MyAdapter``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from runner.config.constraints import check_fields, identity_of
from runner.data.models import Case, Response

if TYPE_CHECKING:
    from runner.data.dataset import Dataset


@dataclass
class AdapterContext:
    """What an adapter may use besides the cases: the dataset and a folder for its own caches."""

    dataset: Dataset
    cache_dir: Path | None = None


@runtime_checkable
class ModelAdapter(Protocol):
    """The RAG system under test. Every member the runner uses is declared here;
    :class:`BaseAdapter` gives the optional ones their defaults.

    Attributes:
        cacheable: Whether responses are cached on disk per (adapter identity, case)
            (default True; stored responses, which are read anyway, say False).
    """

    cacheable: bool

    def identity(self) -> dict[str, Any]:
        """Everything that determines the responses (a cache key; no secrets)."""

    def bind(self, context: AdapterContext) -> None:
        """Receive the dataset (knowledge base, stored responses) before the first batch."""

    async def respond(self, cases: Sequence[Case]) -> list[Response]:
        """One response per case, in order."""

    def check(self) -> None:
        """Raise :class:`~runner.errors.RagciteError` for a setting that cannot work (a
        missing key or URL), before any data is loaded or any call is made (default: none)."""

    def usage(self) -> dict[str, Any] | None:
        """API requests and tokens spent so far, or None (the default) for none."""


@dataclass
class BaseAdapter:
    """Convenience base for dataclass adapters.

    Subclasses implement :meth:`respond_sync` (or override :meth:`respond`). Fields marked
    ``field(metadata={"identity": False})`` are left out of the cache identity (use it for
    secrets and for settings that do not change the responses, such as concurrency).
    """

    cacheable = True

    def __post_init__(self) -> None:
        """The fields' declared ranges (runner/config/constraints.py).

        Raises:
            RagciteError: A field out of range (``model.timeout: must be ...``).
        """
        check_fields(self, "model")
        self._context: AdapterContext | None = None

    @property
    def context(self) -> AdapterContext:
        """The bound context.

        Raises:
            RuntimeError: :meth:`bind` was not called.
        """
        if self._context is None:
            raise RuntimeError(f"{type(self).__name__} used before bind()")
        return self._context

    identity = identity_of  # the class path plus every field of the identity (no secrets)

    def bind(self, context: AdapterContext) -> None:
        """Store the context; subclasses extend this to prepare (index the KB, ...)."""
        self._context = context

    def check(self) -> None:
        """Nothing to refuse by default (the fields' ranges are checked when built)."""

    def notes(self) -> list[str]:
        """Warnings for the user once every case was answered (none by default), e.g. stored
        responses that no case asked for. Optional for adapters that do not derive from
        this class."""
        return []

    def usage(self) -> dict[str, Any] | None:
        """No API usage by default."""
        return None

    def respond_sync(self, cases: Sequence[Case]) -> list[Response]:
        """Synchronous batch answer; implemented by synchronous adapters."""
        raise NotImplementedError

    async def respond(self, cases: Sequence[Case]) -> list[Response]:
        """Run :meth:`respond_sync` in a worker thread."""
        return await asyncio.to_thread(self.respond_sync, cases)

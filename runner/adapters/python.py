"""The `python` adapter: any importable callable (or class) answers each case."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from runner.adapters.base import BaseAdapter
from runner.config.constraints import POSITIVE, allows
from runner.config.plugins import locate
from runner.data.models import Case, Response
from runner.errors import RagciteError


@dataclass
class PythonModel(BaseAdapter):
    """Call ``function(case) -> Response | dict`` for each case.

    Args:
        function: Dotted path of a callable, or of a class instantiated once with `kwargs`
            whose instances are callable. ``async def`` callables run concurrently.
        kwargs: Keyword arguments for the class (ignored for a plain function).
        concurrency: Maximum concurrent calls of an async callable.
    """

    function: str = "???"
    kwargs: dict[str, Any] = field(default_factory=dict)
    concurrency: int = field(default=8, metadata=allows(POSITIVE, identity=False))

    @functools.cached_property
    def _callable(self) -> Callable[..., Any]:
        try:
            obj = locate(self.function)
        except Exception as exc:  # Hydra's message spans lines: the cause is the reason
            raise RagciteError(f"model.function: cannot import {self.function!r}: "
                               f"{exc.__cause__ or exc}") from None
        fn = obj(**self.kwargs) if inspect.isclass(obj) else obj
        if not callable(fn):
            raise RagciteError(f"model.function: {self.function!r} is not callable")
        return fn

    def check(self) -> None:
        """The function importable (before any case is answered)."""
        self._callable  # noqa: B018 - imported now, so a bad path fails early

    @staticmethod
    def _coerce(value: Any) -> Response:
        try:  # a Response (or a subclass's instance) is returned as it is, not validated again
            return Response.model_validate(value)
        except ValidationError as exc:
            return Response(error=f"the callable returned an invalid response: "
                                  f"{exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}")

    async def respond(self, cases: Sequence[Case]) -> list[Response]:
        """Call the function for every case; an exception becomes that case's error."""
        fn = self._callable
        sem = asyncio.Semaphore(max(1, self.concurrency))

        async def one(case: Case) -> Response:
            try:
                if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
                        getattr(fn, "__call__", None)):  # noqa: B004
                    async with sem:
                        return self._coerce(await fn(case))
                return self._coerce(await asyncio.to_thread(fn, case))
            except Exception as exc:
                return Response(error=f"{type(exc).__name__}: {exc}")

        if inspect.iscoroutinefunction(fn):
            return list(await asyncio.gather(*(one(c) for c in cases)))
        return [await one(c) for c in cases]

"""Citation shapes (SPEC 2.1, docs/formats.md): each module turns one shape systems emit into
canonical citations, which :class:`runner.data.models.Response` validates.

Every module exposes ``read(...) -> tuple[list[dict], int]``: the citation dicts ``{source,
content, claim, start?, end?}`` in the order cited, and the number of dangling citations (markers
or provider citations that point at no document: counted, never cited). ``markers.read(answer,
documents)`` reads the answer's inline markers; a provider module ``read(raw, documents)`` reads
the provider's reply as its API returns it. ``documents`` are validated
:class:`~runner.data.models.RetrievedDocument` objects (``id``, ``source``, ``text``) in the order
the system numbered them. A malformed reply raises ``ValueError("<field path>: <what is
wrong>")`` (the path within ``raw``, e.g. ``raw.content[0].citations``), which becomes one
located line.

The providers are the modules of this package other than the shapes of :data:`NOT_PROVIDERS`:
adding ``runner/data/citations/<name>.py`` adds ``provider: <name>``, declared nowhere else.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import Any

from runner.data.citations import markers

NOT_PROVIDERS = frozenset({"markers"})
"""The modules of this package that read no provider's reply."""


def providers() -> list[str]:
    """The provider names: the modules of this package, found by listing it."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__)
                  if m.name not in NOT_PROVIDERS and not m.name.startswith("_"))


def canonical(data: dict[str, Any], documents: Sequence[Any]) -> dict[str, Any]:
    """A response's data with ``citations`` and ``dangling`` read from its shape: the
    provider's reply when ``provider`` is set, else the answer's markers when ``documents`` are
    given and ``citations`` are not. With ``citations`` given, the numeric markers the answer
    carries are counted as ``unread_markers``.

    Raises:
        ValueError: ``"<field path>: <problem>"`` for an unknown provider or a malformed reply;
            :func:`runner.data.loading.validation_to_data_error` locates it below ``response``.
    """
    provider, answer = data.get("provider"), str(data.get("answer") or "")
    if provider is not None:
        if provider not in providers():
            raise ValueError(f"provider: unknown provider {provider!r}; expected one of "
                             f"{', '.join(providers())}")
        found = importlib.import_module(f"{__name__}.{provider}").read(data.get("raw"), documents)
    elif data.get("citations") is not None:
        return data if "unread_markers" in data else {**data,
                                                      "unread_markers": markers.count(answer)}
    elif documents:
        found = markers.read(answer, documents)
    else:
        return data
    return {**data, "citations": found[0], "dangling": found[1]}

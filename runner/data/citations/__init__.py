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

The providers are the modules of this package other than ``markers``: adding
``runner/data/citations/<name>.py`` adds ``provider: <name>``, declared nowhere else.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from runner.data.citations import markers
from runner.data.errors import DataError


def providers() -> list[str]:
    """The provider names: the modules of this package but ``markers``, found by listing it."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "markers")


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
        module = importlib.import_module(f"{__name__}.{provider}")
        try:
            found = module.read(data.get("raw"), documents)
        except (LookupError, TypeError, AttributeError) as exc:  # a field missing or mistyped
            raise ValueError(f"raw: not a {provider} API reply ({exc!r})") from None
    elif data.get("citations") is not None:
        return data if "unread_markers" in data else {**data,
                                                      "unread_markers": markers.count(answer)}
    elif documents:
        found = markers.read(answer, documents)
    else:
        return data
    return {**data, "citations": found[0], "dangling": found[1]}


def with_offsets(response: Any, texts: Callable[[], Mapping[str, str]], path: str,
                 where: str) -> Any:
    """`response` with the content of each citation given by offsets without content: the text
    of its source in the knowledge base, ``text[start:end]`` (to the end without ``end``);
    `texts` (source → text) is called only when some citation needs it.

    Raises:
        DataError: At `path`, `where` (``case '3'``): a source the knowledge base does not
            hold, or a span that does not fit in its document.
    """
    if response is None or all(c.start is None or c.content for c in response.citations):
        return response
    kb, cits = texts(), list(response.citations)
    for i, c in enumerate(cits):
        if c.start is None or c.content:
            continue
        if (text := kb.get(c.source)) is None:
            raise DataError(path, where, f"response.citations[{i}].source", f"{c.source!r} is "
                            "not a document of the knowledge base, whose text offsets cite")
        end = len(text) if c.end is None else c.end
        if not c.start <= end <= len(text):
            raise DataError(path, where, f"response.citations[{i}].end", f"the span {c.start}:"
                            f"{end} does not fit in {c.source!r}; expected 0 <= start <= end <= "
                            f"{len(text)}, the document's length")
        cits[i] = c.model_copy(update={"content": text[c.start:end]})
    return response.model_copy(update={"citations": cits})


class Tally(Counter[str]):
    """What a run's answers carried beside their citations: dangling markers or provider
    citations, and markers left unread because ``citations`` was given (their answers too)."""

    def add(self, responses: Iterable[Any]) -> None:
        """Count the responses (None for no response)."""
        for r in filter(None, responses):
            self.update(dangling=r.dangling, dangling_answers=int(r.dangling > 0),
                        unread=r.unread_markers, unread_answers=int(r.unread_markers > 0))

    def figure(self) -> dict[str, int]:
        """``metrics.json``'s ``dangling``: the dangling citations and the answers with one."""
        return {"citations": self["dangling"], "answers": self["dangling_answers"]}

    def warning(self) -> str | None:
        """The run's warning about unread markers, or None."""
        n, k = self["unread"], self["unread_answers"]
        return None if not n else (
            f"{n} [n] marker{'s' * (n > 1)} in {k} answer{'s' * (k > 1)} "
            f"{'were' if n > 1 else 'was'} not read: the citations come from the `citations` "
            "field (docs/formats.md: leave it out to read the markers over `documents`)")

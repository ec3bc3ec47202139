"""API usage accounting: requests, tokens and an estimated cost per run (metrics.json "usage").

Components that call a paid API (the `openai`/`http` model adapters, the `embeddings`/`llm`
matchers) count what they really sent in a :class:`Usage` and expose it through an optional
``usage()`` method; values served from a cache cost nothing and are counted as ``cached``. The
pipeline gathers the figures of the system under test (``model``) and of the judge (``matcher``)
with :func:`usage_section` and prices them with the ``prices`` table of the config (USD per 1M
tokens). User plug-ins need not implement ``usage()``.

A token figure is counted only when it is a token count (:func:`token_count`); any other value a
server sends (-5, 1e30, "12", 2.5, null) is counted in ``unknown_figures`` instead, and a part
with an unknown figure has no cost (``cost_usd`` null): it is never priced, and never fails a
call.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

USAGE_COUNTERS = ("requests", "errors", "input_tokens", "output_tokens", "cached",
                  "unknown_figures")
MAX_TOKENS = 10**9
"""The most tokens one call may report; a larger figure is not a count (no model reads that)."""


def token_count(value: Any, limit: int | None = MAX_TOKENS) -> int | None:
    """A usage figure as a server sent it, if it is a count: a JSON integer in [0, `limit`]
    (no upper limit when None); else None (negative, fractional, 1e30, a string such as "12",
    a bool, null or missing)."""
    whole = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if whole and (limit is None or value <= limit) else None


@dataclass
class Usage:
    """Counters of one component during one run.

    Attributes:
        model: The priced model name (looked up in the price table), or None.
        requests: API calls that returned a reply (SDK-internal retries are not counted twice).
        errors: API calls that still failed after their retries.
        input_tokens: Prompt/input tokens reported by the server (or estimated when it reports
            none).
        output_tokens: Completion tokens.
        cached: Items served from the component's own on-disk cache instead of a call.
        unknown_figures: Token figures of replies that were not token counts (or missing),
            left out of ``input_tokens``/``output_tokens``.
    """

    model: str | None = None
    requests: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached: int = 0
    unknown_figures: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, requests: int = 0, errors: int = 0, input_tokens: Any = 0,
            output_tokens: Any = 0, cached: int = 0) -> None:
        """Add to the counters (thread-safe); the token figures as the reply gave them (a
        figure that is not a :func:`token_count` is counted in ``unknown_figures``)."""
        tokens = [token_count(input_tokens), token_count(output_tokens)]
        with self._lock:
            self.requests += requests
            self.errors += errors
            self.input_tokens += tokens[0] or 0
            self.output_tokens += tokens[1] or 0
            self.cached += cached
            self.unknown_figures += tokens.count(None)

    def to_dict(self) -> dict[str, Any]:
        """``{"model": name, "requests": n, ...}``: the shape ``usage()`` methods return."""
        return {"model": self.model, **{k: getattr(self, k) for k in USAGE_COUNTERS}}


def estimate_cost(model: str | None, input_tokens: float, output_tokens: float,
                  prices: Mapping[str, Any]) -> float | None:
    """Estimated USD cost from a price table in USD per 1M tokens; None when unpriced. The
    price of `model` is its exact name's, else that of the longest name it starts with
    (``gpt-4o-mini-2024-07-18`` → ``gpt-4o-mini``)."""
    if not input_tokens and not output_tokens:
        return 0.0
    best = max((name for name in prices if model and model.startswith(name)), key=len,
               default=None)
    if best is None:
        return None
    return round((input_tokens * float(prices[best].get("input", 0) or 0)
                  + output_tokens * float(prices[best].get("output", 0) or 0)) / 1e6, 8)


def usage_section(parts: Mapping[str, Any], prices: Mapping[str, Any] | None,
                  cache_hits: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The ``usage`` section of metrics.json.

    Args:
        parts: ``{"model": adapter.usage(), "matcher": matcher.usage()}``; a part whose
            usage is None (it calls no API) is left out.
        prices: Model name → ``{"input": usd_per_1M, "output": usd_per_1M}``.
        cache_hits: Per part, the items the run's own cache served before the part was asked
            (responses, similarities): added to the part's ``cached``.

    Returns:
        ``{"model": {...}, "matcher": {...}, "total": {...}}``, each with ``requests``,
        ``errors``, ``input_tokens``, ``output_tokens``, ``unknown_figures`` and ``cost_usd``
        (the parts also ``cached`` and ``total_tokens``): numbers only, ``cost_usd`` null when
        a model that used tokens has no price or a token figure is unknown. A counter of a
        part that is not a whole number >= 0 counts as 0 and as an unknown figure.
    """
    out: dict[str, Any] = {}
    for name, part in ((n, p) for n, p in parts.items() if p is not None):
        data = dict(part)
        model = data.pop("model", None)
        counts = {key: token_count(data.get(key, 0), None) for key in USAGE_COUNTERS}
        figures: dict[str, Any] = {key: value or 0 for key, value in counts.items()}
        figures["unknown_figures"] += list(counts.values()).count(None)
        figures["cached"] += (cache_hits or {}).get(name, 0)
        figures.update({k: v for k, v in data.items() if k not in figures
                        and isinstance(v, (int, float)) and not isinstance(v, bool)})
        figures["total_tokens"] = figures["input_tokens"] + figures["output_tokens"]
        figures["cost_usd"] = None if figures["unknown_figures"] else estimate_cost(
            model if isinstance(model, str) else None, figures["input_tokens"],
            figures["output_tokens"], prices or {})
        out[name] = figures
    costs = [figures["cost_usd"] for figures in out.values()]
    return {**out, "total": {
        **{key: sum(figures[key] for figures in out.values()) for key in (
            "requests", "errors", "input_tokens", "output_tokens", "unknown_figures")},
        "cost_usd": None if None in costs else round(sum((c or 0.0 for c in costs), 0.0), 8)}}

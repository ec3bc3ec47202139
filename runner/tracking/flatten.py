"""What a run logs, as plain values: params from a config, metrics from a ``metrics.json``.

Pure functions of their input (no MLflow, no files), shared by the MLflow tracker and the sweep's
parent run.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from runner.redact import env_secrets, redact, scrub_text, secret_values
from runner.scoring.metrics import METRIC_KEYS

# Sections of metrics.json that describe the run rather than measure it: no metric is taken
# from them (their config values are the run's params; names and levels are tags); nor from
# the score histograms (150 bin counts a run, two thirds of the cost of its metrics in the
# store), which the run's metrics.json artifact and report hold.
NOT_FIGURES = frozenset({"schema_version", "complete", "bootstrap", "run", "files", "dataset",
                         "model", "matcher", "scoring", "threshold", "metrics", "gates",
                         "histograms"})
MAX_PARAM = 6000  # MLflow's limit on a param value
MAX_KEY = 250
_BAD_KEY_CHARS = re.compile(r"[^/\w.\- ]")


def all_secrets(cfg: Any) -> set[str]:
    """Every secret value a config carries: secret-named keys, secret env vars, URLs' parts."""
    return secret_values(cfg) | env_secrets()


def param_value(value: Any) -> str:
    """A config value as an MLflow param: JSON for lists and mappings, ``null``/``true``."""
    text = json.dumps(value, ensure_ascii=False, default=str) if value is None or isinstance(
        value, (bool, dict, list, tuple)) else str(value)
    return text if len(text) <= MAX_PARAM else text[:MAX_PARAM - 3] + "..."


def key(parts: list[str], sep: str = ".") -> str:
    """An MLflow key from path parts (characters MLflow refuses become ``_``)."""
    return _BAD_KEY_CHARS.sub("_", sep.join(parts))[:MAX_KEY]


def flatten_params(cfg: dict[str, Any], secrets: set[str] | None = None) -> dict[str, str]:
    """A config as ``dotted.key → value`` strings, secrets redacted.

    Lists are logged whole (as JSON); an empty mapping is logged as ``{}`` so that every key of
    the config shows up. Any value of `secrets` (default: :func:`all_secrets`) is replaced by
    ``***`` wherever it occurs, and so is any password written into a URI.
    """
    secrets = all_secrets(cfg) if secrets is None else secrets
    return {key(parts): scrub_text(param_value(value), secrets)
            for parts, value in leaves(redact(cfg), [])}


def leaves(node: Any, parts: list[str]) -> Iterator[tuple[list[str], Any]]:
    """Every value under `node` that is not a non-empty mapping, with its path."""
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from leaves(v, [*parts, str(k)])
    else:
        yield parts, node


def _figure(value: Any) -> float | None:
    """`value` as a metric: a finite int or float (not a bool), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else None


def _figures(node: Any, parts: list[str]) -> Iterator[tuple[list[str], float]]:
    """Every numeric leaf under `node`, with its path (a ``ci`` pair as ``low``/``high``)."""
    value = _figure(node)
    if value is not None:
        yield parts, value
    elif isinstance(node, (dict, list)):
        names = ["low", "high"] if len(node) == 2 and parts[:1] == ["ci"] else range(len(node))
        for k, v in node.items() if isinstance(node, dict) else zip(names, node):
            yield from _figures(v, [*parts, str(k)])


def metrics_from_results(data: dict[str, Any]) -> dict[str, float]:
    """Every run-level figure of a ``metrics.json`` as an MLflow metric, in logging order.

    First the six headline metrics under their own names, then ``threshold`` (its value) and
    ``gates/passed`` (1 or 0), then every other numeric leaf under its JSON path joined by ``/``
    (``n_cases``, ``ci/context_recall/low``, ...), the ``execution/`` details last (MLflow's
    run page lists metrics in logging order). Undefined
    figures (``null``, NaN) and the sections that describe the run (:data:`NOT_FIGURES`) are
    left out.
    """
    headline = data.get("metrics") or {}
    passed = (data.get("gates") or {}).get("passed")
    first = {**{k: headline[k] for k in (*METRIC_KEYS, *headline) if k in headline},
             "threshold": (data.get("threshold") or {}).get("value"),
             "gates/passed": float(passed) if isinstance(passed, bool) else None}
    out = {key([k]): figure for k, v in first.items() if (figure := _figure(v)) is not None}
    # How the run went (timings, cache, workers) comes last, after every figure of the result.
    for top in sorted((t for t in data if t not in NOT_FIGURES), key=lambda t: t == "execution"):
        out.update((key(parts, "/"), value) for parts, value in _figures(data[top], [top]))
    return out


# The tags ``ragcite.<name>`` of a run: (section, field) of its ``metrics.json``.
RESULT_TAGS = {"dataset": ("dataset", "name"), "model": ("model", "name"),
               "matcher": ("matcher", "name"),
               "system": ("model", "system"),  # the system under test (config/naming.py)
               "dataset_digest": ("dataset", "digest"), "threshold": ("threshold", "value"),
               "threshold_level": ("threshold", "level"),
               "threshold_index": ("threshold", "index"), "gates_passed": ("gates", "passed")}


def result_tags(data: dict[str, Any]) -> dict[str, str]:
    """The tags a result's ``metrics.json`` gives its run (names, system, digest, threshold,
    gates)."""
    values = {"complete": bool(data.get("complete")), **{
        name: (data.get(part) or {}).get(field) for name, (part, field) in RESULT_TAGS.items()}}
    return {f"ragcite.{k}": param_value(v) for k, v in values.items() if v not in (None, "")
            and (k != "gates_passed" or isinstance(v, bool))}

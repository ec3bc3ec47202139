"""Strict JSON for the results files (``metrics.json``, ``compare.json``): NaN and infinities
written as null, numpy values as numbers."""

from __future__ import annotations

import json
import math
from typing import Any


def clean_json(value: Any) -> Any:
    """Make `value` strict JSON: NaN and infinities become null (JSON has neither), recursively.

    ``json.dumps(default=...)`` is only consulted for objects JSON cannot encode, and a float NaN
    is encoded as the invalid token ``NaN``, so the cleaning happens before dumping.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    return value


def dumps_strict(value: Any) -> str:
    """`value` as indented strict JSON text with a final newline (NaN and infinities as null)."""
    return json.dumps(clean_json(value), indent=2, ensure_ascii=False, allow_nan=False,
                      default=default_json) + "\n"


def default_json(value: Any) -> Any:
    # numpy scalars and arrays (and anything else with `.tolist()`/`.item()`).
    for attr in ("tolist", "item"):
        if hasattr(value, attr):
            return clean_json(getattr(value, attr)())
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

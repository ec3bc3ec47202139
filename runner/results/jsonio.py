"""Strict JSON for the results files: NaN and infinities written as null, numpy values as
numbers, and lines read back exactly as the standard library reads them (orjson where that is
the same, and faster)."""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import orjson


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


_ORJSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def json_line(record: dict[str, Any]) -> bytes:
    """One record as a strict-JSON UTF-8 line.

    orjson writes NaN and infinities as null, as :func:`clean_json` does; what it cannot encode (an
    integer beyond 64 bits, say) goes through the standard library instead, and a text that is
    not valid Unicode (a lone surrogate) is written escaped (``\\ud800``), as valid JSON.
    """
    # numpy values go through default_json; the options make orjson twice as slow, so they are
    # tried second (keys that are not strings)
    for option in (None, _ORJSON_OPTIONS):
        with contextlib.suppress(TypeError, orjson.JSONEncodeError):
            return orjson.dumps(record, default=default_json, option=option) + b"\n"
    with contextlib.suppress(UnicodeEncodeError):
        return (json.dumps(clean_json(record), ensure_ascii=False, allow_nan=False,
                           default=default_json) + "\n").encode("utf-8")
    # a lone surrogate: escaped, the line stays valid UTF-8
    return (json.dumps(clean_json(record), allow_nan=False, default=default_json)
            + "\n").encode("ascii")


# orjson reads an integer beyond 64 bits as a float; such an integer needs 19 or more digits in
# a row. Lines with such a run (rare: big metadata values, long decimals) go to the standard
# library, so every record is read exactly. The run is found by mapping digits to "0" and every
# other byte to a space, then a plain substring search (a regex is ten times slower here).
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_RUN = b"0" * 19


def parse_line(line: bytes) -> Any:
    """One JSON line, exactly as ``json.loads`` reads it, with orjson where that is the same."""
    if _LONG_RUN not in line.translate(_DIGITS_ONLY):
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:  # NaN, lone surrogates: the standard library
            pass
    return json.loads(line)

"""Bounds on one record's data: nesting depth, YAML alias expansion, and values that are not
text or not numbers (lone surrogates, NaN, Infinity).

A parsed record is checked by :func:`check_value` before anything else reads it, so a bad record
is refused at load with its file, line or record and field, before any model call:

* nesting deeper than :data:`MAX_DEPTH` levels (deeper JSON would otherwise end in Python's
  recursion limit);
* YAML aliases expanding a record by more than :data:`MAX_EXPANSION` values (a "billion laughs"
  document is a few lines that share one list millions of times: loading it is cheap, but
  whatever walks it later, validation or writing, expands every share), or an alias inside its
  own anchor (a record that contains itself);
* a lone surrogate escape (``"\\ud800"`` in JSON or YAML), which is no text: it cannot be encoded
  to send to a model or to write a results file;
* ``NaN``, ``Infinity`` and ``-Infinity`` literals in JSON (Python's reader accepts them, JSON
  does not) and ``.nan``/``.inf`` in YAML: not numbers;
* a key given twice in one JSON object (Python's reader keeps the last value; which one was
  meant?). YAML readers refuse one when the file is parsed (:mod:`runner.data.readers`).

The walk visits each distinct container once (a shared one is counted, not walked again), so it
takes time and memory in proportion to the file, never to what its aliases expand to.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from runner.data.errors import DataError

#: The deepest nesting of lists and objects a record may have.
MAX_DEPTH = 100
#: How many values YAML aliases may add to a record beyond those written in the file.
MAX_EXPANSION = 1_000_000

#: Text that may hold a value no record may hold: a surrogate escape, a NaN or an Infinity.
HINTS = re.compile(r"\\u[dD][89a-fA-F]|NaN|Infinity")
#: The same as plain strings, for a fast first look at a whole file (a superset of HINTS).
HINT_TEXTS = ("\\ud", "\\uD", "NaN", "Infinity")
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}\n]')


#: The problem of a JSON object that repeats a key.
REPEATED = "the key is given twice in one object; keep one"


class Repeated(dict[str, Any]):
    """What the JSON reader makes of an object that gives a key twice: refused by the check.

    Attributes:
        key: The first key given twice.
    """

    def __init__(self, obj: dict[str, Any], key: str) -> None:
        super().__init__(obj)
        self.key = key


class NonFinite(str):
    """What the JSON reader makes of a ``NaN``/``Infinity`` literal (the literal's text): refused
    by the check."""


def parse_json(text: str, path: str, where: str | None, field: str | None = None, *,
               check: bool = True) -> Any:
    """Parse JSON text and check the value (see the module doc).

    Args:
        text: The JSON text (one JSONL line, one CSV cell or a whole document).
        path: The file, for errors.
        where: ``line N`` or None, for errors.
        field: The field the text is the value of (a CSV column), for errors.
        check: Check the value here (False: the caller checks each record of a document).

    Raises:
        DataError: The text is not JSON (located at `where`, else at the line of the error;
            a CSV cell at its `field`), or its value breaks a bound.
    """
    # Keys given twice in one object (a NaN/Infinity literal is found by may_break_bounds).
    refused: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len(obj := dict(items)) == len(items):
            return obj
        keys = [k for k, _ in items]
        refused.append(next(k for i, k in enumerate(keys) if k in keys[:i]))
        return Repeated(obj, refused[-1])

    try:
        value = json.loads(text, parse_constant=NonFinite, object_pairs_hook=pairs)
    except RecursionError:
        raise DataError(path, where or deep_line(text), field, DEEP) from None
    except json.JSONDecodeError as exc:
        problem = (f"expected a JSON-encoded value ({exc.msg})" if field
                   else f"malformed JSON ({exc.msg} at column {exc.colno})")
        raise DataError(path, where or f"line {exc.lineno}", field, problem) from None
    except ValueError:  # an integer of more digits than Python converts
        raise DataError(path, where, field, f"an integer of more than "
                        f"{sys.get_int_max_str_digits()} digits; write it as a string") from None
    if check and (refused or may_break_bounds(text)):
        check_value(value, path, where, field)
    return value


def may_break_bounds(text: str, hinted: bool = True) -> bool:
    """Whether JSON text may hold a lone surrogate escape, a non-finite literal or deep nesting
    (when not, its parsed value needs no check; a cheap test on the raw text). `hinted`: False
    when its whole file holds none of :data:`HINT_TEXTS` (only the nesting is then looked at)."""
    return (hinted and any(hint in text for hint in HINT_TEXTS)
            and HINTS.search(text) is not None) or text.count("[") + text.count("{") > MAX_DEPTH


#: The problem of a value nested too deep.
DEEP = f"nested deeper than {MAX_DEPTH} levels of lists and objects (the limit)"


def deep_line(text: str) -> str | None:
    """Where a document's brackets first nest deeper than the limit (``line N``; strings
    skipped), for a parser that gave up without saying where."""
    depth, line = 0, 1
    for token in _TOKENS.finditer(text):
        char = token.group()
        if char == "\n":
            line += 1
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return f"line {line}"
        elif char in "]}":
            depth -= 1
    return None


def check_value(value: Any, path: str, where: str | None, field: str | None = None) -> None:
    """Refuse a parsed record that breaks a bound (see the module doc).

    Args:
        value: The parsed record (or the value of `field`).
        path: The file, for errors.
        where: ``line N`` or ``record N``, for errors.
        field: The field `value` belongs to, if not the whole record.

    Raises:
        DataError: Located at the first offending field.
    """
    _Walk(path, where).size(value, field or "", 1)


class _Walk:
    """One record's walk: the expanded size and height of each distinct container, memoised."""

    def __init__(self, path: str, where: str | None) -> None:
        self.path = path
        self.where = where
        self.seen: dict[int, tuple[int, int]] = {}  # id → (expanded size, height)
        self.open: set[int] = set()  # containers being walked: the path from the root
        self.written = 1  # values as written: each distinct container's entries, once

    def fail(self, field: str, problem: str) -> DataError:
        if len(field) > 60:  # a path 100 levels deep: its head, cut at a step
            head = field[:57]
            field = head[:max(head.rfind("["), head.rfind("."), 1)] + "..."
        return DataError(self.path, self.where, field or None, problem)

    def size(self, value: Any, field: str, depth: int) -> int:
        """The expanded number of values in `value` (1 for a scalar); raises on a bad one."""
        if isinstance(value, NonFinite) or (isinstance(value, float) and not math.isfinite(value)):
            shown = value if isinstance(value, NonFinite) else repr(value)
            raise self.fail(field, f"{shown} is not allowed (not a finite number); write null or "
                                   "a number")
        if isinstance(value, str):
            self.text(value, field)
        if not isinstance(value, (dict, list)):
            return 1
        if isinstance(value, Repeated):
            raise self.fail(f"{field}.{value.key}" if field else value.key, REPEATED)
        key = id(value)
        if key in self.seen:  # a YAML alias: counted again, not walked again
            total, height = self.seen[key]
            if depth + height - 1 > MAX_DEPTH:
                raise self.fail(field, DEEP)
            return total
        if key in self.open:
            raise self.fail(field, "a YAML alias inside its own anchor: the record contains "
                                   "itself")
        if depth > MAX_DEPTH:
            raise self.fail(field, DEEP)
        self.open.add(key)
        total, height = 1, 0
        for name, item in (value.items() if isinstance(value, dict) else enumerate(value)):
            if isinstance(name, str):
                self.text(name, field)
            sub = (f"{field}.{name}" if field else str(name)) if isinstance(value, dict) \
                else f"{field}[{name}]"
            total += self.size(item, sub, depth + 1)
            height = max(height, self.seen.get(id(item), (1, 0))[1])
        self.open.discard(key)
        self.written += len(value)
        self.seen[key] = (total, height + 1)
        if total - self.written > MAX_EXPANSION:
            raise self.fail(field, f"YAML aliases expand it to more than {MAX_EXPANSION:,} "
                                   "values beyond those written (the limit; a 'billion "
                                   "laughs' document?)")
        return total

    def text(self, value: str, field: str) -> None:
        """Refuse a string holding a lone surrogate (a ``\\ud800`` escape with no partner)."""
        if value.isascii():
            return
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(value[exc.start])
            raise self.fail(field, f"a lone surrogate escape (\\u{code:04x}) is not text; "
                                   "escape a whole character (a pair \\ud83d\\ude00 is fine)"
                            ) from None

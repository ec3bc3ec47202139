"""JMESPath field mapping: load records of any shape by configuration alone (SPEC 2).

Each key of a mapping is a JMESPath expression evaluated on one raw record. Keys:
``id``, ``query``, ``references``, ``expected_sources``, ``citations``, ``answer``, ``documents``,
``provider``, ``raw`` (a response's citation shapes, docs/formats.md), ``metadata`` (and, for
knowledge bases, ``source`` and ``text``). A key left out is read from the record's
field of the same name when the record is already in the canonical shape. Besides JMESPath's
built-in functions, an expression may call ``zip(a, b)`` to pair two parallel lists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, make_dataclass
from typing import Any, Optional

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.functions import Functions, signature

from runner.data.errors import DataError

#: The keys a mapping may set; those of :data:`RESPONSE_KEYS` move into the case's response.
RESPONSE_KEYS = ("citations", "answer", "documents", "provider", "raw")
CASE_KEYS = ("id", "query", "references", "expected_sources", *RESPONSE_KEYS, "metadata")
KB_KEYS = ("source", "text")


def mapping_conf(name: str, keys: tuple[str, ...], module: str) -> type:
    """The config schema of a mapping (runner/config/schema.py): an optional expression per
    key, null = not mapped; a dataclass of `module`, so that a config holding it pickles."""
    return make_dataclass(name, [(k, Optional[str], None) for k in keys],
                          namespace={"__module__": module})


@dataclass(frozen=True)
class FieldMapping:
    """Compiled JMESPath expressions, one per canonical field.

    Args:
        expressions: Canonical key → JMESPath expression.
        allowed: The canonical keys this mapping may set.
        origin: Where the mapping came from, for error messages.
    """

    expressions: Mapping[str, str]
    allowed: tuple[str, ...] = CASE_KEYS
    origin: str = "mapping"

    def __post_init__(self) -> None:
        compiled: dict[str, Any] = {}
        for key, expr in self.expressions.items():
            if expr is None:
                continue
            if key not in self.allowed:
                raise DataError(self.origin, None, key,
                                f"unknown mapping key; expected one of {', '.join(self.allowed)}")
            try:
                compiled[key] = compile_expression(str(expr))
            except JMESPathError as exc:
                raise DataError(self.origin, None, key,
                                f"invalid JMESPath expression {shown(expr)}: {exc}") from None
            if unknown := sorted(_function_names(compiled[key].parsed) - set(_FUNCTIONS)):
                raise DataError(self.origin, None, key,
                                f"unknown JMESPath function {unknown[0]}() in {shown(expr)}; "
                                f"the functions are {', '.join(_FUNCTIONS)}")
        object.__setattr__(self, "_compiled", compiled)

    @property
    def is_identity(self) -> bool:
        """True when no expression is set: records pass through unchanged."""
        return not self._compiled  # type: ignore[attr-defined]

    def apply(self, record: Any, path: str, where: str) -> dict[str, Any]:
        """Map one raw record to the canonical shape.

        Raises:
            DataError: An expression yields a value of the wrong shape.
        """
        compiled: dict[str, Any] = self._compiled  # type: ignore[attr-defined]
        if not compiled:
            return record if isinstance(record, dict) else {"__raw__": record}
        out: dict[str, Any] = {}
        if isinstance(record, dict):  # unmapped canonical keys pass through unchanged
            out = {k: record[k] for k in self.allowed if k not in compiled and k in record}
            if "response" in record and not {"citations", "answer", "documents"} & set(compiled):
                out["response"] = record["response"]
        for key, expr in compiled.items():
            try:
                value = expr.search(record, _OPTIONS)
            except (JMESPathError, RecursionError) as exc:  # a type error, an arity, a depth
                raise DataError(path, where, f"mapping.{key}",
                                f"expression {shown(self.expressions[key])} failed: "
                                f"{exc}") from None
            _check_shape(key, value, self.expressions[key], path, where)
            out[key] = value
        return out


def compile_expression(expr: str) -> Any:
    """``jmespath.compile``, with nesting too deep for its recursive parser as a
    :class:`JMESPathError` (a RecursionError otherwise)."""
    try:
        return jmespath.compile(expr)
    except RecursionError:
        raise JMESPathError("nested too deeply (JMESPath parses each level as a Python call)"
                            ) from None


def shown(expr: str, limit: int = 80) -> str:
    """An expression quoted for a message, its middle cut when long."""
    return repr(expr if len(expr) <= limit else f"{expr[:limit // 2]}…{expr[-limit // 2:]}")


class _Functions(Functions):
    """JMESPath's built-in functions and ``zip(a, b)``: the pairs ``[a[i], b[i]]`` of two lists
    of one length (parallel lists, such as RAGAS's contexts and their ids); lists of different
    lengths are refused, never cut to the shorter."""

    @signature({"types": ["array"]}, {"types": ["array"]})
    def _func_zip(self, first: list[Any], second: list[Any]) -> list[list[Any]]:
        if len(first) != len(second):
            raise JMESPathError(f"zip() of lists of {len(first)} and {len(second)} items; "
                                "give lists of one length")
        return [list(pair) for pair in zip(first, second)]


_OPTIONS = jmespath.Options(custom_functions=_Functions())
#: The functions a mapping may call: JMESPath's built-in ones and ``zip``.
_FUNCTIONS: tuple[str, ...] = tuple(sorted(_Functions.FUNCTION_TABLE))


def _function_names(node: dict[str, Any]) -> set[str]:
    """The names of the functions a parsed JMESPath expression calls."""
    names = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if item.get("type") == "function_expression":
            names.add(str(item["value"]))
        stack.extend(child for child in item.get("children", ()) if isinstance(child, dict))
    return names


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


# The shape each mapped key must have: (test, what is expected, whether null is allowed).
_SHAPES: dict[str, tuple[Callable[[Any], bool], str, bool]] = {
    "references": (lambda v: isinstance(v, list), "a list of {source, content} objects", False),
    "citations": (lambda v: isinstance(v, list), "a list of {source, content} objects", True),
    "documents": (lambda v: isinstance(v, list), "a list of {source, text} objects", True),
    "expected_sources": (lambda v: isinstance(v, list) and all(map(_is_str, v)),
                         "a list of strings", True),
    "metadata": (lambda v: isinstance(v, dict), "an object", True),
    "id": (lambda v: isinstance(v, (str, int)) and not isinstance(v, bool),
           "a string or an integer", False),
    "query": (_is_str, "a string", False),
    "answer": (_is_str, "a string", True),
    "source": (_is_str, "a string", False),
    "text": (_is_str, "a string", False),
}


def _check_shape(key: str, value: Any, expr: str, path: str, where: str) -> None:
    if key not in _SHAPES:  # a key checked by its model alone (a labelled pair's)
        return
    test, expected, nullable = _SHAPES[key]
    if value is None and nullable:
        return
    if not test(value):
        got = "null" if value is None else type(value).__name__
        raise DataError(path, where, f"mapping.{key}",
                        f"expression {shown(expr)} yielded {got}; expected {expected}")
    bad = [item for item in value if not isinstance(item, dict) or "source" not in item] \
        if key in ("references", "citations") else []
    if bad:
        raise DataError(path, where, f"mapping.{key}", f"expression {shown(expr)} yielded a "
                        f"list containing {bad[0]!r}; expected {{source, content}} objects")


def as_mapping(mapping: Mapping[str, str] | FieldMapping | None, allowed: tuple[str, ...],
               origin: str) -> FieldMapping:
    """Coerce a dict (or None) to a compiled :class:`FieldMapping`."""
    return mapping if isinstance(mapping, FieldMapping) else FieldMapping(
        dict(mapping or {}), allowed=allowed, origin=origin)

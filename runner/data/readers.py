"""Streaming record readers for JSON Lines, JSON, YAML and CSV files.

Each reader yields ``(where, record)`` pairs where ``where`` locates the record for error
messages (``"line 7"`` or ``"record 7"``). JSON Lines and CSV are read line by line, so memory
stays flat whatever the file size.
"""

from __future__ import annotations

import collections
import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from runner.data import limits
from runner.data.errors import DataError
from runner.data.text import check_file, check_utf8, open_text, read_text

FORMATS = ("jsonl", "json", "yaml", "csv")
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".yaml": "yaml",
               ".yml": "yaml", ".csv": "csv"}
# CSV columns that hold JSON-encoded values (lists or objects).
_CSV_JSON_COLUMNS = ("references", "expected_sources", "citations", "response", "metadata",
                     "usage")

# CSV columns whose empty cell means "absent" (a row without a stored response), not "".
_CSV_OPTIONAL_COLUMNS = (*_CSV_JSON_COLUMNS, "answer")

Record = tuple[str, Any]


def infer_format(path: str | Path, format: str | None = None) -> str:
    """Return the file format: `format` when given, else from the file extension.

    Raises:
        DataError: The format is unknown or cannot be inferred.
    """
    suffix = Path(path).suffix.lower()
    if format and format not in FORMATS:
        raise DataError(str(path), None, None,
                        f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    if not format and suffix not in _EXTENSIONS:
        raise DataError(str(path), None, None,
                        f"cannot infer the format from extension {suffix!r}; set `format:` to "
                        f"one of {', '.join(FORMATS)}")
    return format or _EXTENSIONS[suffix]


def iter_records(path: str | Path, format: str | None = None, *,
                 whole_object: bool = False) -> Iterator[Record]:
    """Yield ``(where, record)`` for every record of a data file.

    Args:
        path: The file to read.
        format: One of ``jsonl``, ``json``, ``yaml``, ``csv``; inferred from the extension
            when omitted.
        whole_object: A JSON/YAML file whose top level is an object without a record list is
            yielded as one record (e.g. a corpus keyed by title, for a transform to split)
            instead of being rejected.

    Raises:
        DataError: The file is missing, is a directory, is not UTF-8 text (a byte-order mark
            is fine), or a record cannot be parsed or breaks a bound of
            :mod:`runner.data.limits`.
    """
    p = Path(path)
    check_file(p)
    fmt = infer_format(path, format)
    if fmt in ("jsonl", "csv"):
        check_stream(p, fmt)
    if fmt == "jsonl":
        yield from ((f"line {n}", limits.parse_json(line, str(p), f"line {n}"))
                    for n, line in iter_jsonl_lines(p))
    elif fmt == "csv":
        yield from _iter_csv(p)
    else:
        yield from _iter_document(p, fmt, whole_object)


def check_stream(path: Path, fmt: str) -> bool:
    """Check a streamed file (JSON Lines, CSV) when it is opened, before its first batch is
    answered: UTF-8 throughout, and when its text hints at a value no record may hold (a
    surrogate escape, NaN, Infinity: :data:`runner.data.limits.HINTS`), those records, so a bad
    one further down is refused before any model call. The rest (fields, nesting) is checked
    batch by batch.

    Returns:
        Whether the file hints at such a value anywhere (when not, no line needs that look).

    Raises:
        DataError: The first bad line.
    """
    if not check_utf8(path, limits.HINT_TEXTS):
        return False
    if fmt == "csv":
        collections.deque(_iter_csv(path), maxlen=0)
    else:
        for lineno, line in iter_jsonl_lines(path):
            if limits.HINTS.search(line):
                limits.parse_json(line, str(path), f"line {lineno}")
    return True


def iter_jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line of a JSONL file."""
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                yield lineno, line


def _iter_document(path: Path, fmt: str, whole_object: bool = False) -> Iterator[Record]:
    data = parse_document(path, fmt)
    if isinstance(data, dict):  # {"cases": [...]} as well as a bare list; or one record
        data = next((data[key] for key in ("cases", "data", "records")
                     if isinstance(data.get(key), list)), [data] if whole_object else data)
    if not isinstance(data, list):
        raise DataError(str(path), None, None,
                        f"expected a list of records (or an object with a 'cases' list), "
                        f"got {type(data).__name__}")
    for index, record in enumerate(data, start=1):
        limits.check_value(record, str(path), f"record {index}")
        yield f"record {index}", record


class _RepeatedKey(yaml.YAMLError):
    """A mapping that gives a key twice (YAML requires the keys of a mapping to be unique)."""

    def __init__(self, problem: str, mark: yaml.Mark) -> None:
        super().__init__(problem)
        self.problem_mark = mark


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing a key given twice in one mapping (a key merged in with ``<<``
    may still be overridden, as YAML means it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping of `node`, each of its keys written once."""
        first: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                earlier = first.setdefault(key, key_node)
            except TypeError:  # an unhashable key: the safe loader says so
                continue
            if earlier is not key_node:
                raise _RepeatedKey(f"key {key!r} is given twice in one mapping, first on line "
                                   f"{earlier.start_mark.line + 1}; keep one",
                                   key_node.start_mark)
        return super().construct_mapping(node, deep)


def parse_document(path: Path, fmt: str) -> Any:
    """A whole JSON or YAML file as data (its records are checked as they are yielded)."""
    text = read_text(path)
    try:
        if fmt == "json":
            data = limits.parse_json(text, str(path), None, check=False)
            if isinstance(data, limits.Repeated):  # in the top level; the records are checked later
                raise DataError(str(path), None, data.key, limits.REPEATED)
            return data
        return yaml.load(text, Loader=_Loader)  # a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        raise DataError(str(path), where, None, f"malformed YAML ({exc})") from None
    except RecursionError:
        raise DataError(str(path), limits.deep_line(text), None, limits.DEEP) from None


def _iter_csv(path: Path) -> Iterator[Record]:
    """The rows of a CSV file as records keyed by the header, each row exactly one value per
    column; strict quoting (a quote that is never closed, or text after a closing one, is
    refused, not read as a literal)."""
    with open_text(path, newline="") as fh:
        rows = csv.reader(fh, strict=True)
        header: list[str] | None = None
        start = 1  # the first physical line of the row being read
        try:
            for row in rows:
                # rows.line_num is the physical line of the end of this row (header: line 1).
                where, start = f"line {rows.line_num}", rows.line_num + 1
                if not row:
                    continue
                if header is None:
                    header = row
                    twice = next((name for i, name in enumerate(row) if name in row[:i]), None)
                    if twice is not None:
                        raise DataError(str(path), where, twice, "the header names this column "
                                        "twice; name each column once")
                elif len(row) != len(header):
                    raise DataError(str(path), where, None,
                                    f"{len(row)} values for the header's {len(header)} "
                                    "columns; give each column one value (it may be empty)")
                else:
                    yield where, _csv_record(path, where, dict(zip(header, row)))
        except csv.Error as exc:
            problem = ("a quoted value that is never closed (it runs to the end of the file)"
                       if str(exc) == "unexpected end of data" else f"malformed CSV ({exc})")
            raise DataError(str(path), f"line {start}", None,
                            f"{problem}; a quote inside a quoted value is written \"\"") from None


def _csv_record(path: Path, where: str, row: dict[str, str]) -> dict[str, Any]:
    """One CSV row as a record: JSON columns parsed, empty optional ones left out."""
    return {key: limits.parse_json(value, str(path), where, key) if key in _CSV_JSON_COLUMNS
            else value for key, value in row.items()
            if key not in _CSV_OPTIONAL_COLUMNS or value.strip() != ""}

"""Load cases and knowledge bases from files, validated and located (SPEC 2)."""

from __future__ import annotations

import hashlib
import posixpath
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from jiter import from_json
from pydantic import ValidationError

from runner._gc import gc_paused
from runner.data import readers
from runner.data.errors import DataError
from runner.data.limits import may_break_bounds, parse_json
from runner.data.mapping import CASE_KEYS, KB_KEYS, RESPONSE_KEYS, FieldMapping, as_mapping
from runner.data.models import Case, Document
from runner.data.text import read_text

Transform = Callable[[dict[str, Any]], dict[str, Any]]
KBTransform = Callable[[Any], Iterable[dict[str, Any]]]
MappingLike = Mapping[str, str] | FieldMapping | None
PKG_PREFIX = "pkg://"


def resolve_path(path: str | Path) -> Path:
    """Resolve ``pkg://package/rel/path`` to a file shipped inside a Python package.

    Shipped datasets live in the ``runner.datasets`` package (the repository's ``data/``
    folder), so ``pkg://runner.datasets/demo/cases.jsonl`` works from a source checkout and from
    an installed wheel alike. Other paths are returned unchanged.

    Raises:
        DataError: The package is not installed, or the path leaves its package (``..``).
    """
    text = str(path)
    if not text.startswith(PKG_PREFIX):
        return Path(text).expanduser()
    package, _, rel = text[len(PKG_PREFIX):].partition("/")
    norm = posixpath.normpath(rel) if rel else ""
    if norm == ".." or norm.startswith(("../", "/")):
        raise DataError(text, None, None, "a pkg:// path must stay inside its package (no "
                                          "'..'); give a plain path for other files")
    try:
        root = resources.files(package)
    except (ImportError, ValueError, TypeError):
        raise DataError(text, None, None,
                        f"no installed package {package!r}; a pkg:// path reads "
                        "pkg://<package>/<file>, e.g. pkg://runner.datasets/demo/cases.jsonl"
                        ) from None
    return Path(str(root.joinpath(norm)))


_PROBLEMS = {"missing": "required field is missing",
             "extra_forbidden": "unknown field (put extra data under 'metadata', or use a "
                                "mapping)"}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def validation_to_data_error(exc: ValidationError, path: str, where: str | None) -> DataError:
    """Turn the first pydantic validation error into a located :class:`DataError`."""
    err = exc.errors()[0]
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}"
                    for part in err.get("loc", ())).removeprefix(".")
    if err["type"] == "value_error" and err["loc"][-1:] in (("response",), ()):  # a shape's
        sub, _, problem = str(err["ctx"]["error"]).partition(": ")  # runner.data.citations
        return DataError(path, where, ".".join(filter(None, (field, sub))), problem)
    problem = _PROBLEMS.get(err.get("type", "")) or (
        f"{err.get('msg', 'invalid value')} (got {_cut(repr(err.get('input')), 60)})")
    return DataError(path, where, field or None, problem)


def iter_cases(path: str | Path, mapping: MappingLike = None, format: str | None = None,
               transform: Transform | None = None) -> Iterator[Case]:
    """Stream validated cases from a file, one record at a time.

    Args:
        path: A ``.jsonl``, ``.json``, ``.yaml`` or ``.csv`` file, or a ``pkg://`` path.
        mapping: JMESPath expressions per canonical key (SPEC 2); none for canonical records.
        format: Overrides the format inferred from the extension.
        transform: A function applied to each raw record before the mapping, for shapes that
            JMESPath cannot express; returning None skips the record.

    Yields:
        Cases in file order.

    Raises:
        DataError: A record is malformed, misses a field, has a wrong type, or repeats an id.
    """
    real = resolve_path(path)
    shown = str(path)
    fm = as_mapping(mapping, CASE_KEYS, origin=f"{shown} (mapping)")
    if transform is None and fm.is_identity and real.is_file() \
            and readers.infer_format(real, format) == "jsonl":
        located: Iterator[tuple[str, Case | None]] = _jsonl_cases(real, shown, fm)
    else:
        records = enumerate(readers.iter_records(real, format), start=1)
        located = ((where, _to_case(raw, index, where, shown, fm, transform))
                   for index, (where, raw) in records)
    ids = CaseIds()
    for where, case in located:
        if case is None:  # the transform skipped the record
            continue
        if problem := ids.problem(case.id, where):
            raise DataError(shown, where, "id", problem)
        yield case


class CaseIds:
    """The case ids met so far. Ids are compared without their surrounding whitespace, after
    Unicode NFC normalisation: two ids equal that way look the same in every report. (NFKC is
    not applied: ``ﬁ`` and ``fi``, ``²`` and ``2`` are told apart on screen.)"""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, str]] = {}  # compared form → (id, where)

    def problem(self, case_id: str, where: str) -> str | None:
        """Why `case_id` (at `where`) cannot follow the ids met so far, or None."""
        key = unicodedata.normalize("NFC", case_id).strip()
        if key not in self._seen:
            self._seen[key] = (case_id, where)
            return None
        first, at = self._seen[key]
        if first == case_id:
            return f"duplicate case id {case_id!r} (first seen at {at})"
        return (f"case id {case_id!a} looks the same as {first!a} at {at} "
                "(ids are compared without surrounding whitespace, after Unicode NFC "
                "normalisation); make them differ")


def _jsonl_cases(path: Path, shown: str, fm: FieldMapping) -> Iterator[tuple[str, Case | None]]:
    """The cases of a JSONL file in the canonical shape, each line parsed by jiter (which
    refuses a key given twice in one object) straight into pydantic.

    jiter with its keys cached and ``Case.model_validate`` take 1.26 s per 100,000 cases of
    ``bench/synth.py``, about the 1.24 s of ``Case.model_validate_json`` (median CPU time of 10
    rounds), which keeps the last value of a repeated key. A line that may break a bound of
    :mod:`runner.data.limits`, and a line they reject (a missing id, top-level ``citations``,
    malformed JSON, a repeated key, an invalid field) takes the general path, which fills the
    defaults or raises the located error, so the result is the same either way.
    """
    hinted = readers.check_stream(path, "jsonl")
    for index, (lineno, line) in enumerate(readers.iter_jsonl_lines(path), start=1):
        where = f"line {lineno}"
        if not may_break_bounds(line, hinted):  # jiter reads NaN and 101 levels; the check does not
            try:
                yield where, Case.model_validate(from_json(
                    line.encode(), cache_mode="keys", catch_duplicate_keys=True))
                continue
            except ValueError:  # pydantic's ValidationError is one too
                pass
        yield where, _to_case(parse_json(line, str(path), where), index, where, shown, fm, None)


def _to_case(raw: Any, index: int, where: str, shown: str, fm: FieldMapping,
             transform: Transform | None) -> Case | None:
    """One raw record as a validated case (None when the transform skips it)."""
    record = raw
    if transform is not None:
        try:
            record = transform(raw)
        except Exception as exc:  # a user transform: locate whatever it raised
            raise DataError(shown, where, None,
                            f"transform failed: {type(exc).__name__}: {exc}") from exc
        if record is None:  # the transform skips this record
            return None
        if not isinstance(record, dict) and record is not raw:
            raise DataError(shown, where, None,
                            f"transform {callable_name(transform)} returned {_shown(record)}; "
                            "expected a dict (or None to skip the record)")
    record = fm.apply(record, shown, where)
    if not isinstance(record, dict) or "__raw__" in record:
        raise DataError(shown, where, None,
                        f"expected an object, got {type(raw).__name__}")
    # Mapped top-level `citations`, `answer`, `documents`, ... move into the `response` object.
    moved = {k: v for k in RESPONSE_KEYS if (v := record.pop(k, None)) is not None}
    if moved:
        record["response"] = dict(record.get("response") or {}, **moved)
    record.setdefault("id", str(index))
    try:
        return Case.model_validate(record)
    except ValidationError as exc:
        raise validation_to_data_error(exc, shown, where) from None


def callable_name(fn: Callable[..., Any]) -> str:
    """A transform's dotted name (through ``functools.partial``) for messages."""
    target: Any = fn
    while getattr(target, "func", None) is not None:  # a partial, or a wrapper of one
        target = target.func
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or type(target).__name__
    return f"{module}.{name}" if module else name


def _shown(value: Any) -> str:
    """A value's type and a short repr, for messages (``list ([1, 2])``)."""
    return f"{type(value).__name__} ({_cut(repr(value), 40)})"


def load_cases(path: str | Path, mapping: MappingLike = None, format: str | None = None,
               transform: Transform | None = None) -> list[Case]:
    """Load every case of a file into a list. See :func:`iter_cases` for the arguments.

    Example:
        >>> cases = load_cases("data/demo/cases.jsonl")  # doctest: +SKIP
    """
    # Validated cases are never part of a reference cycle; with the cyclic collector running,
    # its full collections walk every case loaded so far, which made loading 100,000 cases
    # four times slower (runner._gc).
    with gc_paused():
        return list(iter_cases(path, mapping=mapping, format=format, transform=transform))


def iter_documents(path: str | Path, mapping: MappingLike = None, format: str | None = None,
                   transform: KBTransform | None = None) -> Iterator[Document]:
    """Stream the documents of a knowledge base.

    A knowledge base is a JSONL (or JSON/YAML/CSV) file of ``{"source", "text"}`` records, or a
    folder of ``.txt``/``.md`` files where the file name is the source. `mapping` maps other
    record shapes; `transform` turns one raw record into any number of documents.

    Raises:
        DataError: A record misses its source or text.
    """
    real = resolve_path(path)
    shown = str(path)
    if real.is_dir():
        yield from (Document(source=file.name, text=read_text(file)) for file in
                    sorted(real.rglob("*")) if file.suffix.lower() in (".txt", ".md")
                    and file.is_file())
        return
    fm = as_mapping(mapping, KB_KEYS, origin=f"{shown} (mapping)")
    # With a transform, a JSON/YAML object (a corpus keyed by source) is one record to split.
    for where, raw in readers.iter_records(real, format, whole_object=transform is not None):
        records = [raw] if transform is None else _kb_records(transform, raw, shown, where)
        for record in records:
            mapped = fm.apply(record, shown, where)
            try:
                yield Document.model_validate(
                    {k: mapped.get(k) for k in KB_KEYS if k in mapped})
            except ValidationError as exc:
                raise validation_to_data_error(exc, shown, where) from None


def _kb_records(transform: KBTransform, raw: Any, shown: str, where: str) -> list[Any]:
    """A knowledge-base transform's documents for one record: a dict or an iterable of dicts."""
    try:
        out = transform(raw)
        records = [out] if isinstance(out, dict) else list(out)
    except Exception as exc:  # a user transform: locate whatever it raised
        raise DataError(shown, where, None,
                        f"transform {callable_name(transform)} failed: {type(exc).__name__}: "
                        f"{exc}") from exc
    for record in records:
        if not isinstance(record, dict):
            raise DataError(shown, where, None,
                            f"transform {callable_name(transform)} gave {_shown(record)}; "
                            "expected dicts (one per document)")
    return records


def load_knowledge_base(path: str | Path, mapping: MappingLike = None, format: str | None = None,
                        transform: KBTransform | None = None) -> list[Document]:
    """Load a whole knowledge base. See :func:`iter_documents`."""
    return list(iter_documents(path, mapping=mapping, format=format, transform=transform))


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (or of a folder's files, in name order), first 16 hex digits."""
    real = resolve_path(path)
    h = hashlib.sha256()
    for file in sorted(p for p in real.rglob("*") if p.is_file()) if real.is_dir() else [real]:
        h.update(file.name.encode())
        with file.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()[:16]

"""The per-case tables of the results (docs/results.md): their Arrow schemas, their columns
built from records, and the Parquet files written and read back.

``passages.parquet`` holds what no threshold changes (one row per case); ``cases.parquet``
what one threshold decides, in the same row order, without the case id (the passages file
has it): narrow columns that Parquet stores dictionary- and run-length-encoded.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from runner.results.jsonio import clean_json, default_json

CASES_VERSION = 4
"""The format of the per-case tables, in each file's metadata (``ragcite.format``); format 2
was ``passages.jsonl`` and ``cases.jsonl``."""
FORMAT_KEY = b"ragcite.format"
_SURROGATE = re.compile("[\ud800-\udfff]")
PASSAGE = pa.struct([("source", pa.string()), ("content", pa.string())])
CITATION = pa.struct([("source", pa.string()), ("content", pa.string()), ("claim", pa.string())])
RESPONSE = pa.struct([("answer", pa.string()), ("citations", pa.list_(CITATION)),
                      ("usage", pa.string()), ("latency_s", pa.float64()),
                      ("error", pa.string()), ("dangling", pa.int64())])
FOUND = pa.struct([("label", pa.string()), ("document", pa.string()), ("similarity", pa.float64()),
                   ("spans", pa.list_(pa.list_(pa.int64()))),  # runner/scoring/fidelity.py
                   ("excerpt", pa.list_(pa.struct([("at", pa.int64()), ("text", pa.string())])))])
PASSAGES_SCHEMA = pa.schema([
    ("id", pa.string()), ("query", pa.string()), ("references", pa.list_(PASSAGE)),
    ("expected_sources", pa.list_(pa.string())), ("response", RESPONSE),
    ("metadata", pa.string()), ("similarity", pa.list_(pa.list_(pa.float64()))),
    ("fidelity", pa.list_(FOUND))])


def decisions_schema(metrics: Sequence[str], counts: Sequence[str],
                     packed: bool = False) -> pa.Schema:
    """The columns of ``cases.parquet`` for these metrics and count keys, as read; `packed`:
    as scoring builds and writes them, each label a one-byte code into the names of its kind
    (a third of the bytes between processes; the file stores them as text either way)."""
    word = pa.dictionary(pa.int8(), pa.string()) if packed else pa.string()
    return pa.schema([
        ("matched", pa.list_(pa.list_(pa.bool_()))),
        ("citation_labels", pa.list_(word)), ("reference_labels", pa.list_(word)),
        ("metrics", pa.struct([(m, pa.float64()) for m in metrics])),
        ("counts", pa.struct([(k, pa.int64()) for k in counts])),
        ("bands", pa.struct([(m, pa.string()) for m in metrics])),
        ("error", pa.string())])


def json_text(value: Any) -> str | None:
    """A value as the JSON text of a column (``metadata``, ``response.usage``)."""
    return None if value is None else json.dumps(clean_json(value), ensure_ascii=False,
                                                 allow_nan=False, default=default_json)


def passage_row(case: Any) -> dict[str, Any]:
    """A case record's row of ``passages.parquet`` (metadata and usage as JSON text)."""
    response = None if case.response is None else {
        **case.response, "usage": json_text(case.response.get("usage"))}
    return {"id": case.id, "query": case.query, "references": case.references,
            "expected_sources": case.expected_sources, "response": response,
            "metadata": json_text(case.metadata), "similarity": case.similarity,
            "fidelity": case.fidelity}


def decision_row(case: Any) -> dict[str, Any]:
    """A case record's row of ``cases.parquet``."""
    return {"matched": case.matched, "citation_labels": case.citation_labels,
            "reference_labels": case.reference_labels, "metrics": case.metrics,
            "counts": case.counts or None, "bands": case.bands, "error": case.error}


def arrow(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """Values as an Arrow array of `kind`: a NaN is stored as null (as strict JSON writes it), a
    text that is not valid Unicode (a lone surrogate) with U+FFFD in its place."""
    try:
        return pa.array(values, kind, from_pandas=True)
    except (UnicodeEncodeError, pa.ArrowInvalid):
        text = json.dumps(list(values), ensure_ascii=False, default=default_json)
        return pa.array(json.loads(_SURROGATE.sub("\ufffd", text)), kind, from_pandas=True)


def from_rows(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows as a table of `schema`, their values as :func:`arrow` stores them."""
    array = arrow(list(rows), pa.struct(list(schema)))
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(array)], schema)


class TableWriter(pq.ParquetWriter):
    """A Parquet file written row group by row group (``write``) under a ``.partial`` name
    (``close`` leaves it so), renamed into place by :meth:`finish` (an interrupted job never
    leaves a file that looks complete).

    Args:
        path: The file.
        schema: Its columns.
        compression: ``zstd`` (the default) packs the passages' texts to a third; a
            threshold's narrow columns take ``lz4``: written in 0.6 of the time for 10 % more
            bytes. No column statistics are written (no reader filters on them), nor the
            Arrow schema: the file reads back as :func:`decisions_schema` unpacked.
    """

    def __init__(self, path: Path, schema: pa.Schema, compression: str = "zstd") -> None:
        self.path, self.partial = path, path.with_name(path.name + ".partial")
        # Without the Arrow schema stored, coded columns read back as the text they code.
        super().__init__(self.partial, schema, compression=compression, store_schema=False,
                         write_statistics=False)
        self.add_key_value_metadata({FORMAT_KEY: str(CASES_VERSION).encode()})

    def __del__(self) -> None:
        """Close a file left open when collected, without a word: one that cannot be closed
        (a full disk) was refused where the job wrote or closed it."""
        with contextlib.suppress(OSError):
            super().__del__()

    def finish(self) -> None:
        """Close the file and rename it into place."""
        self.close()
        self.partial.replace(self.path)


def write_table(path: Path, table: pa.Table) -> None:
    """Write a whole table as a results file."""
    writer = TableWriter(path, table.schema)
    writer.write(table)
    writer.finish()


def open_table(path: Path) -> pq.ParquetFile:
    """A results table, its format version checked.

    Raises:
        ValueError: Not a results table of this version (one line saying what to do).
    """
    old = path.with_suffix(".jsonl")
    if old.is_file():  # written by ragcite before the tables: docs/results.md says why
        raise ValueError(f"{old}: per-case results of format 2 (JSON lines); this ragcite reads "
                         f"format {CASES_VERSION} (Parquet tables): run the job again")
    if not path.is_file():
        raise ValueError(f"{path}: no such results file")
    try:
        table = pq.ParquetFile(path)
    except (pa.ArrowException, OSError):
        raise ValueError(f"{path}: not a Parquet table") from None
    version = (table.schema_arrow.metadata or {}).get(FORMAT_KEY, b"none").decode()
    if version != str(CASES_VERSION):
        raise ValueError(f"{path}: per-case results format {version} is not supported (this "
                         f"ragcite reads version {CASES_VERSION})")
    return table


def iter_rows(path: Path, columns: Sequence[str] | None = None,
              batch_size: int = 4_096) -> Iterator[dict[str, Any]]:
    """The rows of a results table as records (JSON text columns decoded), streamed."""
    with open_table(path) as file:
        for batch in file.iter_batches(batch_size, columns=columns):
            yield from map(decoded, batch.to_pylist())


def decoded(row: dict[str, Any]) -> dict[str, Any]:
    """A row of a results table with its JSON text columns decoded (in place)."""
    if "metadata" in row:
        row["metadata"] = json.loads(row["metadata"] or "{}")
    if row.get("response") is not None:
        row["response"]["usage"] = json.loads(row["response"]["usage"] or "null")
    return row


REQUIRED = ("id", "query", "references.source", "references.content", "expected_sources",
            "response.citations.source", "response.citations.content")
"""The values of ``passages.parquet`` that are never null."""


def _leaf(values: pa.Array, path: str) -> pa.Array:
    """The values at a dotted column path, lists flattened (``references.source``)."""
    for name in path.split("."):
        if pa.types.is_list(values.type):
            values = values.flatten()
        values = values.flatten()[values.type.get_field_index(name)]
    return values


def check_table(path: Path, passages: bool) -> None:
    """Check that a results table has the columns of its kind (for a reader of folders made
    elsewhere): the passages columns, none of :data:`REQUIRED` null; or the decisions
    columns, each metric a number in [0, 1] or null.

    Raises:
        ValueError: One line naming the file and the column.
    """
    schema = open_table(path).schema_arrow.remove_metadata()
    names = {k: [f.name for f in schema.field(k).type] if k in schema.names
             and pa.types.is_struct(schema.field(k).type) else [] for k in ("metrics", "counts")}
    want = PASSAGES_SCHEMA if passages else decisions_schema(names["metrics"], names["counts"])
    bad = next((f for f in want if f.name not in schema.names
                or schema.field(f.name).type != f.type), None)
    if bad is not None or not schema.equals(want):
        raise ValueError(f"{path}: column {bad.name if bad else schema.names!r} is missing or "
                         f"not of type {bad.type if bad else 'the format says'}")
    data = pq.read_table(path, columns=None if passages else ["metrics"])
    for column in REQUIRED if passages else (f"metrics.{m}" for m in names["metrics"]):
        top, _, rest = column.partition(".")
        values = data.column(top).combine_chunks()
        values = _leaf(values, rest) if rest else values
        if passages and values.null_count:
            raise ValueError(f"{path}: column {column!r}: a null value")
        if not passages and pc.any(pc.invert(pc.and_(pc.greater_equal(values, 0), pc.less_equal(
                values, 1)))).as_py():
            raise ValueError(f"{path}: column {column!r}: a value that is not a number in "
                             "[0, 1]")


def frame(passages: pa.Table, decisions: pa.Table, threshold: float | None,
          per: str | None = None) -> pa.Table:
    """The flat per-case table of one result: ``threshold``, ``id``, each metric, each count,
    the labels and the error; with `per` (``"citation"`` or ``"reference"``) one row per
    labelled citation or reference: ``threshold``, ``id``, its position, ``source``,
    ``content`` and ``label``. What :meth:`RunResult.to_pandas` and ``read_results`` give.

    Raises:
        ValueError: The two tables hold different numbers of cases, or `per` is unknown.
    """
    if passages.num_rows != decisions.num_rows:
        raise ValueError(f"{decisions.num_rows} decided cases, but the passages table has "
                         f"{passages.num_rows}")
    if per not in (None, "citation", "reference"):
        raise ValueError(f"per must be 'citation' or 'reference', got {per!r}")
    if per is None:
        cols = {"threshold": pa.array([threshold] * passages.num_rows, pa.float64()),
                "id": passages.column("id")}
        for name in ("metrics", "counts"):
            struct = decisions.column(name).combine_chunks()
            cols.update(zip((f.name for f in struct.type), struct.flatten()))
        return pa.table({**cols, **{k: decisions.column(k) for k in (
            "citation_labels", "reference_labels", "error")}})
    labels = decisions.column(f"{per}_labels").combine_chunks()
    parent = pc.list_parent_indices(labels).to_numpy()
    position = np.arange(len(parent)) - labels.offsets.to_numpy()[parent]
    items = (passages.column("references").combine_chunks() if per == "reference" else
             passages.column("response").combine_chunks().field("citations"))
    picked = items.values.take(pa.array(items.offsets.to_numpy()[parent] + position))
    return pa.table({"threshold": pa.array([threshold] * len(parent), pa.float64()),
                     "id": passages.column("id").take(pa.array(parent)), per: position,
                     "source": picked.field("source"), "content": picked.field("content"),
                     "label": labels.values})

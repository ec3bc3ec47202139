"""Labelled pairs: a reference passage, a citation passage and whether people say they are the
same part of the source (docs/calibration.md).

One pair a record: ``{"reference": str, "citation": str, "label": true | false}`` with optional
``reference_source``, ``citation_source``, ``case_id``, ``annotator`` and ``note``. The file is
read like a dataset, by the same path: JSON Lines, JSON, YAML or CSV (:mod:`runner.data.readers`),
other shapes through a JMESPath mapping per key (:mod:`runner.data.mapping`), each record
validated by its model, and every problem is one located line (``labels.jsonl, line 3, field
'label': Input should be a valid boolean (got 'yes')``). A pair labelled by several annotators
is one record per annotator; every record is kept, but one annotator may not label the same
pair both ways.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StrictBool, ValidationError

from runner.calibration.schema import OPTIONAL_KEYS, PAIR_KEYS
from runner.data.errors import DataError
from runner.data.loading import MappingLike, resolve_path, validation_to_data_error
from runner.data.mapping import as_mapping
from runner.data.models import DECIMAL_ID, Source
from runner.data.readers import infer_format, iter_records

_CSV_LABELS = {"true": True, "false": False}


class LabelledPair(BaseModel):
    """One person's judgment of one (reference, citation) pair. Other keys of a record are
    ignored (an export may carry more, e.g. the similarity a reviewer saw).

    Attributes:
        reference: The reference (ground-truth) passage (not blank).
        citation: The cited passage (not blank).
        label: True when the two passages are the same part of the source document.
        reference_source: The reference's document, if known.
        citation_source: The citation's document, if known.
        case_id: The case the pair comes from, if any (an integer is kept as its text).
        annotator: Who labelled it (None: unnamed).
        note: Free text.
        where: Where the record is (``line 3``), for messages.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    reference: Source
    citation: Source
    label: StrictBool
    reference_source: str | None = None
    citation_source: str | None = None
    case_id: Annotated[str | None, DECIMAL_ID] = None
    annotator: str | None = None
    note: str | None = None
    where: str = ""

    @property
    def item(self) -> tuple[str | None, ...]:
        """What identifies the pair whoever labelled it (annotators are compared on this)."""
        return (self.case_id, self.reference_source, self.reference, self.citation_source,
                self.citation)


def _csv_cells(record: dict[str, Any]) -> dict[str, Any]:
    """A CSV row's cells as a pair's values: an empty optional cell is absent, and a label is
    ``true`` or ``false`` in any case."""
    out = {k: v for k, v in record.items() if not (k in OPTIONAL_KEYS and v == "")}
    if isinstance(out.get("label"), str):
        out["label"] = _CSV_LABELS.get(out["label"].strip().lower(), out["label"])
    return out


def load_pairs(path: str | Path, mapping: MappingLike = None,
               format: str | None = None) -> list[LabelledPair]:
    """Every labelled pair of a file, in file order.

    Args:
        path: A ``.jsonl``, ``.json``, ``.yaml`` or ``.csv`` file, or a ``pkg://`` path.
        mapping: A JMESPath expression per key of a pair (null: not mapped), for records of
            another shape.
        format: Overrides the format inferred from the extension.

    Raises:
        DataError: The file is missing, empty or has a bad record (one located line).
    """
    shown = str(path)
    real = resolve_path(path)
    csv = infer_format(real, format) == "csv"
    fm = as_mapping(mapping, PAIR_KEYS, origin=f"{shown} (mapping)")
    pairs = []
    for where, raw in iter_records(real, format):
        record = fm.apply(raw, shown, where)
        if "__raw__" in record:
            raise DataError(shown, where, None, f"expected an object, got {type(raw).__name__}")
        try:
            pairs.append(LabelledPair.model_validate(
                {**(_csv_cells(record) if csv else record), "where": where}))
        except ValidationError as exc:
            raise validation_to_data_error(exc, shown, where) from None
    if not pairs:
        raise DataError(shown, None, None, "no labelled pair in the file")
    first: dict[tuple[Any, ...], LabelledPair] = {}
    for pair in pairs:
        if pair.annotator is not None:
            seen = first.setdefault((pair.annotator, *pair.item), pair)
            if seen.label != pair.label:
                raise DataError(shown, pair.where, "label",
                                f"{pair.annotator!r} labelled this pair "
                                f"{str(seen.label).lower()} at {seen.where} and "
                                f"{str(pair.label).lower()} here; keep the one meant")
    return pairs


def annotators(pairs: list[LabelledPair]) -> list[str]:
    """The named annotators of `pairs`, in order of first appearance."""
    return list(dict.fromkeys(p.annotator for p in pairs if p.annotator is not None))

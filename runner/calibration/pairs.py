"""Labelled pairs: a reference passage, a citation passage and whether people say they are the
same part of the source (docs/calibration.md).

One pair a record: ``{"reference": str, "citation": str, "label": true | false}`` with optional
``reference_source``, ``citation_source``, ``case_id``, ``annotator`` and ``note``. The file is
read like a dataset: JSON Lines, JSON, YAML or CSV (:mod:`runner.data.readers`), other shapes
through a JMESPath mapping per key, and every problem is one located line
(``labels.jsonl, line 3, field 'label': must be true or false, got "yes"``). A pair labelled by
several annotators is one record per annotator; every record is kept, but one annotator may not
label the same pair both ways.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.calibration.schema import OPTIONAL_KEYS, PAIR_KEYS, TEXT_KEYS
from runner.data.errors import DataError
from runner.data.loading import resolve_path
from runner.data.mapping import FieldMapping
from runner.data.readers import infer_format, iter_records

_CSV_LABELS = {"true": True, "false": False}


@dataclass(frozen=True)
class LabelledPair:
    """One person's judgment of one (reference, citation) pair.

    Attributes:
        reference: The reference (ground-truth) passage.
        citation: The cited passage.
        label: True when the two passages are the same part of the source document.
        reference_source: The reference's document, if known.
        citation_source: The citation's document, if known.
        case_id: The case the pair comes from, if any.
        annotator: Who labelled it (None: unnamed).
        note: Free text.
        where: Where the record is (``line 3``), for messages.
    """

    reference: str
    citation: str
    label: bool
    reference_source: str | None = None
    citation_source: str | None = None
    case_id: str | None = None
    annotator: str | None = None
    note: str | None = None
    where: str = ""

    @property
    def item(self) -> tuple[str | None, ...]:
        """What identifies the pair whoever labelled it (annotators are compared on this)."""
        return (self.case_id, self.reference_source, self.reference, self.citation_source,
                self.citation)


class PairMapping(FieldMapping):
    """A :class:`FieldMapping` over the keys of a labelled pair; the values are checked by
    :func:`to_pair` afterwards, so any JMESPath result is passed on as is."""

    def apply(self, record: Any, path: str, where: str) -> dict[str, Any]:
        """Map one raw record to the keys of a labelled pair."""
        compiled: dict[str, Any] = self._compiled  # type: ignore[attr-defined]
        if not isinstance(record, dict):
            return {"__raw__": record}
        out = {k: record[k] for k in self.allowed if k not in compiled and k in record}
        out.update({k: expr.search(record) for k, expr in compiled.items()})
        return out


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _label(value: Any, fmt: str, path: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if fmt == "csv" and isinstance(value, str) and value.strip().lower() in _CSV_LABELS:
        return _CSV_LABELS[value.strip().lower()]
    if value is None:
        raise DataError(path, where, "label", "required field is missing (true or false)")
    raise DataError(path, where, "label", f"must be true or false, got {_shown(value)}")


def to_pair(record: Any, fmt: str, path: str, where: str) -> LabelledPair:
    """One mapped record as a :class:`LabelledPair`.

    Raises:
        DataError: The record is not an object, a text is missing or blank, the label is not a
            boolean, or an optional key is not a string. Other keys are ignored (an export
            may carry more, e.g. the similarity a reviewer saw).
    """
    if not isinstance(record, dict) or "__raw__" in record:
        got = type(record.get("__raw__") if isinstance(record, dict) else record).__name__
        raise DataError(path, where, None, f"expected an object, got {got}")
    values: dict[str, Any] = {}
    for key in TEXT_KEYS:
        text = record.get(key)
        if text is None:
            raise DataError(path, where, key, "required field is missing (a passage's text)")
        if not isinstance(text, str) or not text.strip():
            raise DataError(path, where, key, f"must be a non-blank string, got {_shown(text)}")
        values[key] = text
    for key in OPTIONAL_KEYS:
        value = record.get(key)
        if fmt == "csv" and value == "":
            value = None
        if isinstance(value, int) and not isinstance(value, bool) and key == "case_id":
            value = str(value)
        if value is not None and not isinstance(value, str):
            raise DataError(path, where, key, f"must be a string, got {_shown(value)}")
        values[key] = value
    return LabelledPair(label=_label(record.get("label"), fmt, path, where), where=where,
                        **values)


def load_pairs(path: str | Path, mapping: Mapping[str, str | None] | None = None,
               format: str | None = None) -> list[LabelledPair]:
    """Every labelled pair of a file, in file order.

    Args:
        path: A ``.jsonl``, ``.json``, ``.yaml`` or ``.csv`` file, or a ``pkg://`` path.
        mapping: A JMESPath expression per key of a pair, for records of another shape.
        format: Overrides the format inferred from the extension.

    Raises:
        DataError: The file is missing, empty or has a bad record (one located line).
    """
    shown = str(path)
    real = resolve_path(path)
    fmt = infer_format(real, format)
    expressions = {k: v for k, v in (mapping or {}).items() if v is not None}
    fm = PairMapping(expressions, allowed=PAIR_KEYS, origin=f"{shown} (mapping)")
    pairs = [to_pair(fm.apply(raw, shown, where), fmt, shown, where)
             for where, raw in iter_records(real, fmt)]
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

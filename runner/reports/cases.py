"""The case data a run report embeds: the first cases of a job, read once for all its thresholds.

The page holds its first ``max_cases`` cases (the same cases for every threshold of a job's
page) in blocks the page's script decodes (short keys keep big reports small):

* once, the **cases** (``ragcite-cases``): ``id`` and ``q`` (query), one list each;
* once, the **passages** (``ragcite-texts``), one record per case, read when a case is expanded
  or searched: ``R`` and ``C`` references and citations as ``[source, content]``; ``E`` expected
  sources; ``S`` similarity matrix [ref][cit]; ``a`` answer; ``md`` metadata as JSON text;
  ``Rc`` / ``Cc`` the positions of the references and citations whose content is cut in the
  report (``max_text_chars``), which the pair review does not export; ``F`` each citation's
  quote fidelity (SPEC 6.1) as ``[label, document, similarity, spans, excerpt]`` (the spans in
  the document as written; the excerpt, the positions in ``ragcite-docs`` of the blocks of the
  document around them) (the last five when present);
* once, the **documents** (``ragcite-docs``): each distinct block of a document near a located
  quote, ``[offset in its document, text]``, as scoring wrote them (``WINDOW`` characters:
  runner/scoring/fidelity.py), however many quotes point into it;
* once, the **explanations** (``ragcite-explained``): per case its distinct explanations, each
  a list in EXPLANATION_KEYS order (made here from the case's sources, labels and metrics: the
  results files do not store them; a case whose labels no threshold changes has one);
* per threshold, what it **decided** (``ragcite-decided``), as columns of small values: ``f``
  each distinct ``[metric values, bands]`` (the bands one letter each: g/m/r, ``-``
  undefined); per case ``k`` its entry of ``f``, ``cl`` / ``rl`` its citation and reference
  labels as one digit each (the label's position in CITATION_LABELS / REFERENCE_LABELS), ``M``
  its match bits row-major as ``0``/``1``, ``x`` its entry of its explanations; ``err`` the failed
  cases as ``[position, error]``.

So a threshold adds a few bytes a case: its columns are cut from ``cases.parquet`` with array
operations, and only a case's explanations for labels not met at another threshold are made.
The shared blocks of a big page are compressed on a thread while the thresholds' blocks are
made (zlib lets go of the interpreter lock as it compresses).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from runner.reports.common import EXPLANATION_KEYS, clip, dumps_compact, embed_packed
from runner.results import CASES_FILE, passages_path, table
from runner.scoring.labels import CITATION_LABELS, REFERENCE_LABELS
from runner.scoring.records import explain_record, result_normalizer

BANDS = ("green", "medium", "red")
"""The bands as the page codes them: g, m, r (``-``: none)."""


def _passages(items: list[dict[str, Any]], limit: int) -> tuple[list[list[str]], list[int]]:
    """Passages as ``[source, content]`` (clipped; a citation's claim third when it has one),
    and the positions of those clipped."""
    return [[str(item.get("source", "")), clip(item.get("content"), limit),
             *([clip(item["claim"], limit)] if item.get("claim") else [])] for item in items], [
        i for i, item in enumerate(items) if len(str(item.get("content") or "")) > limit]


def texts_record(shared: dict[str, Any], limit: int) -> dict[str, Any]:
    """The passages, expected sources, similarities, answer and metadata of one
    ``passages.parquet`` record."""
    response = shared.get("response") or {}
    refs, refs_cut = _passages(shared.get("references") or [], limit)
    cits, cits_cut = _passages(response.get("citations") or [], limit)
    record: dict[str, Any] = {"R": refs, "C": cits,
                              "E": [str(s) for s in shared.get("expected_sources") or []],
                              "S": [[None if v is None else round(v, 4) for v in r]
                                    for r in shared.get("similarity") or []]}
    metadata = shared.get("metadata")
    optional = {"Rc": refs_cut, "Cc": cits_cut, "dg": response.get("dangling"),
                "F": [list(f.values()) for f in shared.get("fidelity") or []],  # table.py's order
                "a": clip(response.get("answer"), limit),
                "md": metadata and clip(json.dumps(metadata, ensure_ascii=False, default=str),
                                        limit)}
    record.update((k, v) for k, v in optional.items() if v)
    return record


@dataclass
class Shared:
    """What a page embeds once: the first cases of a job's ``passages.parquet``, and for each
    the explanations made so far (keyed by what they follow from)."""

    ids: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    texts: list[dict[str, Any]] = field(default_factory=list)
    # Per case, its distinct explanations by what they follow from, each with its index.
    explanations: list[dict[tuple[Any, ...], tuple[int, list[str]]]] = field(default_factory=list)
    docs: dict[tuple[int, str], int] = field(default_factory=dict)  # (at, text): its position
    normalizer: Callable[[str], str] = str

    def explanation(self, pos: int, key: tuple[str, str, tuple[float, ...], str | None],
                    names: Sequence[str]) -> int:
        """The index in case `pos`'s explanations of those of `key` (its citation and
        reference label digits, figures (-1: undefined) and error), made the first time."""
        known = self.explanations[pos]
        if key not in known:
            cl, rl, figures, error = key
            record = self.texts[pos]  # its passages' sources (never cut) and expected sources
            made = explain_record({"error": error, "expected_sources": record["E"], "references": [
                {"source": r[0]} for r in record["R"]], "response": {"citations": [
                    {"source": c[0]} for c in record["C"]]}, "labels": {
                "citations": [CITATION_LABELS[int(d)] for d in cl],
                "references": [REFERENCE_LABELS[int(d)] for d in rl]},
                "metrics": {k: None if v < 0 else v for k, v in zip(names, figures)}},
                self.normalizer)
            known[key] = len(known), [made.get(k, "") for k in EXPLANATION_KEYS]
        return known[key][0]


def read_shared(result_dir: Path, metrics: dict[str, Any], max_cases: int | None,
                limit: int) -> Shared:
    """The first `max_cases` cases (all when None) of the passages file of a result folder
    (`metrics`: its ``metrics.json``), explained with the result's source normalisation."""
    shared = Shared(normalizer=result_normalizer(metrics))
    for case in islice(table.iter_rows(passages_path(result_dir, metrics)), max_cases):
        shared.ids.append(case["id"])
        shared.queries.append(clip(case.get("query"), limit))
        shared.texts.append(texts_record(case, limit))
        shared.explanations.append({})
        for f in shared.texts[-1].get("F", []):  # each block of a document embedded once
            f[4] = [shared.docs.setdefault(tuple(p.values()), len(shared.docs)) for p in f[4] or []]
    return shared


def _digits(lists: pa.ListArray, names: Sequence[str], where: Path) -> list[str]:
    """Each list of labels as one digit a label: its position in `names`."""
    codes = pc.index_in(lists.flatten(), value_set=pa.array(names))
    if codes.null_count:
        raise ValueError(f"{where}: a label that is none of {', '.join(names)}")
    return _strings(codes.to_numpy(zero_copy_only=False), np.asarray(lists.offsets))


def _strings(codes: np.ndarray, offsets: np.ndarray) -> list[str]:
    """Small integers as digits, cut into one string per case at `offsets`."""
    offsets = (offsets - offsets[0]).astype(np.int32)
    data = (codes.astype(np.uint8) + ord("0")).tobytes()
    return list(pa.StringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets.tobytes()),
                                            pa.py_buffer(data)).to_pylist())


def _figures(decided: pa.Table) -> tuple[list[list[Any]], np.ndarray, list[tuple[float, ...]]]:
    """The distinct ``[metric values (6 decimals), bands]`` of the cases, each case's entry,
    and the distinct metric values unrounded (-1 for undefined)."""
    values = np.column_stack([np.nan_to_num(c.to_numpy(zero_copy_only=False), nan=-1.0)
                              for c in decided.column("metrics").combine_chunks().flatten()])
    bands = np.column_stack([pc.fill_null(pc.index_in(c, value_set=pa.array(BANDS)), 3)
                             for c in decided.column("bands").combine_chunks().flatten()])
    rows = np.ascontiguousarray(np.hstack([values, bands]))  # a case's row as one byte string
    _, first, inverse = np.unique(rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))),
                                  return_index=True, return_inverse=True)
    n, unique = values.shape[1], rows[first].tolist()
    figures = [[[None if v < 0 else round(v, 6) for v in row[:n]],
                "".join("gmr-"[int(b)] for b in row[n:])] for row in unique]
    return figures, inverse.reshape(-1), [tuple(row[:n]) for row in unique]


def read_decided(result_dir: Path, shared: Shared, limit: int) -> dict[str, Any]:
    """One threshold's block: its decisions of the shared cases, from its ``cases.parquet``.

    Raises:
        ValueError: ``cases.parquet`` holds fewer cases than the passages file.
    """
    path, n = result_dir / CASES_FILE, len(shared.ids)
    with table.open_table(path) as file:  # its first n rows only
        first = next(file.iter_batches(max(n, 1)), None)
        decided = pa.Table.from_batches([first] if first else [], file.schema_arrow).slice(0, n)
    if decided.num_rows < n:
        raise ValueError(f"{path}: {decided.num_rows} cases, but the passages file has more")
    figures, entry, raw = _figures(decided)
    names = [f.name for f in decided.schema.field("metrics").type]
    cl, rl = (_digits(decided.column(c).combine_chunks(), labels, path) for c, labels in (
        ("citation_labels", CITATION_LABELS), ("reference_labels", REFERENCE_LABELS)))
    rows = decided.column("matched").combine_chunks()
    inner = rows.flatten()
    bits = _strings(inner.flatten().to_numpy(zero_copy_only=False),
                    np.asarray(inner.offsets)[np.asarray(rows.offsets) - rows.offsets[0].as_py()])
    errors = decided.column("error").to_pylist()
    keys = zip(cl, rl, map(raw.__getitem__, entry.tolist()), errors)
    x = [shared.explanation(pos, key, names) for pos, key in enumerate(keys)]
    return {"f": figures, "k": entry.tolist(), "cl": cl, "rl": rl, "M": bits, "x": x,
            "err": [[pos, clip(e, limit)] for pos, e in enumerate(errors) if e is not None]}


def blocks(shared: Shared, decided: Iterable[dict[str, Any]], embed: str,
           gzip_above: float) -> dict[str, Any]:
    """The blocks of a page: its cases, passages, documents, explanations and each threshold's
    decisions (`decided`, made as they are read), gzipped when `embed` says so (``auto``: once
    they hold more than `gzip_above` bytes together)."""
    texts = [dumps_compact({"id": shared.ids, "q": shared.queries}), dumps_compact(shared.texts),
             dumps_compact(list(shared.docs))]  # UTF-8 bytes
    with ThreadPoolExecutor(1) as pool:  # zlib lets go of the interpreter lock as it compresses
        gzip = embed == "gzip" or (embed == "auto" and sum(map(len, texts)) > gzip_above)
        early = [pool.submit(embed_packed, text, True) for text in texts] if gzip else []
        texts = [*texts[len(early):], *map(dumps_compact, decided),  # explaining meanwhile
                 dumps_compact([[x for _, x in case.values()] for case in shared.explanations])]
        gzip = gzip or (embed == "auto" and sum(map(len, texts)) > gzip_above)
        packed = [f.result() for f in early] + [embed_packed(texts.pop(0), gzip)
                                                for _ in list(texts)]  # each freed once packed
    return {"cases_json": packed[0], "texts_json": packed[1], "docs_json": packed[2],
            "decided_json": packed[3:-1], "explained_json": packed[-1]}

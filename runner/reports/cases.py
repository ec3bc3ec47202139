"""The case data a run report embeds, read from the first cases of a result folder.

A report embeds three blocks per case (short keys keep big reports small):

* the **row** (``ragcite-cases``), all the table needs to show, sort and filter: ``id``; ``q``
  query; ``m`` the metric values in the record's order; ``b`` their bands as one letter each
  (g/m/r, ``-`` undefined); ``cl`` / ``rl`` the citation and reference labels; ``err`` the error;
* the **scores** (``ragcite-details``), read when a case is expanded: ``S`` similarity matrix
  [ref][cit]; ``M`` match matrix as 0/1; ``X`` explanations in EXPLANATION_KEYS order (made
  here from the case's sources, labels and metrics: the results files do not store them);
* the **passages** (``ragcite-texts``), read with the scores: ``R`` and ``C`` references and
  citations as ``[source, content]``; ``E`` expected sources; ``a`` answer; ``md`` metadata as
  JSON text; ``Rc`` / ``Cc`` the positions of the references and citations whose content is
  cut in the report (``max_text_chars``), which the pair review does not export (the last four
  when present).

Only the first ``max_cases`` cases are read (:func:`read_embedded`). The passages come from the
job's ``passages.parquet``, which the result folders of a job that decides several thresholds
share: :class:`PassageTexts` holds what the page built from it, so that the other thresholds of a
job's page (:func:`runner.reports.run.render_run_reports`) embed it once, without reading it again.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from pathlib import Path
from typing import Any, cast

from markupsafe import Markup

from runner.reports.common import (
    EXPLANATION_KEYS,
    METRIC_KEYS,
    clip,
    dumps_compact,
    embed_packed,
    pack_text,
)
from runner.results import iter_decisions, iter_records
from runner.scoring.records import explain_record, result_normalizer

BAND_CODE = {"green": "g", "medium": "m", "red": "r"}


def row_record(decided: dict[str, Any], query: str, limit: int) -> dict[str, Any]:
    """The table row of one case from its ``cases.parquet`` record and its (clipped) query."""
    metrics = decided.get("metrics") or dict.fromkeys(METRIC_KEYS)  # the run's declared metrics
    bands = decided.get("bands") or {}
    labels = decided.get("labels") or {}
    row: dict[str, Any] = {
        "id": decided["id"],
        "q": query,
        "m": [None if v is None else round(float(v), 6) for v in metrics.values()],
        "b": "".join(BAND_CODE.get(bands.get(k) or "", "-") for k in metrics),
        "cl": list(labels.get("citations") or []),
        "rl": list(labels.get("references") or []),
    }
    if decided.get("error") is not None:
        row["err"] = clip(decided["error"], limit)
    return row


def scores_record(similarity: list[list[Any]], matched: list[list[Any]],
                  explanations: dict[str, str]) -> dict[str, Any]:
    """The similarity and match matrices and explanations of one case."""
    return {
        "S": [[None if v is None else round(v, 4) for v in r] for r in similarity],
        "M": [[1 if v else 0 for v in r] for r in matched],
        "X": [explanations.get(k, "") for k in EXPLANATION_KEYS],
    }


def _passages(items: list[dict[str, Any]], limit: int) -> tuple[list[list[str]], list[int]]:
    """Passages as ``[source, content]`` (clipped; a citation's claim third when it has one),
    and the positions of those clipped."""
    out, cut = [], []
    for i, item in enumerate(items):
        content = item.get("content")
        text = "" if content is None else str(content)
        if len(text) > limit:
            cut.append(i)
        out.append([str(item.get("source", "")), clip(text, limit),
                    *([clip(item["claim"], limit)] if item.get("claim") else [])])
    return out, cut


def texts_record(shared: dict[str, Any], limit: int) -> dict[str, Any]:
    """The passages, expected sources, answer and metadata of one ``passages.parquet`` record."""
    response = shared.get("response") or {}
    refs, refs_cut = _passages(shared.get("references") or [], limit)
    cits, cits_cut = _passages(response.get("citations") or [], limit)
    record: dict[str, Any] = {"R": refs, "C": cits,
                              "E": [str(s) for s in shared.get("expected_sources") or []]}
    record.update((k, cut) for k, cut in (("Rc", refs_cut), ("Cc", cits_cut)) if cut)
    if response.get("dangling"):
        record["dg"] = response["dangling"]
    if response.get("answer"):
        record["a"] = clip(response["answer"], limit)
    if shared.get("metadata"):
        record["md"] = clip(json.dumps(shared["metadata"], ensure_ascii=False, default=str),
                            limit)
    return record


@dataclass
class PassageTexts:
    """What a report embeds from the first cases of one ``passages.parquet``: their ids, clipped
    queries, similarity matrices and sources (for the explanations), and the passages block
    (packed once, when asked)."""

    ids: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    similarity: list[list[list[Any]]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)  # each case's passages record as JSON

    def add(self, shared: dict[str, Any], limit: int) -> None:
        """Take one ``passages.parquet`` record (or a joined record holding it)."""
        self.ids.append(shared["id"])
        self.queries.append(clip(shared.get("query"), limit))
        self.similarity.append(shared.get("similarity") or [])
        self.sources.append({k: shared.get(k) for k in ("references", "expected_sources",
                                                        "response")})
        self.parts.append(dumps_compact(texts_record(shared, limit)))

    @cached_property
    def text(self) -> str:
        """The passages block's JSON text (the parts are let go once it is made)."""
        text, self.parts = "[" + ",".join(self.parts) + "]", []
        return text

    @cached_property
    def packed(self) -> tuple[int, str]:
        """The passages block gzipped, packed once for every report that embeds it."""
        return pack_text(self.text)

    def block(self, encoding: str) -> Markup:
        """The passages block as embedded (``json`` or ``gzip-base64``)."""
        return embed_packed(self.text, encoding, None if encoding == "json" else self.packed)


@dataclass
class Embedded:
    """The embedded cases of one report: rows and scores as JSON, and their passages."""

    rows: list[str]
    scores: list[str]
    texts: PassageTexts


def read_embedded(result_dir: Path, metrics: dict[str, Any], max_cases: int | None,
                  limit: int, texts: PassageTexts | None = None) -> Embedded:
    """The first `max_cases` cases (all when None) of a result folder, as a report embeds them.

    With `texts`, the passages another result of the same job read (its ``embedded.texts``:
    the job's results share one passages file), this folder's cases are read from
    ``cases.parquet`` alone.

    Raises:
        ValueError: ``cases.parquet`` and the passages do not list the same cases.
    """
    norm = result_normalizer(metrics)
    fresh = texts is None  # read the passages too, from the joined records
    texts = PassageTexts() if texts is None else texts
    n, rows, scores = len(texts.ids), [], []
    lines = iter_records(result_dir, metrics) if fresh else iter_decisions(
        result_dir, metrics=metrics)
    # The readers of runner.results are generators: closed when left, a report that stops
    # after its first cases leaves no file open.
    with closing(cast("Generator[Any, None, None]", lines)) as cases:
        for pos, case in enumerate(islice(cases, max_cases if fresh else n)):
            if fresh:
                texts.add(case, limit)
            elif case["id"] != texts.ids[pos]:
                raise ValueError(f"{result_dir}, case {pos + 1}: id {case['id']!r} does not "
                                 f"match the passages file ({texts.ids[pos]!r})")
            rows.append(dumps_compact(row_record(case, texts.queries[pos], limit)))
            scores.append(dumps_compact(scores_record(
                texts.similarity[pos], case.get("matched") or [],
                explain_record({**texts.sources[pos], **case}, norm))))
    if not fresh and len(rows) < n:
        raise ValueError(f"{result_dir}: {len(rows)} cases, but the passages file has {n}")
    return Embedded(rows, scores, texts)

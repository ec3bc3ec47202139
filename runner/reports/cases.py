"""The case data a run report embeds: read from ``cases.jsonl`` in parts, with a passages cache.

A report embeds three blocks per case (short keys keep big reports small):

* the **row** (``ragcite-cases``), all the table needs to show, sort and filter: ``id``; ``q``
  query; ``m`` the six metric values in METRIC_KEYS order; ``b`` their bands as one letter each
  (g/m/r, ``-`` undefined); ``cl`` / ``rl`` the citation and reference labels; ``err`` the error;
* the **scores** (``ragcite-details``), read when a case is expanded: ``S`` similarity matrix
  [ref][cit]; ``M`` match matrix as 0/1; ``X`` explanations in EXPLANATION_KEYS order;
* the **passages** (``ragcite-texts``), read with the scores: ``R`` and ``C`` references and
  citations as ``[source, content]``; ``E`` expected sources; ``a`` answer; ``md`` metadata as
  JSON text (the last two when present).

The passages are most of a report's bytes and of its rendering time, and they are the same in
every job of a threshold sweep (and in a report rendered again). A line written by
:meth:`CaseResult.to_dict <runner.results.CaseResult.to_dict>` holds them between its
``"references"`` and ``"similarity"`` keys, so :class:`ReportCases` reads each line in three
parts and hashes the bytes the passages come from. :class:`TextsCache` keeps the packed
passages block of earlier reports under that digest: a report whose lines hash the same embeds
the stored block instead of parsing, building and compressing the passages again. Being keyed by
the exact bytes (and the options that shape the block), a hit is always the block those bytes
give.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.reports.common import METRIC_KEYS, dumps_compact
from runner.results import CaseFigures, CaseResult, figures_of_line, parse_line

EXPLANATION_KEYS = ("context_recall", "context_precision", "context",
                    "source_recall", "source_precision", "source")
BAND_CODE = {"green": "g", "medium": "m", "red": "r"}

TEXTS_FORMAT = 1
"""Version of the passages block; part of every cache key."""

# A line as CaseResult.to_dict writes it: {"id","query","references",...,"metadata",
# "similarity",...,"error":null}. The bytes `,"references":` first occur as the record's own key
# (inside a JSON string every quote is escaped, and id and query come before it); `,"similarity":`
# last occurs as the record's own key (every key after it has a fixed name).
_REFS_KEY = b',"references":'
_SIM_KEY = b',"similarity":'
_NO_ERROR_END = b'"error":null}'
_TAIL_KEYS = frozenset(("similarity", "matched", "labels", "metrics", "counts", "bands",
                        "explanations", "error"))  # CaseResult.to_dict: the keys from "similarity"


def clip(text: Any, limit: int) -> str:
    """`text` as a string, cut after `limit` characters with a note of how much was cut."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [cut in the report: {len(text) - limit:,} more characters]"


def _round(value: Any, digits: int) -> float | None:
    return None if value is None else round(float(value), digits)


def row_record(case_id: Any, query: Any, metrics: dict[str, Any], bands: dict[str, Any],
               labels: dict[str, Any], error: Any, limit: int) -> dict[str, Any]:
    """The table row of one case (see the module docstring)."""
    row: dict[str, Any] = {
        "id": case_id,
        "q": clip(query, limit),
        "m": [_round(metrics.get(k), 6) for k in METRIC_KEYS],
        "b": "".join(BAND_CODE.get(bands.get(k) or "", "-") for k in METRIC_KEYS),
        "cl": list(labels.get("citations") or []),
        "rl": list(labels.get("references") or []),
    }
    if error is not None:
        row["err"] = clip(error, limit)
    return row


def scores_record(similarity: list[list[Any]], matched: list[list[Any]],
                  explanations: dict[str, str]) -> dict[str, Any]:
    """The similarity and match matrices and explanations of one case."""
    return {
        "S": [[None if v is None else round(v, 4) for v in r] for r in similarity],
        "M": [[1 if v else 0 for v in r] for r in matched],
        "X": [explanations.get(k, "") for k in EXPLANATION_KEYS],
    }


def texts_record(references: list[dict[str, Any]], expected_sources: list[Any],
                 response: dict[str, Any] | None, metadata: dict[str, Any] | None,
                 limit: int) -> dict[str, Any]:
    """The passages, expected sources, answer and metadata of one case."""
    response = response or {}
    record: dict[str, Any] = {
        "R": [[str(r.get("source", "")), clip(r.get("content", ""), limit)]
              for r in references or []],
        "C": [[str(c.get("source", "")), clip(c.get("content", ""), limit)]
              for c in response.get("citations") or []],
        "E": [str(s) for s in expected_sources or []],
    }
    if response.get("answer"):
        record["a"] = clip(response["answer"], limit)
    if metadata:
        record["md"] = clip(json.dumps(metadata, ensure_ascii=False, default=str), limit)
    return record


def compact_case(case: CaseResult, limit: int) -> tuple[dict[str, Any], dict[str, Any],
                                                         dict[str, Any]]:
    """The row, scores and passages records of a whole :class:`CaseResult`."""
    return (row_record(case.id, case.query, case.metrics, case.bands,
                       {"citations": case.citation_labels, "references": case.reference_labels},
                       case.error, limit),
            scores_record(case.similarity, case.matched, case.explanations),
            texts_record(case.references, case.expected_sources, case.response, case.metadata,
                         limit))


class SplitCase:
    """An embedded case without error read in parts: its row and scores as JSON at once, its
    passages from their bytes when needed (:meth:`texts`)."""

    __slots__ = ("_body", "_texts_at", "metrics", "row_json", "scores_json")
    error = None

    def __init__(self, row_json: str, scores_json: str, metrics: dict[str, Any],
                 body: bytes, texts_at: tuple[int, int]) -> None:
        self.row_json, self.scores_json, self.metrics = row_json, scores_json, metrics
        self._body, self._texts_at = body, texts_at  # the line; where its passages' keys are

    @property
    def texts_at(self) -> tuple[int, int]:
        """Where the line's passages' keys begin and end (its similarities begin at the end)."""
        return self._texts_at

    @property
    def similarity_at(self) -> int:
        """Where the line's similarities begin: its bytes before are its head and passages."""
        return self._texts_at[1]

    def texts(self, limit: int) -> dict[str, Any]:
        """The passages record, parsed from the line."""
        start, end = self._texts_at
        data = parse_line(b"{" + self._body[start:end] + b"}")
        return texts_record(data.get("references") or [], data.get("expected_sources") or [],
                            data.get("response"), data.get("metadata"), limit)


def split_line(body: bytes, limit: int) -> SplitCase | None:
    """`body` (a line without its newline) read in parts; None unless it has no error and
    :meth:`CaseResult.to_dict`'s layout."""
    if not body.endswith(_NO_ERROR_END):
        return None
    refs_at = body.find(_REFS_KEY)
    sim_at = body.rfind(_SIM_KEY)
    if refs_at < 0 or sim_at < refs_at:
        return None
    try:
        head = parse_line(body[:refs_at] + b"}")
        tail = parse_line(b"{" + body[sim_at + 1:])
    except ValueError:
        return None
    if (not isinstance(head, dict) or head.keys() != {"id", "query"}
            or not isinstance(tail, dict) or tail.keys() != _TAIL_KEYS
            or tail["error"] is not None):
        return None
    metrics = tail["metrics"] or {}
    row = row_record(head["id"], head["query"], metrics, tail["bands"] or {},
                     tail["labels"] or {}, None, limit)
    scores = scores_record(tail["similarity"] or [], tail["matched"] or [],
                           tail["explanations"] or {})
    return SplitCase(dumps_compact(row), dumps_compact(scores), metrics, body,
                     (refs_at + 1, sim_at))


class FragmentMemo:
    """The row and scores JSON of embedded lines (:class:`SplitCase`), by line digest.

    The reports of a threshold sweep's jobs read mostly the same ``cases.jsonl`` lines (the
    cases whose decisions the threshold did not change). The sweep's report helper
    (:mod:`runner.reports.host`) renders them one after another with one memo: each report
    finds the lines its predecessors read without parsing them. The digest covers what a row
    and its scores are made of, the line's bytes before its references (id, query) and from its
    similarities on, and the option that shapes the row (``max_text_chars``); the passages
    between them do not enter the row. Bounded: past `max_bytes` nothing more is added.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024,
                 max_line_bytes: int = 128 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.max_line_bytes = max_line_bytes
        self._entries: dict[bytes, tuple[str, str, dict[str, Any]]] = {}
        self._bytes = 0
        # The last report's embedded lines, in order, and its passages key (see ReportCases):
        # a line equal to the one at its position there is not hashed or parsed again.
        self.last: tuple[int, list[_Read], str] | None = None  # (limit, lines, texts key)

    @staticmethod
    def key(body: bytes, refs_at: int, sim_at: int, limit: int) -> bytes:
        """The digest of one line (without its newline) split at `refs_at` (its references'
        key) and `sim_at` (its similarities' key), under `limit`: of its head and its tail."""
        view = memoryview(body)
        h = hashlib.blake2b(refs_at.to_bytes(8, "little"), digest_size=16)
        h.update(view[:refs_at])
        h.update(view[sim_at:])
        h.update(limit.to_bytes(8, "little", signed=True))
        return h.digest()

    def get(self, key: bytes) -> tuple[str, str, dict[str, Any]] | None:
        """The stored row JSON, scores JSON and metrics under `key`, or None."""
        return self._entries.get(key)

    def put(self, key: bytes, value: tuple[str, str, dict[str, Any]]) -> None:
        """Store one line's parts."""
        size = len(value[0]) + len(value[1]) + 200
        if key in self._entries or self._bytes + size > self.max_bytes:
            return
        self._entries[key] = value
        self._bytes += size

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop everything."""
        self._entries.clear()
        self._bytes = 0
        self.last = None


_Read = tuple[bytes, tuple[int, int] | None, tuple[str, str, dict[str, Any]] | None]
"""An embedded line as a report read it: its bytes, where its passages' keys are
(:attr:`SplitCase.texts_at`), and its row, scores JSON and metrics (both None when read whole)."""

FRAGMENTS = FragmentMemo()
"""The row and scores JSON of the lines this process's reports read (a sweep's report helper)."""


class ReportCases:
    """The records of ``cases.jsonl`` as a report reads them.

    Iterating yields, for the first `embedded` lines (all when None), a :class:`SplitCase`
    (a line without error in the standard layout) or the whole :class:`CaseResult`; past them,
    only the figures (:func:`runner.results.figures_of_line`; a whole record when it failed).
    Blank lines are skipped. After iterating, :attr:`texts_key` is the digest of the bytes the
    embedded cases' passages come from.
    """

    def __init__(self, path: Path, embedded: int | None, limit: int,
                 fragments: FragmentMemo | None = None) -> None:
        self.path, self.embedded, self.limit = path, embedded, limit
        self.fragments = fragments
        self._hash = hashlib.blake2b(digest_size=20)
        # The stored block is gzip output: another zlib could pack the same text otherwise.
        self._hash.update(f"ragcite-texts/{TEXTS_FORMAT}/{limit}/"
                          f"{zlib.ZLIB_RUNTIME_VERSION}\n".encode())
        self._key: str | None = None
        self._done = False

    def _split(self, body: bytes) -> SplitCase | None:
        memo = self.fragments
        if memo is None:
            return split_line(body, self.limit)
        refs_at, sim_at = body.find(_REFS_KEY), body.rfind(_SIM_KEY)
        if refs_at < 0 or sim_at < refs_at:
            return None  # not the standard layout: read whole
        key = memo.key(body, refs_at, sim_at, self.limit)
        found = memo.get(key)
        if found is not None:  # the same head and tail as a line read before: its row
            return SplitCase(*found, body, (refs_at + 1, sim_at))
        split = split_line(body, self.limit)
        if split is not None:
            memo.put(key, (split.row_json, split.scores_json, split.metrics))
        return split

    def __iter__(self) -> Iterator[SplitCase | CaseResult | CaseFigures]:
        memo = self.fragments
        last: list[_Read] = []
        last_key: str | None = None
        if memo is not None and memo.last is not None and memo.last[0] == self.limit:
            _, last, last_key = memo.last
        # This report's lines for the next one (kept within the memo's bound).
        read: list[_Read] | None = [] if memo is not None else None
        room = memo.max_line_bytes if memo is not None else 0
        same = True  # every embedded line so far has the passages of the last report's there
        parts: list[tuple[bytes, memoryview | bytes]] = []  # what the passages come from
        whole = 0
        with self.path.open("rb") as fh:
            for line in fh:
                if self.embedded is None or whole < self.embedded:
                    body = line.rstrip()
                    if not body.strip():
                        continue
                    before = last[whole] if whole < len(last) else None
                    whole += 1
                    split: SplitCase | None
                    if before is not None and before[0] == body:  # the last report's line
                        split = (SplitCase(*before[2], body, before[1])
                                 if before[1] is not None and before[2] is not None else None)
                    else:
                        split = self._split(body)
                        # Another tail (its decisions changed) over the same head and passages?
                        same = same and (before is not None and split is not None
                                         and before[1] is not None
                                         and memoryview(body)[:split.similarity_at]
                                         == memoryview(before[0])[:before[1][1]])
                    # What the passages come from, each part named by its kind and length.
                    parts.append((b"S", memoryview(body)[:split.similarity_at])
                                 if split is not None else (b"W", body))
                    if read is not None:
                        room -= len(body)
                        if room < 0:
                            read = None  # past the bound: nothing is kept for the next report
                        else:
                            read.append((body, split.texts_at, (
                                split.row_json, split.scores_json, split.metrics))
                                if split is not None else (body, None, None))
                    yield (split if split is not None
                           else CaseResult.from_dict(parse_line(body)))
                elif (record := figures_of_line(line)) is not None:
                    yield record
        if same and whole == len(last) and last_key is not None:
            self._key = last_key  # the very lines of the last report: its passages key
        else:
            update = self._hash.update
            for kind, part in parts:
                update(kind)
                update(len(part).to_bytes(8, "little"))
                update(part)
            self._key = self._hash.hexdigest()
        if memo is not None:
            memo.last = (self.limit, read, self._key) if read is not None else None
        self._done = True

    @property
    def texts_key(self) -> str | None:
        """The cache key of the embedded passages (None before the file is read through)."""
        return self._key if self._done else None


class TextsCache:
    """Packed passages blocks of earlier reports, one file each under `directory`.

    Args:
        directory: Where the blocks live (``<cache.dir>/report-texts``).
        keep: The most blocks kept; the least recently used leave first.
    """

    def __init__(self, directory: str | Path, keep: int = 8) -> None:
        self.dir = Path(directory)
        self.keep = keep

    def _path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def get(self, key: str) -> tuple[int, str] | None:
        """``(bytes of the JSON text, packed data)`` stored under `key`, or None."""
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            n_bytes, data = int(entry["bytes"]), str(entry["data"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used
        return n_bytes, data

    def put(self, key: str, n_bytes: int, data: str) -> None:
        """Store a packed block (atomically), then drop the oldest past `keep`."""
        tmp: str | None = None
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".part")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"bytes": n_bytes, "data": data}, fh)
            os.replace(tmp, self._path(key))
            tmp = None
            self._prune()
        except OSError:
            pass  # a cache that cannot be written only costs time
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def _prune(self) -> None:
        """Drop the least recently used blocks past `keep` (another process may prune too)."""
        entries = []
        for path in self.dir.glob("*.json"):
            with contextlib.suppress(OSError):
                entries.append((path.stat().st_mtime, path))
        entries.sort(reverse=True)
        for _, old in entries[self.keep:]:
            old.unlink(missing_ok=True)

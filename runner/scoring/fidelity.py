"""Quote fidelity (SPEC 6.1): where each citation's quote really comes from, with no model call.

A citation's content is located in the documents at hand (the dataset's knowledge base) by the
rule of docs/fidelity.md: exact after the matchers' normalisation (:func:`fold`) first, in the
cited document and then in the documents that share most word n-grams with the quote (an index
built once per job, before the scoring workers fork); then a fuzzy alignment (rapidfuzz's
``partial_ratio_alignment``) with the same documents. Each citation gets one label of
:data:`runner.scoring.labels.FIDELITY` and the span(s) it was found at.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
from rapidfuzz import fuzz

from runner.matchers.text import INVISIBLE, fold, split_ellipsis
from runner.scoring.labels import FIDELITY

GAP = 200
"""Characters an ellipsis may stand for between two parts of one passage; farther: stitched."""
CLOSE = 0.55
"""The least similarity (partial alignment of the words, 0-1) of a paraphrased quote to its span."""
CANDIDATES = 3
"""Other documents a quote is looked for in: those sharing most word n-grams with it."""
N = 3
"""Tokens per n-gram of the candidate index."""
PROBES = 16
"""The quote's n-grams looked up (a sample: they are sorted by hash)."""
COMMON = 100
"""An n-gram found in more documents than this names no candidate (``of the company``)."""
WINDOW = 100
"""The excerpt a report shows of a located span: at least this many characters of its document
either side, in whole blocks of this many (block k: characters [k * WINDOW, (k + 1) * WINDOW)),
so the quotes that point near each other share their blocks."""
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")  # a word, or one character of these scripts
_ALONE = re.compile(f"[{_CJK}]")
_MIX = np.random.default_rng(27).integers(1, 2**62, 64) * 2 + 1  # a word's hash: its characters
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
_MOVES = re.compile(rf"(?:^|\s)[\s{INVISIBLE.pattern[1:-1]}]+|\S?[^\s\x00-\x7f]+")
_OWNER = 28  # bits: at most 2**28 texts (documents, or quotes of a call) in one index
Found = dict[str, Any]  # {"label", "document", "similarity", "spans"}: _found (+ "excerpt")


def label_counts(found: Iterable[Found]) -> dict[str, int]:
    """Each fidelity label's count, keyed as ``labels`` holds it (``fidelity_verbatim``)."""
    seen = Counter(f["label"] for f in found)
    return {lab.key: seen[lab.name] for lab in FIDELITY}


def _words(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The words of `texts` (:data:`_TOKEN`'s), found by each character's kind, not by the
    pattern: each one's hash, start and end in its text, and each text's count of them."""
    code = np.frombuffer("\0".join(texts).encode("utf-32-le", "surrogatepass"), np.uint32)
    kinds = np.zeros(int(code.max(initial=0)) + 1, np.int8)  # 1 in a word, 2 a word alone
    chars = np.flatnonzero(np.bincount(code, minlength=len(kinds)))
    kinds[chars] = [2 if _ALONE.match(c) else bool(_TOKEN.match(c)) for c in map(chr, chars)]
    kind = np.concatenate([[0], kinds[code], [0]])
    start = np.flatnonzero((kind[1:-1] == 2) | (kind[1:-1] == 1) & (kind[:-2] != 1))
    size = np.flatnonzero((kind[1:-1] == 2) | (kind[1:-1] == 1) & (kind[2:] != 1)) + 1 - start
    at = np.flatnonzero(kind[1:-1])  # each character of a word, word after word
    mixed = np.cumsum(np.concatenate([[0], code[at] * _MIX[(at - np.repeat(start, size)) % 64]]))
    first = np.cumsum([0, *(len(text) + 1 for text in texts)])[:-1]
    text = np.searchsorted(first, start, "right") - 1
    return ((mixed[np.cumsum(size)] - mixed[np.cumsum(size) - size]) * 31 + size, start - first[
        text], start + size - first[text], np.bincount(text, minlength=len(texts)))


def _letters(words: np.ndarray) -> str:
    """Hashed words as one character each (a code point from the hash, never a surrogate):
    rapidfuzz aligns a string faster than a list."""
    code = (words % 0x10F7FF).astype(np.uint32) + 1
    return (code + (code >= 0xD800) * np.uint32(0x800)).astype("<u4").tobytes().decode("utf-32-le")


def _distinct(words: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct n-grams (hashed) of texts of `counts` words (`words`: their hashes, end to
    end; a text of fewer than N padded with 0), sorted by hash, with their text (ascending). A
    hash keeps its high bits, its text is in the low :data:`_OWNER` bits while they are sorted."""
    pad = np.maximum(counts, N) - counts
    padded = np.zeros(len(words) + int(pad.sum()), np.int64)
    padded[np.repeat(np.cumsum(pad) - pad, counts) + np.arange(len(words))] = words
    grams = sum((padded[i:len(padded) - N + 1 + i] * (1 + 2 * i) ** 21 for i in range(1, N)),
                padded[:len(padded) - N + 1])
    owner = np.repeat(np.arange(len(counts)), counts + pad)[:len(grams)]
    keep = np.arange(len(grams)) + N <= np.cumsum(counts + pad)[owner]
    found = np.sort(grams[keep] >> _OWNER << _OWNER | owner[keep])
    found = found[np.diff(found, prepend=found[:1] - 1) != 0]  # (np.unique hashes: slower)
    return found >> _OWNER << _OWNER, found & (1 << _OWNER) - 1


def _places(text: str, doc: str) -> list[tuple[int, int, int, int]]:
    """Where the offsets of `doc` (``fold(text)``) move against those of `text`: after
    ``(0, 0, 0, 0)``, ``(its offset in the fold, start, end, length of its fold)`` of each stretch
    fold may change the length of (:data:`_MOVES`: spaces, and invisible characters among them,
    kept as one space, or none first; the characters that are not ASCII, with the one before
    them, which NFKC may compose with them: ``ß`` → ``ss``, ``㈱`` → ``(株)``, ``e\u0301`` →
    ``é``, ``e\u200b`` → ``e``). An offset after a stretch (before the next) moves as its end;
    one inside it is the shortest prefix of the stretch whose fold is that long. None when fold
    changes no length (one comparison: the fold is the text case folded, as long as the text)."""
    rows, shift = [(0, 0, 0, 0)], 0
    for m in [] if len(doc) == len(text) and doc == text.casefold() else _MOVES.finditer(text):
        start, end = m.span()
        n = len(fold(m.group())) + (start > 0 and text[start].isspace())  # spaces: one space
        rows.append((start - shift, start, end, n))
        shift += end - start - n
    return rows


def _exact(doc: str, parts: Sequence[str]) -> list[list[int]] | None:
    """The spans of `parts` in `doc`, each looked for after the one before (else anywhere),
    or None when one is missing."""
    spans, at = [], 0
    for part in parts:
        start = doc.find(part, at)
        if start < 0 and (not at or (start := doc.find(part)) < 0):
            return None
        spans.append([start, at := start + len(part)])
    return spans


class Locator:
    """The documents of a job, folded and indexed once, and the rule that labels a quote.

    Args:
        documents: ``(source, text)`` of each document; none: every citation is unchecked.
        norm: The run's source normalisation (a citation names its document by source).
    """

    def __init__(self, documents: Iterable[tuple[str, str]], norm: Callable[[str], str]) -> None:
        self.norm = norm
        self.texts: dict[str, tuple[str, str]] = {}  # as written; named twice: its texts joined
        for source, raw in documents:
            key = norm(source)
            self.texts[key] = (source, f"{self.texts[key][1]} {raw}" if key in self.texts else raw)
        self.docs = {key: (source, fold(text)) for key, (source, text) in self.texts.items()}
        self.places = {key: _places(text, self.docs[key][1])  # where fold moves the offsets
                       for key, (_, text) in self.texts.items()}
        # The index: where every document's words are, the words as the alignment reads them
        # (one letter each), and the distinct n-grams, sorted by hash, with their owner.
        self.keys, texts = list(self.docs), [text for _, text in self.docs.values()]
        words, self.starts, self.ends, counts = map(np.concatenate, zip(*(
            _words(texts[i:i + 256]) for i in range(0, max(len(texts), 1), 256))))
        first = np.cumsum(counts) - counts
        self.span = dict(zip(self.keys, zip(first.tolist(), (first + counts).tolist())))
        self.grams, self.owner = _distinct(words, counts)
        self.letters = _letters(words)  # the words kept as the alignment reads them

    def labels(self, sources: Sequence[str], quotes: Sequence[str],
               shown: int | None = None) -> list[Found]:
        """Where each quote, cited from its source, lies (the rule of docs/fidelity.md), the
        first `shown` (None: all) with the excerpt a report shows; those not found in their
        cited document are looked up in the index together."""
        folded = [fold(quote) for quote in quotes] if self.docs else quotes  # (none to look in)
        out = [self._own(source, quote) for source, quote in zip(sources, folded)]
        rest = [k for k, found in enumerate(out) if not found]
        if rest:
            words, _, _, counts = _words([folded[k] for k in rest])
            letters = _letters(words)
            for k, end, n, others in zip(rest, np.cumsum(counts).tolist(), counts.tolist(),
                                         self._candidates(words, counts)):
                out[k] = self._elsewhere(self.norm(sources[k]), split_ellipsis(folded[k]),
                                         letters[end - n:end], others)
        for found in out[:shown]:
            found["excerpt"] = self._excerpt(found)
        return out

    def _own(self, source: str, quote: str) -> Found:
        """`quote` (folded) verbatim or stitched in the document it cites, unchecked, or {}:
        neither."""
        if not self.docs or not (parts := split_ellipsis(quote)):
            return {"label": "unchecked", "document": None, "similarity": None, "spans": []}
        key = self.norm(source)
        doc = self.docs.get(key, ("", ""))[1]
        spans = _exact(doc, parts)
        if spans and all(0 <= b[0] - a[1] <= GAP for a, b in pairwise(spans)):
            return self._found("verbatim", key, 1.0, spans)
        spans = spans or _exact(doc, [p for part in parts for p in _SENTENCE.split(part) if p])
        return self._found("stitched", key, 1.0, spans) if spans else {}

    def _candidates(self, words: np.ndarray, counts: np.ndarray) -> list[list[str]]:
        """Per quote (`words`, `counts`: :func:`_words`), the documents that share most
        n-grams (none of them common) with it: a sample of its n-grams, the first by hash."""
        grams, quote = _distinct(words, counts)
        order = np.argsort(quote, kind="stable")  # the first PROBES of each quote, by hash:
        probe = np.sort(order[np.arange(len(order)) - np.searchsorted(quote[order], quote[order])
                              < PROBES])
        low = np.searchsorted(self.grams, grams := grams[probe])
        owners = np.searchsorted(self.grams, grams, "right") - low  # each n-gram's, in a row
        low, owners, quote = (a[owners <= COMMON] for a in (low, owners, quote[probe]))
        at = np.repeat(low - np.cumsum(owners) + owners, owners) + np.arange(owners.sum())
        n = len(self.keys)
        found, hits = np.unique(np.repeat(quote, owners) * n + self.owner[at], return_counts=True)
        found = found[np.lexsort((-hits, found // n))]  # most hits first, then the first document
        found = found[np.arange(len(found)) - np.searchsorted(found // n, found // n) <= CANDIDATES]
        keys = [self.keys[k] for k in (found % n).tolist()]  # each quote's, in a row
        ends = np.searchsorted(found // n, range(len(counts)), "right").tolist()
        return [keys[a:b] for a, b in zip([0, *ends], ends)]

    def _elsewhere(self, key: str, parts: list[str], words: str, near: list[str]) -> Found:
        """A quote not found in the document it cites (`key`): verbatim in one of the `near`
        ones, close to `key`, close to one of the `near` ones, or fabricated."""
        others = [other for other in near if other != key][:CANDIDATES]
        for other in others:  # verbatim elsewhere before close to the cited document
            if spans := _exact(self.docs[other][1], parts):
                return self._found("misattributed", other, 1.0, spans)
        for label, other in [("paraphrased", key)] * (key in self.docs) + [
                ("misattributed", other) for other in others]:
            if close := self._close(label, other, words):
                return close
        return {"label": "fabricated", "document": None, "similarity": 0.0, "spans": []}

    def _close(self, label: str, key: str, words: str) -> Found | None:
        """`label` when `words` (the quote's, hashed) align with a span of the words of document
        `key` at least :data:`CLOSE` (its span: from its first word's start to its last word's
        end)."""
        first, last = self.span[key]
        got = fuzz.partial_ratio_alignment(words, self.letters[first:last],
                                           score_cutoff=100 * CLOSE)
        if got is None:
            return None
        span = [int(self.starts[first + got.dest_start]), int(self.ends[first + got.dest_end - 1])]
        return self._found(label, key, got.score / 100, [span])

    def _found(self, label: str, key: str, similarity: float, spans: list[list[int]]) -> Found:
        """The entry of a quote located at `spans` of the folded document `key`, with its spans
        in the text as written (:func:`_places`, noted when indexed)."""
        rows = self.places[key]

        def place(offset: int) -> int:  # after a stretch: moved as its end; inside: its prefix's
            at, start, end, n = rows[bisect_right(rows, offset, key=lambda row: row[0]) - 1]
            text = self.texts[key][1]
            return offset + end - at - n if offset - at >= n else start + bisect_left(
                range(end - start), offset - at, key=lambda k: len(fold(text[start:start + k])))

        return {"label": label, "document": self.docs[key][0], "similarity": similarity,
                "spans": [[place(a), place(b)] for a, b in spans] if len(rows) > 1 else spans}

    def _excerpt(self, found: Found) -> list[dict[str, Any]]:
        """What a report shows of the document a quote was located in: the blocks of
        :data:`WINDOW` characters within ``WINDOW`` of a span, in order (``{"at": offset in
        the text as written, "text": ...}``); none for a quote located nowhere."""
        text = self.texts[self.norm(found["document"])][1] if found["spans"] else ""
        near = sorted({k for a, b in found["spans"] for k in range(  # the blocks' offsets
            max(a - a % WINDOW - WINDOW, 0), min(b + WINDOW, len(text)), WINDOW)})
        return [{"at": k, "text": text[k:k + WINDOW]} for k in near]

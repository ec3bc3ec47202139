"""Inline markers over retrieved documents (SPEC 2.1, docs/formats.md "Inline markers").

Numeric markers ``[1]``, ``[1, 3]``, ``[1-3]``, ``[1][2]``, footnotes ``[^1]`` and
``【4:0†source】`` (the number before ``:`` or ``†``) point at ``documents[k-1]``, or at the
document whose ``id`` is ``k`` when one has it; a range names at most 100 documents. Any other
bracketed text that starts with a letter or digit (``[doc-7]``, ``[Source A]``) is an id
marker, read only when some document has an ``id``: then it cites the document with that id,
or is dangling. So ``[sic]`` or ``[a]`` over documents without ids is text, never a dangling
count; a markdown link ``[text](url)`` and an ellipsis ``[...]`` are never markers.

A citation's content is the cited document's text, its claim the sentence carrying the marker.
Sentences end after ``.``, ``!`` or ``?`` followed by white space, after ``。``, ``！`` or ``？``,
and at a line break, the markers right after a full stop (``France. [1]``) closing the
sentence before it. A document cited twice in one sentence is one citation.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

_NUMBERS = r"\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*"
_FORMS = (rf"\[\^?(?P<num>{_NUMBERS})\]", r"【(?P<wide>\d+)(?:[:†][^】]*)?】",
          r"\[(?P<id>\s*\w[^\[\]\n]*)\](?!\()")
MARKER = re.compile("|".join(_FORMS))
_ANY = "(?:" + "|".join(re.sub(r"P<\w+>", ":", form) for form in _FORMS) + ")"
# A sentence ends after its full stop and the markers that follow it.
_END = re.compile(rf"[.!?](?:\s*{_ANY})*\s+|[。！？](?:\s*{_ANY})*\s*|\n+")
_RANGE_LIMIT = 100


def count(answer: str) -> int:
    """The numeric markers in `answer` (each bracket once)."""
    return sum(1 for m in MARKER.finditer(answer) if m["id"] is None)


def _targets(match: re.Match[str]) -> list[str]:
    """The numbers (as text) or the id a marker names."""
    if match["num"] is None:
        return [(match["id"] or match["wide"]).strip()]
    return [str(k) for low, high in re.findall(r"(\d+)(?:\s*[-–]\s*(\d+))?", match["num"])
            for k in range(int(low), min(int(high or low), int(low) + _RANGE_LIMIT - 1) + 1)]


def read(answer: str, documents: Sequence[Any]) -> tuple[list[dict[str, Any]], int]:
    """The citations the markers of `answer` make over `documents`, and the dangling count."""
    by_id = {doc.id: doc for doc in documents if doc.id is not None}
    starts = [0, *(m.end() for m in _END.finditer(answer) if 0 < m.end() < len(answer))]
    cited: dict[tuple[int, int], dict[str, Any]] = {}
    dangling = 0
    for match in MARKER.finditer(answer):
        if match["id"] is not None and not by_id:
            continue
        sentence = bisect_right(starts, match.start()) - 1
        for key in _targets(match):
            doc = by_id.get(key) or (documents[int(key) - 1] if match["id"] is None
                                     and 0 < int(key) <= len(documents) else None)
            if doc is None:
                dangling += 1
                continue
            end = starts[sentence + 1] if sentence + 1 < len(starts) else len(answer)
            cited.setdefault((sentence, id(doc)), {
                "source": doc.source, "content": doc.text,
                "claim": answer[starts[sentence]:end].strip()})
    return list(cited.values()), dangling

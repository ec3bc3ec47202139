"""`matcher=locate`: the overlap of where two passages lie, worked out by hand.

The knowledge base (after fold) and its character offsets:

    leave.md   "employees get 25 days of paid leave per year. unused days expire in march."
               sentence 1 [0, 45), sentence 2 [46, 74)
    travel.md  "travel is approved by the line manager."  [0, 39)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import evaluate
from runner.matchers.locate import LocateMatcher

REF = "Employees get 25 days of paid leave per year."  # leave.md [0, 45)
PAIRS = [
    # "paid leave per year. unused days expire in march." is [25, 74): it shares [25, 45) with
    # the reference, 20 of the shorter span's 45 characters.
    (REF, "paid leave per year. Unused days expire in March.", 20 / 45),
    # Not verbatim: its words align with "employees ... paid" [0, 29) (6 of its 7 words in
    # order, 12 / 14 >= 0.55); the reference holds all of that span: 29 / 29.
    (REF, "employees get 25 days of paid vacation", 1.0),
    (REF, "Travel is approved by the line manager.", 0.0),  # in another document
    # In no document: ngram scores it (every trigram of the citation is in the reference).
    ("Parking is free for all staff members.", "parking is free for all staff", 1.0),
]


def test_similarity_is_the_overlap_of_the_located_spans(tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    kb = tmp_path / "kb.jsonl"
    kb.write_text("".join(json.dumps(d) + "\n" for d in (
        {"source": "leave.md", "text": "Employees get 25 days of paid leave per year. Unused "
         "days expire in March."},
        {"source": "travel.md", "text": "Travel is approved by the line manager."})), "utf-8")
    matcher = LocateMatcher(knowledge_base=[{"path": str(kb)}])
    assert matcher.similarities([(ref, cit) for ref, cit, _ in PAIRS]) == [
        pytest.approx(want) for *_, want in PAIRS]
    assert ("matcher=locate: 1 of 4 pairs have a passage in no document of the knowledge "
            "base; ngram scored them") in caplog.text
    cases = [{"id": "1", "query": "q", "references": [{"source": "leave.md", "content": REF}],
              "response": {"citations": [{"source": "leave.md", "content": PAIRS[0][1]}]}}]
    assert evaluate(cases, matcher=matcher).cases[0].similarity == [[pytest.approx(20 / 45)]]

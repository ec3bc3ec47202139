"""Inline markers in the run report (Chromium): the run's dangling markers in one sentence, and
in the case view each citation's claim and the case's dangling count."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from runner.reports.run import render_run_report
from tests.reports.conftest import parse

DOCS = [{"source": "a", "text": "the cat sat on the mat"}, {"source": "b", "text": "dogs bark"}]
# Case 1 cites a in its first sentence and b in its second; [7] and [9] point at no document
# of two: 2 dangling in 1 answer. Case 2 cites b, with no dangling marker.
CASES = [{"id": "1", "query": "q1", "references": [{"source": "a", "content": DOCS[0]["text"]}],
          "response": {"answer": "The cat sat [1]. Dogs bark [2][7]. Birds [9].",
                       "documents": DOCS}},
         {"id": "2", "query": "q2", "references": [{"source": "b", "content": "dogs bark"}],
          "response": {"answer": "They bark [2].", "documents": DOCS}}]


def test_the_report_shows_dangling_markers_and_claims(
        run_job_in: Callable[..., list[Any]], tmp_path: Path, open_page: Any) -> None:
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (outcome,) = run_job_in("dataset=file", f"dataset.path={tmp_path / 'm.jsonl'}",
                            "model=precomputed", out=tmp_path / "run")
    path = render_run_report(outcome.folder, options={"embed": "json"})
    assert parse(path).text(data_field="dangling") == (
        "2 citations (markers or provider citations) in 1 answer point at no document: "
        "counted, not cited.")
    page, watch = open_page(path)
    page.locator('tr.case-row[data-case-id="1"]').click()
    expect(page.locator('tr.detail [data-cit="0"] .claim')).to_have_text(
        "claim: The cat sat [1].")
    expect(page.locator('tr.detail [data-cit="1"] .claim')).to_have_text(
        "claim: Dogs bark [2][7].")
    expect(page.locator("tr.detail .cits .notice")).to_have_text(
        "2 citations point at no document (dangling: counted, not cited)")
    watch.assert_clean()

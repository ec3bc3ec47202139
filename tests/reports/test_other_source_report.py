"""HotpotQA end to end: a citation credited only by another document's passage is labelled
`other_source`, counted in metrics.json and flagged in the run report's case view (Chromium)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from runner.reports.run import render_run_report
from tests.conftest import read_json
from tests.helpers import read_decisions
from tests.reports.conftest import parse, screenshot

CASE = "5a809f815542996402f6a5b7"
# The BM25 baseline with two citations per answer (the README's `ragcite dataset=hotpotqa
# model.top_k=2`). For CASE it cites "Kahuku, Hawaii", whose first sentence shares "is a
# census-designated place (CDP) ... in the Koolauloa District on the island of Oahu ..." with
# the expected "Laie, Hawaii" reference (ngram similarity 4/7 >= 0.5), and "Hawaii's 2nd
# congressional district", which matches nothing. Neither document is expected.
RUN = ("dataset=hotpotqa", "model=extractive", "model.top_k=2")
OTHER_SOURCE_CASES = [CASE, "5ae5f8215542996de7b71a90", "5ac5244655429924173fb600",
                      "5a84b7765542997b5ce3ff28"]


def _case(folder: Path, case_id: str) -> dict[str, Any]:
    (found,) = [c for c in read_decisions(folder) if c["id"] == case_id]
    return found


def _headline(case: dict[str, Any]) -> list[float]:
    return [case["metrics"][k] for k in ("context_recall", "context_precision", "source_recall",
                                         "source_precision")]


def test_hotpotqa_case_credited_by_another_document(
        run_job_in: Callable[..., list[Any]], tmp_path: Path) -> None:
    (outcome,) = run_job_in(*RUN, out=tmp_path / "default")
    case = _case(outcome.folder, CASE)
    assert case["labels"] == {"citations": ["other_source", "unexpected_source"],
                              "references": ["source_missed", "cited"]}
    assert case["matched"] == [[False, False], [True, False]]
    # Context recall and precision 1/2 through the Kahuku citation; no expected source cited.
    assert _headline(case) == [0.5, 0.5, 0.0, 0.0]
    labels = read_json(outcome.folder / "metrics.json")["labels"]
    assert labels["citation_other_source"] == 4
    assert [c["id"] for c in read_decisions(outcome.folder)
            if "other_source" in c["labels"]["citations"]] == OTHER_SOURCE_CASES
    # With require_same_source the boilerplate no longer credits it: nothing matches.
    (strict,) = run_job_in(*RUN, "scoring.require_same_source=true", out=tmp_path / "same")
    case = _case(strict.folder, CASE)
    assert case["labels"]["citations"] == ["unexpected_source", "unexpected_source"]
    assert _headline(case) == [0.0, 0.0, 0.0, 0.0]
    assert read_json(strict.folder / "metrics.json")["labels"]["citation_other_source"] == 0


@pytest.mark.slow
def test_the_report_flags_it_in_the_case_view(run_job_in: Callable[..., list[Any]],
                                              tmp_path: Path, open_page: Any) -> None:
    (outcome,) = run_job_in(*RUN, out=tmp_path / "run")
    path = render_run_report(outcome.folder, options={"embed": "json"})
    html = parse(path)
    # The diagnosis counts it: its own segment of the citations bar and a sentence.
    assert html.text(data_label="citation_other_source") == "4"
    assert ("; 4 (2%) match only a passage of another document (other_source: shared text "
            "such as boilerplate; scoring.require_same_source=true would not credit them);"
            ) in html.text(data_field="diagnosis")
    page, watch = open_page(path)
    page.select_option("#case-label", "c:other_source")
    rows = page.locator("#case-body tr.case-row")
    expect(rows).to_have_count(4)
    row = page.locator(f'tr.case-row[data-case-id="{CASE}"]')
    row.click()
    cit = page.locator('tr.detail [data-cit="0"]')
    # Its diagnosis chip (the quote's fidelity chip beside it carries data-fidelity).
    expect(cit.locator(".lab:not([data-fidelity])")).to_have_text("other_source")
    assert "Kahuku, Hawaii" in cit.inner_text()
    expect(cit.locator('[data-flag="other_source"]')).to_have_text(
        "Credited by another document's passage: every reference it matches belongs to another "
        "document, through text the passages share (such as boilerplate). With "
        "scoring.require_same_source=true it would match nothing.")
    assert "matches R2 (similarity 0.571)" in cit.inner_text()
    assert page.locator('tr.detail [data-cit="1"] [data-flag]').count() == 0
    # The Laie reference says which citation matched it, and that it is another document's.
    expect(page.locator('tr.detail [data-ref="1"] .link')).to_have_text(
        "matched by C1 (similarity 0.571, a citation of another document)")
    screenshot(page, "run-other-source")
    watch.assert_clean()

"""Every generated sentence is true of its own figures: the headline cards, the diagnosis and
the command line's summary line, on the demo (exact texts) and in Chromium."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from runner.pipeline import summary_line
from runner.reports.run import render_run_report
from runner.reports.sentences import UNDEFINED_TEXT, card_sentence, diagnosis, percent
from tests.conftest import read_json
from tests.reports.conftest import screenshot

# The demo with its default system under test (BM25, 3 citations of 2 sentences per answer,
# ngram at 0.5): 30 cases, 34 ground-truth passages, 87 citations. metrics.json counts:
# references 34, matched 25; citations 87, matched 25; expected sources 33, cited 67, hit 30
# (summed per case); labels: citations 25 supported, 23 wrong_passage, 39 unexpected_source;
# references 25 cited, 5 passage_missed, 4 source_missed.
DEMO_CARDS = {
    "context_recall": (
        "25 of 34 ground-truth passages (74%) are matched by a citation; 5 are missed although "
        "their document is cited and 4 belong to documents not cited. 0.806 is the mean of the "
        "per-case context recalls over 30 cases."),
    "context_precision": (
        "25 of 87 citations (29%) match a ground-truth passage; 23 cite an expected document "
        "but a passage that matches none and 39 cite a document that is not expected. 0.283 is "
        "the mean of the per-case context precisions over 30 cases."),
    "context_f1": (
        "0.408 is the mean of the per-case harmonic means of context recall and precision over "
        "30 cases. From the counts pooled over all cases it is 0.413."),
    "source_recall": (
        "30 of 33 expected documents (91%), counted per case, are cited; 3 are not. 0.933 is "
        "the mean of the per-case source recalls over 30 cases."),
    "source_precision": (
        "30 of 67 cited documents (45%), counted per case, are expected; 37 are not. 0.506 is "
        "the mean of the per-case source precisions over 30 cases."),
    "source_f1": (
        "0.613 is the mean of the per-case harmonic means of source recall and precision over "
        "30 cases. From the counts pooled over all cases it is 0.600."),
}
# mostly_right on the first two cases (rw-1, ec-1): each cites its one reference verbatim.
PERFECT_RECALL = ("2 of 2 ground-truth passages (100%) are matched by a citation; none is "
                  "missed. 1.000 is the mean of the per-case context recalls over 2 cases.")


@pytest.fixture
def demo_run(run_job_in: Callable[..., list[Any]], tmp_path: Path) -> Any:
    (outcome,) = run_job_in(out=tmp_path / "demo")
    return outcome


def test_demo_cards_are_true_of_their_counts(demo_run: Any) -> None:
    metrics = read_json(demo_run.folder / "metrics.json")
    assert metrics["counts"] == {
        "references": 34, "references_matched": 25, "citations": 87, "citations_matched": 25,
        "expected_sources": 33, "cited_sources": 67, "sources_hit": 30}
    # 25/34 = 0.735 pooled, while the card's value (the mean of per-case recalls) is 0.806.
    assert metrics["metrics"]["context_recall"] == pytest.approx(29 / 36, rel=1e-12)
    for key, text in DEMO_CARDS.items():
        assert card_sentence(key, metrics) == text, key
    assert metrics["diagnosis"] == "wrong_documents"
    assert diagnosis(metrics) == (
        "Main problem: wrong documents. 39 of 87 citations cite a document that is not "
        "expected, and 4 of 34 ground-truth passages belong to documents not cited (usually a "
        "retrieval problem).",
        "Of 87 citations, 25 (29%) quote a ground-truth passage of their own document; 23 (26%) "
        "cite an expected document but a passage that matches none; 39 (45%) cite a document "
        "that is not expected. Of 34 ground-truth passages, 25 (74%) are cited, 5 (15%) are "
        "missed although their document is cited and 4 (12%) belong to documents not cited.")
    # The extractive model quotes the knowledge base: no quote in no document, nothing said.
    assert summary_line(demo_run.result) == (
        "context R/P/F1 0.806/0.283/0.408  source R/P/F1 0.933/0.506/0.613  (means over 30 "
        "scored cases, 0 failed; 25 of 34 ground-truth passages matched; the system answered "
        "30 of the dataset's 30 cases)")


def test_edge_sentences() -> None:
    assert [percent(1, 3), percent(199, 200), percent(1, 201), percent(0, 5), percent(5, 5),
            percent(1, 0)] == ["33%", ">99%", "<1%", "0%", "100%", "n/a"]
    base = {"n_scored": 1, "micro": {}, "histograms": {
        key: {"defined": 1} for key in ("context_precision", "context_recall")}}
    one = {**base, "metrics": {"context_precision": 1.0}, "micro": {"context_precision": 1.0},
           "counts": {"citations": 1, "citations_matched": 1},
           "labels": {"citation_supported": 0, "citation_other_source": 1}}
    assert card_sentence("context_precision", one) == (
        "1 of 1 citation (100%) matches a ground-truth passage (1 of them only a passage of "
        "another document); none is spurious. 1.000 is the mean of the per-case context "
        "precisions over 1 case.")
    nothing = {**base, "metrics": {"context_recall": 1.0},
               "counts": {"references": 0, "references_matched": 0}}
    assert card_sentence("context_recall", nothing) == (
        "No scored case has a ground-truth passage: the value comes from the zero-division rule "
        "(scoring.zero_division). 1.000 is the mean of the per-case context recalls over 1 "
        "case.")
    assert card_sentence("source_f1", {**base, "metrics": {"source_f1": None}}) == UNDEFINED_TEXT
    # Without counts (an older or hand-made metrics.json): the value's meaning alone.
    assert card_sentence("source_recall", {"metrics": {"source_recall": 0.5}}) == (
        "0.500 is the mean of the per-case source recalls.")
    assert diagnosis({"diagnosis": "nothing"}) == (
        "Nothing to diagnose", "No citation or reference was scored.")
    assert diagnosis({}) == ("Not diagnosed", "These results were written without a diagnosis.")


@pytest.mark.slow
def test_cards_in_chromium_at_0_806_and_at_1(demo_run: Any, run_job_in: Callable[..., list[Any]],
                                            tmp_path: Path, open_page: Any) -> None:
    (perfect,) = run_job_in("model=precomputed", "model.system=mostly_right", "dataset.limit=2",
                            out=tmp_path / "perfect")
    for outcome, value, text, name in (
            (demo_run, "0.806", DEMO_CARDS["context_recall"], "card-0.806"),
            (perfect, "1.000", PERFECT_RECALL, "card-1.0")):
        page, watch = open_page(render_run_report(outcome.folder))
        card = page.locator('[data-card="context_recall"]')
        expect(card.locator('[data-stat="mean"]')).to_have_text(value)
        expect(card.locator('[data-sentence="context_recall"]')).to_have_text(text)
        expect(card.locator('[data-sentence="context_recall"]')).to_be_visible()
        # The seed's band texts stay as a folded legend of what 1.0, 0.5 and 0.0 mean.
        legend = card.locator("details.seed-legend")
        expect(legend.locator("dd").first).not_to_be_visible()
        legend.locator("summary").click()
        expect(legend.locator("dd").first).to_have_text(
            "All ground-truth passages are each matched by at least one response citation - the "
            "model correctly cited all expected supporting passages.")
        screenshot(page, name)
        watch.assert_clean()

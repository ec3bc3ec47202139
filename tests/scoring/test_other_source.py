"""Citations credited only by another document's passage: the `other_source` label.

Without `require_same_source` a citation matches any reference whose passage is similar enough,
whatever its document. When every reference a citation matches belongs to another document
(the passages share text, e.g. a boilerplate sentence), the citation is labelled
`other_source`, not `supported`: it still counts for context precision (the metric is
unchanged), but the diagnosis shows it apart.
"""

from __future__ import annotations

import pytest

import runner
from runner.matchers import NgramMatcher
from runner.scoring.case import ScoringOptions
from tests.helpers import score_batch
from tests.scoring.oracle import case_pairs, score_case

BOILER = "is a census-designated place located in the Koolauloa District on the island of Oahu"
LAIE = f"Laie {BOILER} in Honolulu County."
KAHUKU = f"Kahuku {BOILER}, County of Honolulu."
SONG = "The Hukilau Song is a song written by Jack Owens in 1948 after attending a luau."
OTHER_SONG = "The song was later recorded by many artists, among them Alfred Apaka."


def hand_case(**kwargs: object) -> runner.Case:
    return runner.Case(
        id="hand", query="Who wrote a song after attending a luau in the Koolauloa District?",
        references=[runner.Reference(source="Laie, Hawaii", content=LAIE),
                    runner.Reference(source="The Hukilau Song", content=SONG)],
        response=runner.Response(citations=[
            runner.Citation(source="Kahuku, Hawaii", content=KAHUKU),    # other_source
            runner.Citation(source="laie, hawaii", content=LAIE),        # supported
            runner.Citation(source="The Hukilau Song", content=OTHER_SONG),  # wrong_passage
            runner.Citation(source="Honolulu", content="Honolulu is the capital of Hawaii."),
        ]))


def test_the_similarities_behind_the_hand_case() -> None:
    # LAIE and KAHUKU have 19 tokens (17 trigrams) each; they share BOILER's 15 tokens, so
    # 13 trigrams: 13/17 = 0.76, above the default threshold 0.5.
    sims = NgramMatcher().similarities([(LAIE, KAHUKU), (SONG, OTHER_SONG), (LAIE, LAIE)])
    assert sims == [pytest.approx(13 / 17, rel=1e-12), 0.0, 1.0]


@pytest.mark.parametrize("scorer", ["batch", "case"])
def test_a_citation_matching_only_another_documents_passage(scorer: str) -> None:
    c = hand_case()
    options = ScoringOptions(threshold=0.5)
    if scorer == "batch":
        result = score_batch([(c, c.response)], NgramMatcher(), options)[0]
    else:
        pairs = case_pairs(c, c.response, options)
        result = score_case(c, c.response, dict(zip(pairs, NgramMatcher().similarities(pairs))),
                            options)
    assert result.matched == [[True, True, False, False], [False, False, False, False]]
    assert result.labels == {
        "citations": ["other_source", "supported", "wrong_passage", "unexpected_source"],
        "references": ["cited", "passage_missed"]}
    # Context: 1 of 2 references matched; 2 of 4 citations match (other_source counts).
    # Sources: expected {Laie, Hukilau Song}, cited {Kahuku, Laie, Hukilau Song, Honolulu}.
    assert [result.metrics[k] for k in ("context_recall", "context_precision",
                                        "source_recall", "source_precision")] == [
        0.5, 0.5, 1.0, 0.5]
    assert result.explanations["context_precision"] == (
        "Only the Kahuku, Hawaii and laie, hawaii citations match a ground-truth reference "
        "(2 of 4). The Kahuku, Hawaii citation matches only a passage of another document, "
        "and the The Hukilau Song citation uses a wrong passage, and Honolulu has no matching "
        "ground-truth reference.")


def test_label_counts_in_the_diagnosis() -> None:
    result = runner.evaluate([hand_case()])
    assert result.labels == {
        "citation_supported": 1, "citation_wrong_passage": 1, "citation_unexpected_source": 1,
        "citation_other_source": 1,
        "reference_cited": 1, "reference_passage_missed": 1, "reference_source_missed": 0}


def test_require_same_source_does_not_credit_it() -> None:
    result = runner.evaluate([hand_case()], require_same_source=True)
    case = result.cases[0]
    # Kahuku is not expected: its citation is now an unexpected source, matching nothing.
    assert case.labels["citations"] == ["unexpected_source", "supported", "wrong_passage",
                                        "unexpected_source"]
    assert case.metrics["context_precision"] == 0.25
    assert result.labels["citation_other_source"] == 0

"""Scoring one case: the match predicate, labels, explanations and bands (SPEC 4.1, 5, 6)."""

from __future__ import annotations

from typing import Any

import pytest

from runner.data.models import Case, Citation, Reference
from runner.matchers import Matcher, NgramMatcher, PairError, SubstringMatcher
from runner.results import CaseResult
from runner.scoring.bands import DEFAULT_BANDS, band
from runner.scoring.case import ScoringOptions, error_case
from runner.scoring.metrics import METRIC_KEYS, METRICS
from runner.scoring.records import explain_record
from tests.helpers import (
    REMOTE_REQUEST,
    VPN,
    TableMatcher,
    case,
    seed_example_1,
    seed_example_2,
    seed_example_3,
)
from tests.scoring.oracle import (
    Rule,
    case_pairs,
    citation_labels,
    decide_rule,
    needed_pairs,
    reference_labels,
    score_case,
)

MATCHERS = [NgramMatcher(), SubstringMatcher()]
MATCHER_IDS = ["ngram", "substring"]


def score(c: Case, matcher: Matcher | None = None, **options: Any) -> CaseResult:
    """Score a case the way `evaluate` does: similarities of the needed pairs, then decide."""
    m = matcher if matcher is not None else NgramMatcher()
    options.setdefault("threshold", m.levels["default"])
    opts = ScoringOptions(**options)
    pairs = case_pairs(c, c.response, opts)
    sims = dict(zip(pairs, m.similarities(pairs))) if pairs else {}
    return score_case(c, c.response, sims, opts)


def metric_tuple(result: CaseResult) -> tuple[float | None, ...]:
    return tuple(result.metrics[k] for k in METRIC_KEYS)


# --- the predicate (SPEC 4.1) ---------------------------------------------------------------


def test_decide_rule_order() -> None:
    empty_ref, ref = Reference(source="A", content=" "), Reference(source="A", content="x")
    cit, empty_cit = Citation(source="B", content="x"), Citation(source="B", content="\n")
    # 1. A blank reference decides first, even when sources differ under require_same_source.
    assert decide_rule(empty_ref, cit, "a", "b", True) is Rule.EMPTY_REFERENCE
    # 2. Different sources under require_same_source, even with a blank citation.
    assert decide_rule(ref, empty_cit, "a", "b", True) is Rule.DIFFERENT_SOURCE
    # 3. A blank citation.
    assert decide_rule(ref, empty_cit, "a", "b", False) is Rule.EMPTY_CITATION
    # 4. Otherwise the matcher decides.
    assert decide_rule(ref, cit, "a", "b", False) is Rule.SIMILARITY
    assert decide_rule(ref, cit, "a", "a", True) is Rule.SIMILARITY


def test_needed_pairs_skips_pairs_the_predicate_decides_alone() -> None:
    refs = [Reference(source="A", content=""), Reference(source="A", content="alpha"),
            Reference(source="B", content="beta")]
    cits = [Citation(source="A", content="alpha"), Citation(source="B", content=""),
            Citation(source="B", content="beta")]
    # Empty reference: no pair; empty citation: no pair. 2 refs x 2 cits remain = 4 pairs.
    assert list(needed_pairs(refs, cits, str.lower, False)) == [
        ("alpha", "alpha"), ("alpha", "beta"), ("beta", "alpha"), ("beta", "beta")]
    # require_same_source keeps only same-source pairs: (A alpha, A alpha), (B beta, B beta).
    assert list(needed_pairs(refs, cits, str.lower, True)) == [
        ("alpha", "alpha"), ("beta", "beta")]


def test_case_pairs_of_a_failed_or_missing_response() -> None:
    opts = ScoringOptions()
    failed = case([("A", "x")], [("A", "x")], error="timeout")
    assert case_pairs(failed, failed.response, opts) == []
    assert case_pairs(failed, None, opts) == []


@pytest.mark.parametrize("matcher", MATCHERS, ids=MATCHER_IDS)
def test_empty_reference_matched_only_by_same_source(matcher: Matcher) -> None:
    # Reference A has no content. Citation 0 is of A (matches, whatever its passage); citation 1
    # is of B with a passage that could not match anything -> not matched.
    c = case([("A.pdf", "")], [("a.pdf ", "completely unrelated words here"),
                               ("B.pdf", "completely unrelated words here")])
    r = score(c, matcher)
    assert r.matched == [[True, False]]
    assert r.similarity == [[None, None]]  # decided without the matcher
    # recall 1/1; precision 1/2 (the A citation matches, the B one does not).
    assert (r.metrics["context_recall"], r.metrics["context_precision"]) == (1.0, 0.5)
    # source: expected {a.pdf}, cited {a.pdf, b.pdf} -> recall 1/1, precision 1/2.
    assert (r.metrics["source_recall"], r.metrics["source_precision"]) == (1.0, 0.5)


def test_empty_reference_not_matched_by_other_source() -> None:
    c = case([("A.pdf", "")], [("B.pdf", "")])
    r = score(c)
    assert r.matched == [[False]]
    # 0 of 1 reference, 0 of 1 citation.
    assert (r.metrics["context_recall"], r.metrics["context_precision"]) == (0.0, 0.0)


def test_empty_citation_never_matches_a_nonempty_reference() -> None:
    m = TableMatcher(default=1.0)
    c = case([("A", "some text")], [("A", ""), ("A", "   ")])
    r = score(c, m)
    assert r.matched == [[False, False]]
    assert m.calls == []  # no similarity was asked for


@pytest.mark.parametrize("matcher", MATCHERS, ids=MATCHER_IDS)
def test_require_same_source(matcher: Matcher) -> None:
    # Citation 0 quotes the reference exactly but names another document.
    c = case([("A.pdf", VPN)], [("B.pdf", VPN), ("A.pdf", REMOTE_REQUEST)])
    loose = score(c, matcher)
    strict = score(c, matcher, require_same_source=True)
    assert loose.matched == [[True, False]]
    assert strict.matched == [[False, False]]
    assert strict.similarity == [[None, 0.0]]  # the B pair is never compared
    # loose: recall 1/1, precision 1/2; strict: 0/1 and 0/2.
    assert (loose.metrics["context_recall"], loose.metrics["context_precision"]) == (1.0, 0.5)
    assert (strict.metrics["context_recall"], strict.metrics["context_precision"]) == (0.0, 0.0)


def test_require_same_source_compares_normalised_sources() -> None:
    c = case([("A.pdf", VPN)], [(" a.PDF", VPN)])
    r = score(c, require_same_source=True)
    assert r.matched == [[True]]


def test_similarity_equal_to_threshold_matches() -> None:
    # Table similarities exactly at, and just below, the threshold 0.5.
    m = TableMatcher(table={("r", "at"): 0.5, ("r", "below"): 0.4999999})
    c = case([("A", "r")], [("A", "at"), ("A", "below")])
    r = score(c, m, threshold=0.5)
    assert r.similarity == [[0.5, 0.4999999]]
    assert r.matched == [[True, False]]  # >=, not >


def test_ngram_similarity_equal_to_threshold_matches() -> None:
    # Multiset overlap 2/4 = 0.5 (see test_ngram): matches at 0.5, not at 0.51.
    c = case([("A", "a b c a b c")], [("A", "a b c x a b c")])
    assert score(c, NgramMatcher(), threshold=0.5).matched == [[True]]
    assert score(c, NgramMatcher(), threshold=0.51).matched == [[False]]
    # 1/3 computed the same way as the threshold 1/3 -> equal -> a match.
    c = case([("A", "x a b c y")], [("A", "a b c a b c")])
    assert score(c, NgramMatcher(), threshold=1 / 3).similarity == [[1 / 3]]
    assert score(c, NgramMatcher(), threshold=1 / 3).matched == [[True]]


def test_a_matcher_carries_no_threshold() -> None:
    # The threshold is a setting of scoring; a matcher only says what each level means.
    c = case([("A", "r")], [("A", "c")])
    r = score_case(c, c.response, {("r", "c"): 0.6}, ScoringOptions(threshold=0.5))
    assert r.matched == [[True]]  # 0.6 >= 0.5
    assert not hasattr(TableMatcher(), "threshold")
    assert TableMatcher.levels == {"strict": 0.75, "default": 0.5, "lenient": 0.3}


# --- counting ----------------------------------------------------------------------------------


def test_duplicate_citations_count_twice_in_precision() -> None:
    # The same matching passage cited twice plus one wrong passage: precision 2/3; the source
    # is counted once: cited {a} -> source precision 1/1.
    c = case([("A", VPN), ("A", REMOTE_REQUEST)],
             [("A", VPN), ("A", VPN), ("A", "nothing like it at all")])
    r = score(c)
    assert r.metrics["context_precision"] == 2 / 3
    assert r.metrics["context_recall"] == 1 / 2  # VPN matched, REMOTE_REQUEST not
    assert (r.metrics["source_recall"], r.metrics["source_precision"]) == (1.0, 1.0)
    assert r.counts == {"references": 2, "references_matched": 1, "citations": 3,
                        "citations_matched": 2, "expected_sources": 1, "cited_sources": 1,
                        "sources_hit": 1}
    assert r.citation_labels == ["supported", "supported", "wrong_passage"]


def test_one_citation_matching_two_references() -> None:
    # A long citation contains both references (substring: reference inside citation).
    c = case([("A", "alpha beta"), ("A", "gamma delta")], [("A", "alpha beta and gamma delta")])
    r = score(c, SubstringMatcher())
    assert r.matched == [[True], [True]]
    # 2 of 2 references, 1 of 1 citation.
    assert (r.metrics["context_recall"], r.metrics["context_precision"]) == (1.0, 1.0)


@pytest.mark.parametrize(("policy", "expected"), [
    # No references, no citations, nothing expected: every denominator is empty.
    ("auto", (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)),
    ("nan", (None, None, None, None, None, None)),
    ("zero", (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
    ("one", (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)),
])
def test_no_references_and_no_citations(policy: str, expected: tuple[float | None, ...]) -> None:
    r = score(case([], []), zero_division=policy)
    assert metric_tuple(r) == expected


@pytest.mark.parametrize(("policy", "expected"), [
    # 1 reference of A, no citation: recall 0/1; precision empty, with something expected.
    ("auto", (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
    ("nan", (0.0, None, None, 0.0, None, None)),
    ("zero", (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
    ("one", (0.0, 1.0, 0.0, 0.0, 1.0, 0.0)),  # F1 = 2*1*0/(1+0) = 0
])
def test_no_citations(policy: str, expected: tuple[float | None, ...]) -> None:
    r = score(case([("A", "text")], []), zero_division=policy)
    assert metric_tuple(r) == expected


@pytest.mark.parametrize(("policy", "expected"), [
    # No references (nothing expected), 1 citation: precision 0/1; recall empty.
    ("auto", (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)),
    ("nan", (None, 0.0, None, None, 0.0, None)),
    ("zero", (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
    ("one", (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)),
])
def test_no_references(policy: str, expected: tuple[float | None, ...]) -> None:
    r = score(case([], [("A", "text")]), zero_division=policy)
    assert metric_tuple(r) == expected


def test_expected_sources_differ_from_reference_sources() -> None:
    # Expected sources are given explicitly: {A, C}; the reference is from A only.
    c = case([("A", VPN)], [("A", VPN), ("C", "x y z")], expected=["A", "C"])
    r = score(c)
    # Source: cited {a, c} = expected -> 2/2 both; context precision 1/2 (C passage unmatched).
    assert (r.metrics["source_recall"], r.metrics["source_precision"]) == (1.0, 1.0)
    assert r.metrics["context_precision"] == 0.5
    # C is expected, so its unmatched citation is a wrong passage, not an unexpected source.
    assert r.citation_labels == ["supported", "wrong_passage"]


# --- the seed's worked examples (SPEC 5) -----------------------------------------------------


@pytest.mark.parametrize("matcher", MATCHERS, ids=MATCHER_IDS)
def test_seed_example_1(matcher: Matcher) -> None:
    r = score(seed_example_1(), matcher)
    # 1 of 1 reference, 1 of 1 citation | 1 of 1 expected source, 1 of 1 cited source.
    assert metric_tuple(r) == (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    assert r.citation_labels == ["supported"]
    assert r.reference_labels == ["cited"]
    assert r.bands == dict.fromkeys(METRIC_KEYS, "green")
    assert r.explanations == {
        "context_recall": "The only ground-truth passage, from Remote Work Policy.pdf, is "
                          "matched by a response citation — all expected evidence passages "
                          "are cited.",
        "context_precision": "The only response citation matches a ground-truth reference — "
                             "there are no spurious citations.",
        "context": "Both context recall and precision are perfect.",
        "source_recall": "Remote Work Policy.pdf, the only expected source, appears in the "
                         "response citations.",
        "source_precision": "The only cited document, Remote Work Policy.pdf, is among the "
                            "expected sources.",
        "source": "Both source recall and precision are perfect.",
    }


@pytest.mark.parametrize("matcher", MATCHERS, ids=MATCHER_IDS)
def test_seed_example_2(matcher: Matcher) -> None:
    r = score(seed_example_2(), matcher)
    # 0 of 1 reference, 0 of 1 citation (F1: P+R=0 -> 0) | 1 of 1 and 1 of 1 source.
    assert metric_tuple(r) == (0.0, 0.0, 0.0, 1.0, 1.0, 1.0)
    assert r.similarity == [[0.0]]
    assert r.citation_labels == ["wrong_passage"]
    assert r.reference_labels == ["passage_missed"]
    assert r.bands == {"context_recall": "red", "context_precision": "red", "context_f1": "red",
                       "source_recall": "green", "source_precision": "green",
                       "source_f1": "green"}
    assert r.explanations == {
        "context_recall": "The only ground-truth passage, from Employment Contract.pdf, is not "
                          "matched by any response citation. The Employment Contract.pdf "
                          "citation uses a wrong passage.",
        "context_precision": "The only response citation, from Employment Contract.pdf, does "
                             "not match any ground-truth reference. The Employment Contract.pdf "
                             "citation uses a wrong passage.",
        "context": "Both context recall and precision are zero.",
        "source_recall": "Employment Contract.pdf, the only expected source, appears in the "
                         "response citations.",
        "source_precision": "The only cited document, Employment Contract.pdf, is among the "
                            "expected sources.",
        "source": "Both source recall and precision are perfect.",
    }


@pytest.mark.parametrize("matcher", MATCHERS, ids=MATCHER_IDS)
def test_seed_example_3(matcher: Matcher) -> None:
    r = score(seed_example_3(), matcher)
    # Context: 1 of 3 references, 1 of 3 citations -> 1/3, 1/3, F1 1/3.
    # Source: expected {DS, RW, AU}, cited {DS, RW, IT} -> 2/3, 2/3, F1 2/3.
    assert r.metrics["context_recall"] == 1 / 3
    assert r.metrics["context_precision"] == 1 / 3
    assert r.metrics["context_f1"] == pytest.approx(1 / 3, rel=1e-15)
    assert r.metrics["source_recall"] == 2 / 3
    assert r.metrics["source_precision"] == 2 / 3
    assert r.metrics["source_f1"] == pytest.approx(2 / 3, rel=1e-15)
    # Only the diagonal VPN pair matches.
    assert r.matched == [[True, False, False], [False, False, False], [False, False, False]]
    assert r.similarity[0][0] == 1.0
    assert r.citation_labels == ["supported", "wrong_passage", "unexpected_source"]
    assert r.reference_labels == ["cited", "passage_missed", "source_missed"]
    assert r.counts == {"references": 3, "references_matched": 1, "citations": 3,
                        "citations_matched": 1, "expected_sources": 3, "cited_sources": 3,
                        "sources_hit": 2}
    # 1/3 >= 0.25 and 2/3 < 0.75: every figure is in the medium band.
    assert r.bands == dict.fromkeys(METRIC_KEYS, "medium")
    assert r.explanations == {
        # The seed's own sentences, word for word.
        "context_recall": "Only the Data Security Policy.pdf passage matches its ground-truth "
                          "reference (1 of 3). The Remote Work Policy.pdf citation uses a wrong "
                          "passage, and Acceptable Use Policy.pdf is not cited at all.",
        "context_precision": "Only the Data Security Policy.pdf citation matches a ground-truth "
                             "reference (1 of 3). The Remote Work Policy.pdf citation uses a "
                             "wrong passage, and IT Compliance Handbook.pdf has no matching "
                             "ground-truth reference.",
        "context": "Context recall and precision are equal at 0.33.",
        "source_recall": "Data Security Policy.pdf and Remote Work Policy.pdf are cited, but "
                         "Acceptable Use Policy.pdf is not (2 of 3 expected sources).",
        "source_precision": "Data Security Policy.pdf and Remote Work Policy.pdf are expected "
                            "sources, but IT Compliance Handbook.pdf is not (2 of 3 cited "
                            "sources are expected).",
        "source": "Source recall and precision are equal at 0.67.",
    }


# --- labels ------------------------------------------------------------------------------------


def test_citation_labels() -> None:
    assert citation_labels([True, False, False, True], ["a", "a", "z", "z"], {"a"}) == [
        "supported",  # matched
        "wrong_passage",  # unmatched, source expected
        "unexpected_source",  # unmatched, source not expected
        "supported",  # matched wins even from an unexpected source
    ]


def test_reference_labels() -> None:
    assert reference_labels([True, False, False], ["a", "a", "b"], {"a"}) == [
        "cited", "passage_missed", "source_missed"]


# --- explanations --------------------------------------------------------------------------


def test_explanations_single_unexpected_citation_and_missed_source() -> None:
    r = score(case([("A.pdf", VPN)], [("B.pdf", REMOTE_REQUEST)]))
    assert r.citation_labels == ["unexpected_source"]
    assert r.reference_labels == ["source_missed"]
    assert r.explanations == {
        "context_recall": "The only ground-truth passage, from A.pdf, is not matched by any "
                          "response citation. A.pdf is not cited at all.",
        "context_precision": "The only response citation, from B.pdf, does not match any "
                             "ground-truth reference. B.pdf is not an expected source.",
        "context": "Both context recall and precision are zero.",
        "source_recall": "None of the expected sources (A.pdf) is cited.",
        "source_precision": "None of the cited documents (B.pdf) is among the expected sources.",
        "source": "Both source recall and precision are zero.",
    }


def test_explanations_are_written_on_first_read_and_kept() -> None:
    r = score(case([("A.pdf", VPN)], [("B.pdf", REMOTE_REQUEST)]))
    assert vars(r)["_explanations"] is None  # scoring alone builds no sentence
    first = r.explanations
    assert first["source_recall"] == "None of the expected sources (A.pdf) is cited."
    assert r.explanations is first  # built once
    # Read back, the record equals the scored case, and its explanations are made from it.
    back = CaseResult.from_dict(r.to_dict())
    assert type(back) is CaseResult and back == r
    assert explain_record({**back.to_dict(), "labels": back.labels}, r.normalizer) == first
    # A field that differs breaks the equality, whichever side is the scored case.
    back.citation_labels = ["supported"]
    assert back != r and r != back


def test_explanations_several_none_matched() -> None:
    r = score(case([("A.pdf", VPN), ("B.pdf", VPN)],
                   [("A.pdf", REMOTE_REQUEST), ("C.pdf", REMOTE_REQUEST)]))
    assert r.explanations["context_recall"] == (
        "None of the 2 ground-truth passages are matched by a response citation. The A.pdf "
        "citation uses a wrong passage, and B.pdf is not cited at all.")
    assert r.explanations["context_precision"] == (
        "None of the 2 response citations match a ground-truth reference. The A.pdf citation "
        "uses a wrong passage, and C.pdf has no matching ground-truth reference.")
    # Sources: expected {A, B}, cited {A, C} -> 1/2 each.
    assert r.explanations["source_recall"] == (
        "A.pdf is cited, but B.pdf is not (1 of 2 expected sources).")
    assert r.explanations["source_precision"] == (
        "A.pdf is an expected source, but C.pdf is not (1 of 2 cited sources are expected).")
    assert r.explanations["source"] == "Source recall and precision are equal at 0.50."


def test_explanations_keep_a_source_name_as_written_at_a_sentence_start() -> None:
    r = score(case([("a.pdf", VPN), ("b.pdf", REMOTE_REQUEST)], [("a.pdf", VPN)]))
    assert r.explanations["context_recall"] == (
        "Only the a.pdf passage matches its ground-truth reference (1 of 2). b.pdf is not cited "
        "at all.")


def test_explanations_plural_matches() -> None:
    # 3 references (A, B, C), citations match A and B: 2 of 3; C's source is not cited.
    r = score(case([("A.pdf", VPN), ("B.pdf", REMOTE_REQUEST), ("C.pdf", "gamma delta eps")],
                   [("A.pdf", VPN), ("B.pdf", REMOTE_REQUEST)]))
    assert r.explanations["context_recall"] == (
        "Only the A.pdf and B.pdf passages match their ground-truth references (2 of 3). "
        "C.pdf is not cited at all.")
    assert r.explanations["context_precision"] == (
        "All 2 response citations match ground-truth references — there are no spurious "
        "citations.")
    # recall 2/3, precision 1 -> unequal summary.
    assert r.explanations["context"] == "Context recall is 0.67 and context precision is 1.00."
    assert r.explanations["source_precision"] == (
        "All 2 cited documents (A.pdf and B.pdf) are among the expected sources.")


def test_explanations_second_passage_of_a_cited_source() -> None:
    # Two A.pdf references; the one A.pdf citation matches the first. The second is
    # `passage_missed`, but no citation used a wrong passage: it is simply not cited.
    r = score(case([("A.pdf", VPN), ("A.pdf", REMOTE_REQUEST)], [("A.pdf", VPN)]))
    assert r.reference_labels == ["cited", "passage_missed"]
    assert r.citation_labels == ["supported"]
    assert r.explanations["context_recall"] == (
        "Only the A.pdf passage matches its ground-truth reference (1 of 2). The other A.pdf "
        "passage is not cited.")
    # With a wrong-passage A.pdf citation as well, that citation is blamed instead.
    r = score(case([("A.pdf", VPN), ("A.pdf", REMOTE_REQUEST)],
                   [("A.pdf", VPN), ("A.pdf", "unrelated words only")]))
    assert r.citation_labels == ["supported", "wrong_passage"]
    assert r.explanations["context_recall"] == (
        "Only the A.pdf passage matches its ground-truth reference (1 of 2). The A.pdf citation "
        "uses a wrong passage.")


def test_explanations_all_matched_several() -> None:
    r = score(case([("A.pdf", VPN), ("B.pdf", REMOTE_REQUEST)],
                   [("B.pdf", REMOTE_REQUEST), ("A.pdf", VPN)]))
    assert r.explanations["context_recall"] == (
        "All 2 ground-truth passages (A.pdf and B.pdf) are matched by response citations — all "
        "expected evidence passages are cited.")
    assert r.explanations["source_recall"] == (
        "All 2 expected sources (A.pdf and B.pdf) appear in the response citations.")


@pytest.mark.parametrize(("policy", "shown"), [("auto", "1.00"), ("nan", "undefined"),
                                               ("zero", "0.00")])
def test_explanations_zero_division(policy: str, shown: str) -> None:
    r = score(case([], []), zero_division=policy)
    assert r.explanations["context_recall"] == (
        f"There are no ground-truth passages, so context recall is {shown} by the "
        "zero-division rule.")
    assert r.explanations["context_precision"] == (
        f"The response cites nothing, so context precision is {shown} by the zero-division "
        "rule.")
    assert r.explanations["source_recall"] == (
        f"No source documents are expected, so source recall is {shown} by the zero-division "
        "rule.")
    assert r.explanations["source_precision"] == (
        f"The response cites no source documents, so source precision is {shown} by the "
        "zero-division rule.")


def test_explanations_summary_undefined() -> None:
    r = score(case([], []), zero_division="nan")
    assert r.explanations["context"] == (
        "Context recall is undefined and context precision is undefined.")


def test_explanations_use_first_spelling_of_a_source() -> None:
    # The citation spells the source differently; it is displayed as cited.
    r = score(case([("Policy.pdf", VPN)], [("POLICY.PDF", VPN)]))
    assert r.explanations["source_precision"] == (
        "The only cited document, POLICY.PDF, is among the expected sources.")
    assert r.explanations["source_recall"] == (
        "Policy.pdf, the only expected source, appears in the response citations.")


# --- bands -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (1.0, "green"), (0.75, "green"),  # >= 0.75
    (0.7499, "medium"), (0.5, "medium"), (0.25, "medium"),  # >= 0.25
    (0.2499, "red"), (0.0, "red"),
    (None, None),
])
def test_band_default(value: float | None, expected: str | None) -> None:
    assert DEFAULT_BANDS == {"green": 0.75, "medium": 0.25}
    assert band(value) == expected


def test_band_custom() -> None:
    bands = {"green": 0.9, "medium": 0.5}
    assert [band(v, bands) for v in (0.9, 0.75, 0.5, 0.49)] == ["green", "medium", "medium", "red"]


def test_custom_bands_in_scoring() -> None:
    # Seed example 3 has 1/3 and 2/3: with medium >= 0.5, 1/3 is red and 2/3 medium.
    r = score(seed_example_3(), bands={"green": 0.9, "medium": 0.5})
    assert r.bands["context_recall"] == "red"
    assert r.bands["source_recall"] == "medium"


def test_band_texts_are_the_seeds() -> None:
    text = {k: dict(zip(("green", "medium", "red"), METRICS[k].band_text)) for k in METRIC_KEYS}
    assert all(len(METRICS[k].band_text) == 3 for k in METRIC_KEYS)
    assert text["context_recall"]["green"] == (
        "All ground-truth passages are each matched by at least one response citation - the "
        "model correctly cited all expected supporting passages.")
    assert text["source_precision"]["red"] == (
        "The cited source documents are not among the expected sources - these citations refer "
        "to unexpected or irrelevant source documents.")
    assert text["context_precision"]["medium"] == (
        "Half of the response citations' passages match a ground-truth reference - some "
        "citations are correct while others are spurious or refer to an unexpected passage.")


def test_undefined_metric_has_no_band() -> None:
    r = score(case([], []), zero_division="nan")
    assert r.bands == dict.fromkeys(METRIC_KEYS)


# --- errors ------------------------------------------------------------------------------------


def test_failed_response_is_an_error_case() -> None:
    c = case([("A", VPN)], [("A", VPN)], error="HTTP 500 after 3 retries")
    r = score(c)
    assert r.error == "HTTP 500 after 3 retries"
    assert r.metrics == dict.fromkeys(METRIC_KEYS)
    assert r.bands == dict.fromkeys(METRIC_KEYS)
    assert (r.similarity, r.matched, r.citation_labels, r.reference_labels) == ([], [], [], [])
    assert (r.counts, explain_record(r.to_dict(), str)) == ({}, {})  # nothing to explain
    assert r.response is not None
    assert r.response["error"] == "HTTP 500 after 3 retries"


def test_missing_response_is_an_error_case() -> None:
    c = case([("A", VPN)], None)
    r = score_case(c, None, {}, ScoringOptions())
    assert r.error == "no response for this case"
    assert r.response is None
    assert r.metrics == dict.fromkeys(METRIC_KEYS)


def test_pair_error_makes_an_error_case() -> None:
    m = TableMatcher(table={(VPN, "bad pair"): PairError("API down")}, default=1.0)
    c = case([("A", VPN)], [("A", VPN), ("A", "bad pair")])
    r = score(c, m)
    # The failure is on reference 0 / citation 1; it is not counted as a non-match.
    assert r.error == "matcher failed on reference 0 / citation 1: API down"
    assert r.metrics == dict.fromkeys(METRIC_KEYS)


def test_error_case_keeps_the_inputs() -> None:
    c = case([("A", "x")], [("B", "y")], id="e1", metadata={"topic": "hr"})
    assert c.response is not None
    r = error_case(c, c.response, "boom")
    assert (r.id, r.query, r.error) == ("e1", "q", "boom")
    assert r.references == [{"source": "A", "content": "x"}]
    assert r.expected_sources == ["A"]
    assert r.metadata == {"topic": "hr"}
    # What passages.parquet stores of a response: a citation's claim (empty here) and the
    # dangling count (0) too (docs/results.md).
    assert r.response == {"answer": "", "citations": [{"source": "B", "content": "y",
                                                       "claim": ""}],
                          "usage": None, "latency_s": None, "error": None, "dangling": 0}


def test_scored_case_carries_inputs_and_metadata() -> None:
    c = case([("A", VPN)], [("A", VPN)], id="k", metadata={"lang": "en"})
    r = score(c)
    assert (r.id, r.query, r.metadata, r.error) == ("k", "q", {"lang": "en"}, None)
    assert r.references == [{"source": "A", "content": VPN}]
    assert r.labels == {"citations": ["supported"], "references": ["cited"]}


def test_unknown_normalisation_step_in_options() -> None:
    with pytest.raises(ValueError, match="unknown step"):
        ScoringOptions(source_normalization=("nope",))

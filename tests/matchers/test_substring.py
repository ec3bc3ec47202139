"""The `substring` matcher (SPEC 4.2): containment after normalisation, 1.0 or 0.0."""

from __future__ import annotations

import pytest

from runner.matchers import Matcher, SubstringMatcher
from tests.helpers import REMOTE_REQUEST

REF = "The cat sat on the mat. Then it slept."


def sim(ref: str, cit: str, **kw: object) -> float:
    (value,) = SubstringMatcher(**kw).similarities([(ref, cit)])  # type: ignore[arg-type]
    assert isinstance(value, float)
    return value


@pytest.mark.parametrize(("cit", "expected"), [
    (REF, 1.0),  # identical
    ("cat sat on the mat", 1.0),  # citation inside the reference
    ("the dog sat", 0.0),  # not contained
    ("cat sat … it slept", 1.0),  # every ellipsis part is in the reference
    ("cat sat ... it slept", 1.0),  # three-dot marker
    ("cat sat .... it slept", 1.0),  # four-dot marker
    ("cat sat … it barked", 0.0),  # one part missing -> no match
    ("…cat sat…", 1.0),  # leading/trailing markers leave one part
    ("slept. Then it", 0.0),  # all words occur, but not as this one stretch of text
])
def test_citation_parts_inside_reference(cit: str, expected: float) -> None:
    assert sim(REF, cit) == expected


def test_ellipsis_parts_may_come_in_any_order() -> None:
    # Each part only has to occur somewhere in the reference.
    assert sim(REF, "it slept … the cat") == 1.0


def test_whole_reference_inside_citation() -> None:
    # The reference is a sub-passage of a longer citation: a match.
    assert sim("on the mat", "The cat sat on the mat. Then it slept.") == 1.0
    # The rule applies to the whole reference only: half of it is not enough.
    assert sim("on the mat and the rug", "The cat sat on the mat.") == 0.0


def test_whole_reference_inside_citation_with_ellipsis_in_citation() -> None:
    # The citation's parts ("x", "the cat sat on the mat") are not all in the reference, but the
    # whole reference occurs in the (unsplit) citation.
    assert sim("the cat sat", "x … the cat sat on the mat") == 1.0


def test_normalisation_case_whitespace_nfkc() -> None:
    assert sim("The  Cat\nsat", "the cat SAT") == 1.0  # case and whitespace
    assert sim("Five (５) days", "five (5) DAYS") == 1.0  # full-width digit via NFKC
    assert sim("Straße", "STRASSE") == 1.0  # casefold ß -> ss
    assert sim("Cafe\u0301 crème", "CAFÉ") == 1.0  # decomposed é composed by NFKC


def test_accents_are_not_stripped() -> None:
    assert sim("Café", "cafe") == 0.0


def test_cjk() -> None:
    assert sim("東京タワーは高い", "タワー") == 1.0
    assert sim("東京タワーは高い", "大阪") == 0.0


@pytest.mark.parametrize("citation", [
    "ver\u200bbatim quote",  # zero-width space
    "verbatim\u2060 quote\ufeff",  # word joiner, byte order mark
    "ver\u00adba\u200ctim\u200d quote",  # soft hyphen, zero-width non-joiner and joiner
    "the [...] quote", "the […] quote", "the . . . quote", "the [\u2026] quote",  # ellipses
])
def test_invisible_characters_and_ellipsis_forms(citation: str) -> None:
    assert sim("The verbatim quote", citation) == 1.0


def test_near_ellipses_and_visible_characters_still_count() -> None:
    assert sim("The verbatim quote", "the [..] quote") == 0.0  # two dots: not an ellipsis
    assert sim("The verbatim quote", "the . . quote") == 0.0
    assert sim("The verbatim quote", "verb-atim") == 0.0  # a visible hyphen stays


def test_normalize_false_compares_raw_text() -> None:
    assert sim("The Cat", "the cat", normalize=False) == 0.0
    assert sim("The Cat sat", "Cat", normalize=False) == 1.0
    # Ellipsis splitting still applies without normalisation.
    assert sim("The Cat sat", "The … sat", normalize=False) == 1.0


def test_blank_parts_never_match_but_reference_inside_still_can() -> None:
    # A citation made only of markers has no parts: no part-rule match, and "abc" is not in "...".
    assert sim("abc", "...") == 0.0


def test_seed_example_passages() -> None:
    assert sim(REMOTE_REQUEST, REMOTE_REQUEST) == 1.0
    # A truncated quote with an ellipsis in the middle still matches.
    assert sim(REMOTE_REQUEST, "Employees shall submit … five (5) business days") == 1.0


def test_batch_preserves_order_and_length() -> None:
    m = SubstringMatcher()
    pairs = [("a b", "a"), ("a b", "c"), ("a b", "a"), ("x", "y x z")]
    # a in "a b" -> 1; c not -> 0; repeated pair -> 1; reference x inside citation -> 1.
    assert m.similarities(pairs) == [1.0, 0.0, 1.0, 1.0]
    assert m.similarities([]) == []


def test_defaults_and_identity() -> None:
    m = SubstringMatcher()
    assert isinstance(m, Matcher)
    # Binary similarity: every level is 1.0, and a matcher has no threshold of its own.
    assert m.levels == {"strict": 1.0, "default": 1.0, "lenient": 1.0}
    assert not hasattr(m, "threshold")
    assert m.identity() == {"class": "runner.matchers.substring.SubstringMatcher",
                            "normalize": True}

"""The optimised `substring` matcher equals a plain reference implementation of SPEC 4.2."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.matchers import SubstringMatcher
from runner.matchers.text import fold
from tests.matchers.test_ngram_reference import _SEPS, _WORDS, _synthetic_pairs

_ELLIPSIS = re.compile(r"\[(?:…|\.{3})\]|…|\.{3,}|\.(?: \.){2,}")


def reference_fold(text: str) -> str:
    """Invisible characters removed, NFKC, case fold, whitespace collapsed and stripped."""
    visible = re.sub("[\u200b\u200c\u200d\u2060\u00ad\ufeff]", "", text)
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", visible).casefold()).strip()


def reference_similarity(ref: str, cit: str, normalize: bool = True) -> float:
    r, c = (reference_fold(ref), reference_fold(cit)) if normalize else (ref, cit)
    parts = [p.strip() for p in _ELLIPSIS.split(c) if p.strip()]
    ok = (bool(parts) and all(p in r for p in parts)) or (bool(r) and r in c)
    return 1.0 if ok else 0.0


_text = st.one_of(
    st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPS)), max_size=10).map(
        lambda items: "".join(w + s for w, s in items)
    ),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=40),
    st.text(max_size=30),
)


@pytest.mark.parametrize("normalize", [True, False])
def test_synthetic_data_matches_the_reference(normalize: bool) -> None:
    pairs = _synthetic_pairs(400, seed=11)
    got = SubstringMatcher(normalize=normalize).similarities(pairs)
    assert got == [reference_similarity(r, c, normalize) for r, c in pairs]
    assert 0.0 in got and 1.0 in got


@settings(max_examples=400, deadline=None)
@given(ref=_text, cit=_text, normalize=st.booleans())
def test_generated_text_matches_the_reference(ref: str, cit: str, normalize: bool) -> None:
    got = SubstringMatcher(normalize=normalize).similarities([(ref, cit)])
    assert got == [reference_similarity(ref, cit, normalize)]


@settings(max_examples=300, deadline=None)
@given(text=_text)
def test_fold_ascii_fast_path_equals_the_unicode_path(text: str) -> None:
    assert fold(text) == reference_fold(text)


def test_batches_that_share_texts_match_the_reference() -> None:
    rnd = random.Random(3)
    texts = [
        *[c for _, c in _synthetic_pairs(20, seed=4)][:30],
        "a b c",
        "A  B\tC",
        "b",
        "... b ...",
        "…",
        "",
        "a … c",
        "x...y",
        "ＡＢＣ",
    ]
    pairs = [(rnd.choice(texts), rnd.choice(texts)) for _ in range(2000)]
    assert SubstringMatcher().similarities(pairs) == [reference_similarity(r, c) for r, c in pairs]

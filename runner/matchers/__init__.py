"""Passage matchers: one class per file, all implementing :class:`Matcher`."""

from runner.matchers.base import BaseMatcher, Matcher, PairError, Similarity, TextPair
from runner.matchers.ngram import NgramMatcher
from runner.matchers.substring import SubstringMatcher

__all__ = [
    "BaseMatcher",
    "Matcher",
    "NgramMatcher",
    "PairError",
    "Similarity",
    "SubstringMatcher",
    "TextPair",
]

"""Passage matchers: one class per file, all implementing :class:`Matcher`."""

from runner.matchers.base import BaseMatcher, Matcher, PairError, Similarity, TextPair
from runner.matchers.embeddings import EmbeddingsMatcher
from runner.matchers.llm import LlmMatcher
from runner.matchers.local_embeddings import LocalEmbeddingsMatcher
from runner.matchers.ngram import NgramMatcher
from runner.matchers.substring import SubstringMatcher

__all__ = [
    "BaseMatcher",
    "EmbeddingsMatcher",
    "LlmMatcher",
    "LocalEmbeddingsMatcher",
    "Matcher",
    "NgramMatcher",
    "PairError",
    "Similarity",
    "SubstringMatcher",
    "TextPair",
]

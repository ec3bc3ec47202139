"""The match predicate of SPEC 4.1, split into "which pairs need a similarity" and "decide".

``matches(ref, cit)``:

1. ``ref.content`` blank → true iff the (normalised) sources are equal;
2. ``require_same_source`` and the sources differ → false;
3. ``cit.content`` blank → false;
4. otherwise ``similarity(ref.content, cit.content) >= threshold``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from enum import Enum

from runner.data.models import Citation, Reference


class Rule(Enum):
    """Which step of the predicate decides a pair."""

    EMPTY_REFERENCE = 1
    DIFFERENT_SOURCE = 2
    EMPTY_CITATION = 3
    SIMILARITY = 4


def decide_rule(ref: Reference, cit: Citation, ref_src: str, cit_src: str,
                require_same_source: bool) -> Rule:
    """The predicate step that decides the pair (sources already normalised)."""
    if not ref.content.strip():
        return Rule.EMPTY_REFERENCE
    if require_same_source and ref_src != cit_src:
        return Rule.DIFFERENT_SOURCE
    if not cit.content.strip():
        return Rule.EMPTY_CITATION
    return Rule.SIMILARITY


def needed_pairs(references: Sequence[Reference], citations: Sequence[Citation],
                 normalize: Callable[[str], str],
                 require_same_source: bool) -> Iterator[tuple[str, str]]:
    """Yield the (reference text, citation text) pairs whose similarity the predicate needs."""
    for ref in references:
        ref_src = normalize(ref.source)
        for cit in citations:
            rule = decide_rule(ref, cit, ref_src, normalize(cit.source), require_same_source)
            if rule is Rule.SIMILARITY:
                yield ref.content, cit.content

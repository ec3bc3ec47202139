"""Citation and reference labels (SPEC 6): where a citation went wrong, or right."""

from __future__ import annotations

from collections.abc import Sequence

CITATION_LABELS = ("supported", "wrong_passage", "unexpected_source")
REFERENCE_LABELS = ("cited", "passage_missed", "source_missed")


def citation_labels(cit_matched: Sequence[bool], cit_sources: Sequence[str],
                    expected: set[str]) -> list[str]:
    """``supported`` if the citation matches a reference; else ``wrong_passage`` when its
    (normalised) source is expected; else ``unexpected_source``."""
    return [
        "supported" if ok else ("wrong_passage" if src in expected else "unexpected_source")
        for ok, src in zip(cit_matched, cit_sources)
    ]


def reference_labels(ref_matched: Sequence[bool], ref_sources: Sequence[str],
                     cited: set[str]) -> list[str]:
    """``cited`` if some citation matches the reference; else ``passage_missed`` when its
    (normalised) source was cited; else ``source_missed``."""
    return [
        "cited" if ok else ("passage_missed" if src in cited else "source_missed")
        for ok, src in zip(ref_matched, ref_sources)
    ]

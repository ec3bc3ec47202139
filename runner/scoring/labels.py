"""Citation and reference labels (SPEC 6): where a citation went wrong, or right."""

from __future__ import annotations

from collections.abc import Sequence

CITATION_LABELS = ("supported", "wrong_passage", "unexpected_source", "other_source")
REFERENCE_LABELS = ("cited", "passage_missed", "source_missed")


def citation_labels(cit_matched: Sequence[bool], cit_sources: Sequence[str],
                    expected: set[str], cit_own: Sequence[bool] | None = None) -> list[str]:
    """Each citation's label.

    ``supported`` if the citation matches a reference of its own (normalised) source;
    ``other_source`` if it matches references, but only of other sources (possible without
    ``require_same_source``: the passages share text, such as a boilerplate sentence); else
    ``wrong_passage`` when its source is expected; else ``unexpected_source``.

    Args:
        cit_matched: Whether each citation matches some reference.
        cit_sources: Each citation's normalised source.
        expected: The normalised expected sources.
        cit_own: Whether each citation matches some reference of its own source (default:
            whenever it matches one).
    """
    own = cit_matched if cit_own is None else cit_own
    return [
        ("supported" if mine else "other_source") if ok
        else ("wrong_passage" if src in expected else "unexpected_source")
        for ok, mine, src in zip(cit_matched, own, cit_sources)
    ]


def reference_labels(ref_matched: Sequence[bool], ref_sources: Sequence[str],
                     cited: set[str]) -> list[str]:
    """``cited`` if some citation matches the reference; else ``passage_missed`` when its
    (normalised) source was cited; else ``source_missed``."""
    return [
        "cited" if ok else ("passage_missed" if src in cited else "source_missed")
        for ok, src in zip(ref_matched, ref_sources)
    ]

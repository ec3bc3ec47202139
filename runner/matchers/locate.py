"""The `locate` matcher: where two passages lie in their document (SPEC 6.1, docs/fidelity.md).

Both passages are located in the knowledge base as quote fidelity locates a quote
(:class:`runner.scoring.fidelity.Locator`): the reference first, among every document, then the
citation, in the reference's document first. The similarity is the overlap of their spans in
that document over the shorter span (0 when the citation lies in another document): the seed's
"both passages refer to the same part of the source document", measured, offline. A pair whose
reference or citation is in no document is scored by `ngram` instead, and counted
(:meth:`LocateMatcher.fallback`, said in the run's summary line).

The knowledge base is the matcher's setting ``knowledge_base``: a list of knowledge base
sections as ``dataset.knowledge_base`` takes them (``path``, ``mapping``, ``format``,
``transform``); ``conf/matcher/locate.yaml`` sets it to the run's dataset's. It is read and
indexed when the matcher is built, once per job, before any scoring worker forks.
"""

import multiprocessing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.data.dataset import file_options
from runner.data.loading import iter_documents
from runner.matchers.base import Similarity, TextPair
from runner.matchers.ngram import NgramMatcher
from runner.scoring.fidelity import Found, Locator

_SHARED = {"config": False, "identity": False}
"""A field that is no setting: its copies (:meth:`NgramMatcher.for_workload`) and the scoring
workers they fork share it."""


@dataclass
class LocateMatcher(NgramMatcher):
    """Overlap of the two passages' located spans over the shorter one; `ngram` (its settings
    ``n``, ``tokenizer``, ``threads``, ``kernel``) where a passage is in no document.

    Args:
        knowledge_base: The knowledge base sections to locate passages in (see the module).
        locator: The documents, indexed (default: those of `knowledge_base`).
        counts: The pairs scored and those `ngram` scored, in memory shared with the forked
            scoring workers.
    """

    knowledge_base: list[Any] = field(default_factory=list)
    # Hydra builds the matcher without building the sections' transforms (their loader does).
    _recursive_: bool = field(default=False, metadata={"identity": False})
    locator: Locator = field(default=None, metadata=_SHARED)  # type: ignore[assignment]
    counts: Any = field(default_factory=lambda: multiprocessing.Array("q", 2), metadata=_SHARED)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.locator = self.locator or Locator((
            (d.source, d.text) for k, kb in enumerate(self.knowledge_base) if (kb or {}).get("path")
            for d in iter_documents(kb["path"], **file_options(kb, f"matcher.knowledge_base[{k}]"))
        ), str)

    def fallback(self) -> dict[str, Any]:
        """The pairs scored so far, those `ngram` scored, and its name (:class:`FallsBack`)."""
        return {"pairs": self.counts[0], "fell_back": self.counts[1], "to": "ngram"}

    def similarity_array(self, *_: Any) -> None:  # type: ignore[override]
        """Declined: pairs are located as text (:meth:`similarities`)."""

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Overlap of the located spans of each pair; `ngram` where one is not located."""
        refs = self.locator.labels([""] * len(pairs), [ref for ref, _ in pairs], 0)  # anywhere
        cits = self.locator.labels([r["document"] or "" for r in refs], [c for _, c in pairs], 0)
        located = [_overlap(ref, cit) for ref, cit in zip(refs, cits)]
        lost = [pair for pair, sim in zip(pairs, located) if sim is None]
        back = iter(NgramMatcher.similarities(self, lost))
        with self.counts.get_lock():
            self.counts[:] = [self.counts[0] + len(pairs), self.counts[1] + len(lost)]
        return [next(back) if sim is None else sim for sim in located]


def _overlap(ref: Found, cit: Found) -> float | None:
    """The overlap of where a reference and a citation lie, over the shorter (None: one lies in
    no document; 0: the citation lies in another document than the reference)."""
    if None in (ref["document"], cit["document"]):
        return None
    spans = cit["spans"] if cit["document"] == ref["document"] else []
    shared = sum(max(min(e, f) - max(s, t), 0) for s, e in ref["spans"] for t, f in spans)
    return shared / max(min(sum(e - s for s, e in f["spans"]) for f in (ref, cit)), 1)

"""The `locate` matcher: where two passages lie in their document (SPEC 6.1, docs/fidelity.md).

Both passages are located in the knowledge base as quote fidelity locates a quote
(:class:`runner.scoring.fidelity.Locator`): the reference first, among every document, then the
citation, in the reference's document first. The similarity is the overlap of their spans in
that document over the shorter span (0 when the citation lies in another document): the seed's
"both passages refer to the same part of the source document", measured, offline. A pair whose
reference or citation is in no document is scored by `ngram` instead (counted, in a warning).

The knowledge base is the matcher's setting ``knowledge_base``: a list of knowledge base
sections as ``dataset.knowledge_base`` takes them (``path``, ``mapping``, ``format``,
``transform``); ``conf/matcher/locate.yaml`` sets it to the run's dataset's. It is read and
indexed once per job, in the process that forks the scoring workers.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.data.dataset import file_options
from runner.data.loading import iter_documents
from runner.matchers.base import Similarity, TextPair
from runner.matchers.ngram import NgramMatcher
from runner.scoring.fidelity import Locator

log = logging.getLogger("ragcite")


@dataclass
class LocateMatcher(NgramMatcher):
    """Overlap of the two passages' located spans over the shorter one; `ngram` (its settings
    ``n``, ``threads``, ``kernel``) where a passage is in no document.

    Args:
        knowledge_base: The knowledge base sections to locate passages in (see the module).
    """

    knowledge_base: list[Any] = field(default_factory=list)
    # Hydra builds the matcher without building the sections' transforms (their loader does).
    _recursive_: bool = field(default=False, metadata={"identity": False})

    @functools.cached_property
    def locator(self) -> Locator:
        """Every document of the knowledge base sections, indexed (built on first use)."""
        return Locator(((d.source, d.text) for k, kb in enumerate(self.knowledge_base) if kb
                        for d in iter_documents(kb["path"], **file_options(
                            kb, f"matcher.knowledge_base[{k}]"))), str)

    def for_workload(self, n_pairs: int, processes: int = 1) -> LocateMatcher:
        """:meth:`NgramMatcher.for_workload`, its documents indexed before any worker forks."""
        adapted: LocateMatcher = super().for_workload(n_pairs, processes)  # type: ignore[assignment]
        adapted.__dict__["locator"] = self.locator
        return adapted

    def similarity_array(self, texts: Sequence[str], a: Any,  # type: ignore[override]
                         b: Any) -> None:
        """Declined: pairs are located as text (:meth:`similarities`)."""
        return None

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Overlap of the located spans of each pair; `ngram` where one is not located."""
        out: list[Similarity | None] = [self._overlap(ref, cit) for ref, cit in pairs]
        back = [p for p, sim in enumerate(out) if sim is None]
        if back:
            log.warning("matcher=locate: %d of %d pairs have a passage in no document of the "
                        "knowledge base; ngram scored them", len(back), len(pairs))
            for p, sim in zip(back, NgramMatcher.similarities(self, [pairs[p] for p in back])):
                out[p] = sim
        return out  # type: ignore[return-value]

    def _overlap(self, reference: str, citation: str) -> float | None:
        ref = self.locator.label("", reference)  # "": no document named, every one searched
        cit = self.locator.label(ref["document"] or "", citation)
        if None in (ref["document"], cit["document"]):
            return None
        if cit["document"] != ref["document"]:
            return 0.0
        shared = sum(max(min(e, f) - max(s, t), 0)
                     for s, e in ref["spans"] for t, f in cit["spans"])
        return shared / max(min(sum(e - s for s, e in f["spans"]) for f in (ref, cit)), 1)

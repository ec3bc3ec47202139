"""The `extractive` adapter: an offline BM25 baseline that cites its top-k passages.

Documents of the knowledge base are split into passages (chunks of sentences, paragraphs or
words), indexed with `bm25s`, and each query cites the `top_k` best passages verbatim. It needs
no key and no network, which makes it the default model: a fresh machine runs end to end.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.adapters.base import AdapterContext, BaseAdapter
from runner.config.constraints import COUNT, POSITIVE, OneOf, Range, allows
from runner.data.models import Case, Citation, Document, Response

CHUNK_UNITS = ("sentence", "paragraph", "word", "document")
_SPLIT = {"sentence": (re.compile(r"(?<=[.!?])\s+(?=\S)"), " "),
          "paragraph": (re.compile(r"\n\s*\n"), "\n\n"), "word": (re.compile(r"\s+"), " ")}


def chunk_document(doc: Document, unit: str, size: int, overlap: int) -> list[str]:
    """Split a document into passages of `size` units, consecutive passages sharing `overlap`.

    Args:
        doc: The document.
        unit: ``sentence``, ``paragraph``, ``word`` or ``document`` (the whole text).
        size: Units per passage (≥ 1).
        overlap: Units shared by consecutive passages (0 ≤ overlap < size; the config was
            checked before any work).
    """
    text = doc.text.strip()
    if unit == "document":
        return [text] if text else []
    splitter, joiner = _SPLIT[unit]
    units = [u.strip() for u in splitter.split(text) if u.strip()]
    return [joiner.join(units[start:start + size])
            for start in range(0, max(len(units) - overlap, 1), size - overlap)
            if units[start:start + size]]


@dataclass
class Retrieval:
    """The retrieval settings of the BM25 models (this one and `openai`), declared once.

    Args:
        top_k: Passages retrieved per query.
        chunk_unit: ``sentence``, ``paragraph``, ``word`` or ``document``.
        chunk_size: Units per passage.
        chunk_overlap: Units shared by consecutive passages.
        stopwords: Stop-word list for the BM25 tokeniser (``en``), or null for none.
    """

    top_k: int = field(default=3, metadata=allows(POSITIVE))
    chunk_unit: str = field(default="sentence", metadata=allows(OneOf(CHUNK_UNITS, "unit")))
    chunk_size: int = field(default=2, metadata=allows(POSITIVE))
    chunk_overlap: int = field(default=0, metadata=allows(COUNT))
    stopwords: str | None = "en"

    @classmethod
    def config_problem(cls, node: Any) -> str | None:
        """Consecutive passages share fewer units than a passage has (checked with the
        config, before any work)."""
        if node.chunk_overlap >= node.chunk_size:
            return (f"chunk_overlap ({node.chunk_overlap}) must be < chunk_size "
                    f"({node.chunk_size})")
        return None


@dataclass
class ExtractiveModel(Retrieval, BaseAdapter):
    """BM25 retrieval over the knowledge base; cites the top-k passages (the settings of
    :class:`Retrieval`).

    Args:
        min_score: Passages scoring at or below this BM25 score are not cited.
    """

    min_score: float = field(default=0.0, metadata=allows(Range()))

    def bind(self, context: AdapterContext) -> None:
        """Chunk and index the knowledge base."""
        import bm25s

        # bm25s sets its own logger to DEBUG, so its index chatter reached the run's log.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        super().bind(context)
        self._passages = [(doc.source, chunk) for doc in context.dataset.knowledge_base()
                          for chunk in chunk_document(doc, self.chunk_unit, self.chunk_size,
                                                      self.chunk_overlap)]
        if not self._passages:
            raise ValueError(f"the knowledge base of dataset {context.dataset.name!r} is empty")
        tokens = bm25s.tokenize([p[1] for p in self._passages], stopwords=self.stopwords,
                                show_progress=False)
        self._index = bm25s.BM25()
        self._index.index(tokens, show_progress=False)

    def respond_sync(self, cases: Sequence[Case]) -> list[Response]:
        """Retrieve for every query of the batch at once."""
        import bm25s

        if not cases:
            return []
        k = min(self.top_k, len(self._passages))
        query_tokens = bm25s.tokenize([c.query for c in cases], stopwords=self.stopwords,
                                      show_progress=False)
        ids, scores = self._index.retrieve(query_tokens, k=k, show_progress=False,
                                           n_threads=1)
        cited = [[Citation(source=self._passages[i][0], content=self._passages[i][1])
                  for i, s in zip(row_ids.tolist(), row_scores.tolist()) if s > self.min_score]
                 for row_ids, row_scores in zip(ids, scores)]
        # The answer quotes a passage: a [n] in it is the passage's text, not a marker.
        return [Response(answer=cits[0].content if cits else "", citations=cits, unread_markers=0)
                for cits in cited]

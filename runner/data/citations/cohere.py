"""Cohere Chat v2 replies: ``message.citations`` with their ``sources`` (SPEC 2.1).

Each source of a citation gives one citation whose claim is the cited answer span (``text``).
Cohere quotes no passage: the content is the text of the document the source names (the document
whose ``id`` is the source's ``id``; a document without one is ``doc:<k>``, Cohere's own id for
the k-th document), and a source naming none of the given documents dangles. Without documents,
source and content are the cited document's ``title`` (else the source's ``id``) and ``text``
(else its ``snippet``; a tool's output gives none). The v1 reply (``document_ids``) is not read.
"""

from typing import Any

import jmespath


def read(raw: Any, documents: list[Any]) -> tuple[list[dict[str, Any]], int]:
    """The citations of a Chat v2 reply and the number of sources naming no given document.

    Raises:
        ValueError: `raw` has no ``message.citations`` (a v1 reply has none).
    """
    cites = jmespath.search("message.citations", raw)
    if not isinstance(cites, list):
        raise ValueError("raw.message.citations: missing; Chat v2 replies are read (not v1's)")
    named = {doc.id or f"doc:{k}": doc for k, doc in enumerate(documents)}
    links = [(cite["text"], named.get(src["id"]), {"id": src["id"], **(src.get("document") or {})})
             for cite in cites for src in cite.get("sources") or []]
    found = [{"source": doc.source, "content": doc.text, "claim": claim} if doc else
             {"source": data.get("title") or data["id"], "claim": claim,
              "content": data.get("text") or data.get("snippet", "")}
             for claim, doc, data in links if doc or not documents]
    return found, len(links) - len(found)

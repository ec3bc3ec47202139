"""Anthropic Messages replies: the ``citations`` of the text blocks in ``content`` (SPEC 2.1).

Each citation supports its text block (the claim) and quotes ``cited_text`` (the content). Its
source is ``documents[document_index].source`` when the documents the request sent are given (an
index past them dangles), else ``document_title``; search results name theirs by ``url``
(``web_search_result_location``) or ``source`` (``search_result_location``). A
``char_location`` keeps its span in the document. docs/formats.md has an example.
"""

from typing import Any

import jmespath


def read(raw: Any, documents: list[Any]) -> tuple[list[dict[str, Any]], int]:
    """The citations of a Messages reply and the number that point past the documents.

    Raises:
        ValueError: `raw` has no text blocks in ``content``, or none carries ``citations``.
    """
    blocks = jmespath.search("content[?type=='text']", raw)
    if not blocks or not any("citations" in block for block in blocks):
        raise ValueError("raw.content[0].citations: missing; text blocks with citations are read")
    cited = [(block["text"], cite) for block in blocks for cite in block.get("citations") or []]
    kept = [(claim, cite) for claim, cite in cited
            if not documents or cite.get("document_index", 0) < len(documents)]
    return [{"source": documents[cite["document_index"]].source if documents and "document_index"
             in cite else cite.get("document_title") or cite.get("url") or cite.get("source"),
             "content": cite["cited_text"], "claim": claim, "start": cite.get("start_char_index"),
             "end": cite.get("end_char_index")} for claim, cite in kept], len(cited) - len(kept)

"""Gemini ``generateContent`` replies: the first candidate's ``groundingMetadata`` (SPEC 2.1).

Each grounding support ties a segment of the answer to grounding chunks; each chunk it names
gives one citation whose content and claim are the segment's text (the grounding segment is the
quoted text Gemini returns) and whose source is the chunk's ``title``, else its ``uri`` (``web``
and ``retrievedContext`` chunks alike). An index past the chunks dangles. `documents` is unused:
the reply carries its sources.
"""

from typing import Any

import jmespath


def read(raw: Any, documents: list[Any]) -> tuple[list[dict[str, Any]], int]:
    """The citations of a grounded reply and the number of chunk indices past its chunks.

    Raises:
        ValueError: the first candidate has no ``groundingMetadata``.
    """
    meta = jmespath.search("candidates[0].groundingMetadata", raw)
    if not isinstance(meta, dict):
        raise ValueError("raw.candidates[0].groundingMetadata: missing; grounded replies are read")
    chunks = jmespath.search("groundingChunks[].[web || retrievedContext || `{}`][]", meta) or []
    links = [(support["segment"]["text"], k) for support in meta.get("groundingSupports") or []
             for k in support.get("groundingChunkIndices") or []]
    found = [{"source": chunks[k].get("title") or chunks[k].get("uri"), "content": text,
              "claim": text} for text, k in links if 0 <= k < len(chunks)]
    return found, len(links) - len(found)

"""OpenAI Responses replies: the ``annotations`` of each ``output_text`` (SPEC 2.1).

A ``url_citation`` or ``container_file_citation`` supports the answer span
``text[start_index:end_index]``; a ``file_citation`` marks one ``index``, and supports the
sentence ending there. None quotes: the content is the text of the document named by the
citation (a document whose ``id`` is the ``file_id`` or the ``url``, or whose ``source`` is the
``filename`` or the ``url``), else empty; with documents given, a file citation naming none of them
dangles. The source is that document's, else the ``filename`` or the ``url``.
"""

import re
from typing import Any

import jmespath


def read(raw: Any, documents: list[Any]) -> tuple[list[dict[str, Any]], int]:
    """The citations of a Responses reply and the number of file citations naming no document.

    Raises:
        ValueError: `raw` has no ``output`` list, or an ``output_text`` has no ``annotations``.
    """
    items = jmespath.search("output", raw)
    if not isinstance(items, list):
        raise ValueError("raw.output: missing; a Responses API reply is read")
    parts = [(f"raw.output[{i}].content[{j}]", part) for i, item in enumerate(items)
             for j, part in enumerate(item.get("content") or []) if part["type"] == "output_text"]
    if missing := [path for path, part in parts if "annotations" not in part]:
        raise ValueError(f"{missing[0]}.annotations: missing; an output_text lists its citations")
    named = {key: doc for doc in documents for key in (doc.id, doc.source) if key}
    notes = [(part["text"], note, next((named[note[key]] for key in ("file_id", "filename", "url")
              if note.get(key) in named), None)) for _, part in parts
             for note in part["annotations"] if note["type"].endswith("_citation")]
    kept = [(text, note, doc) for text, note, doc in notes if doc or "url" in note or not documents]
    return [{"source": doc.source if doc else note.get("filename") or note["url"],
             "content": doc.text if doc else "",
             "claim": text[note["start_index"]:note["end_index"]] if "start_index" in note
             else re.split(r"(?<=[.!?])\s+", text[:note["index"]].rstrip())[-1]}
            for text, note, doc in kept], len(notes) - len(kept)

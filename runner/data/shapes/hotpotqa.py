"""HotpotQA: supporting facts joined with their context sentences, and the title-keyed corpus.

A HotpotQA record (``_id``, ``question``, ``answer``, ``type``, ``level``, ``supporting_facts``,
``context``) names its evidence as ``supporting_facts = [[title, sentence_index], ...]`` while the
sentences themselves live in ``context = [[title, [sentence, ...]], ...]``. Turning the pairs into
passages is a join between two parts of the record, which JMESPath cannot express; everything
else (id, query, metadata) is mapped by JMESPath in ``conf/dataset/hotpotqa.yaml``.

The corpus file shipped with it is one JSON object ``{title: [sentence, ...]}``; sentences after
the first keep their leading space, so ``"".join(sentences)`` is the paragraph text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def supporting_facts(record: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    """Add ``references``: one per supporting fact, its sentence quoted from the context.

    Each ``[title, i]`` of ``supporting_facts`` becomes ``{"source": title, "content":
    sentence}`` where ``sentence`` is the i-th sentence of the context paragraph titled
    ``title``, stripped of surrounding whitespace. Facts keep their order, so two facts of one
    paragraph give two references with the same source; ``expected_sources`` then defaults to
    the distinct titles.

    Args:
        record: One raw HotpotQA record.
        strict: When true (the default), a fact whose title or sentence index is not in the
            context is an error. When false, it becomes a reference with empty content, which
            any citation of that title matches (SPEC 4.1); upstream HotpotQA has a handful of
            such facts, the shipped 100-question subset has none.

    Returns:
        The record with a ``references`` list added (the raw fields are kept for the mapping).

    Raises:
        ValueError: In strict mode, a supporting fact points outside the context.

    Example:
        >>> rec = {"supporting_facts": [["A", 1]], "context": [["A", ["One.", " Two."]]]}
        >>> supporting_facts(rec)["references"]
        [{'source': 'A', 'content': 'Two.'}]
    """
    paragraphs: dict[str, list[str]] = {}
    for title, sentences in record.get("context") or []:
        paragraphs.setdefault(title, sentences)
    references: list[dict[str, str]] = []
    for n, (title, index) in enumerate(record.get("supporting_facts") or []):
        sentences = paragraphs.get(title)
        found = sentences is not None and 0 <= int(index) < len(sentences)
        if not found and strict:
            where = ("no context paragraph has that title" if sentences is None
                     else f"the paragraph has {len(sentences)} sentences")
            raise ValueError(f"supporting_facts[{n}] = [{title!r}, {index}]: {where}")
        content = sentences[int(index)].strip() if found and sentences else ""
        references.append({"source": title, "content": content})
    return {**record, "references": references}


def corpus_documents(corpus: dict[str, list[str]]) -> Iterator[dict[str, str]]:
    """Split the title-keyed corpus object into knowledge-base documents.

    Args:
        corpus: The whole corpus file, ``{title: [sentence, ...]}`` (read as one record).

    Yields:
        ``{"source": title, "text": paragraph}`` per title, in file order, where the paragraph
        is the sentences joined as stored (they carry their own leading spaces).

    Raises:
        ValueError: The corpus is not an object of sentence lists.
    """
    if not isinstance(corpus, dict):
        raise ValueError(f"expected an object title -> sentences, got {type(corpus).__name__}")
    for title, sentences in corpus.items():
        if not isinstance(sentences, str) and not (
                isinstance(sentences, list) and all(isinstance(s, str) for s in sentences)):
            raise ValueError(f"corpus entry {title!r}: expected a list of sentences")
        yield {"source": title, "text": "".join(sentences)}

"""RAGAS: one ``SingleTurnSample`` of an ``EvaluationDataset`` per record.

A sample holds ``user_input`` (the question), ``response`` (the answer), ``retrieved_contexts``
with their ``retrieved_context_ids``, ``reference_contexts`` with their
``reference_context_ids``, and optionally ``reference`` (the reference answer).

How ragcite reads it (``conf/dataset/ragas.yaml``):

- **References**: each reference context with its id, ``{source: id, content: context}``.
  Ids alone (no contexts) give source-level references with empty content (SPEC 4.1).
- **The stored response**: ``response`` with the retrieved contexts as its documents, in
  order, each ``{id, source: id, text: context}``. RAGAS has no citation field, so which
  documents the answer cites is a setting, ``cited``:

  - ``retrieved`` (the default): every retrieved context counts as cited, as RAGAS's own
    context metrics count them (ragcite's precisions are then those of the retrieval). An
    answer that carries ``[n]`` markers is warned about (SPEC 2.1): use ``markers``.
  - ``markers``: only the documents the answer's markers point at are cited; an answer
    without markers cites nothing.

A context without its id, and a sample without ``reference_context_ids`` (no ground truth),
are refused with the record and the field: a constant or invented source would make every
source figure meaningless.
"""

from __future__ import annotations

from typing import Any

from runner.data.errors import DataError

#: The values of the ``cited`` setting.
CITED = ("retrieved", "markers")


def _pairs(record: dict[str, Any], texts_key: str, ids_key: str,
           required: bool = False) -> list[dict[str, str]]:
    """``{source: id, content: text}`` for each (text, id) of two parallel lists (`required`:
    the ids must be given, even with no texts)."""
    texts, ids = record.get(texts_key), record.get(ids_key)
    if ids is None and (texts or required):
        raise DataError("", None, ids_key, f"missing; give the id (the source ragcite "
                        f"compares) of each of the {texts_key}" + (
                            ": they are the ground truth" if required else ""))
    ids = [] if ids is None else ids
    texts = [""] * len(ids) if texts is None else texts
    if not isinstance(ids, list) or len(ids) != len(texts):
        raise DataError("", None, ids_key, f"expected a list of one id per item of "
                        f"{texts_key}, got {ids!r:.60} for {len(texts)} of them")
    return [{"source": str(i), "content": text} for i, text in zip(ids, texts)]


def sample(record: dict[str, Any], cited: str = "retrieved") -> dict[str, Any]:
    """One RAGAS sample as a case with its stored response (when it has one).

    Args:
        record: One ``SingleTurnSample`` as a dict.
        cited: ``retrieved`` or ``markers`` (see the module).

    Returns:
        ``{query, references, metadata, response}``; the response's documents are the
        retrieved contexts, its citations all of them (``retrieved``) or none given (read from
        the answer's markers).

    Raises:
        DataError: A context without its id, or an unknown `cited` (the field named).
    """
    if cited not in CITED:
        raise DataError("", None, "dataset.transform.cited",
                        f"unknown value {cited!r}; expected one of {', '.join(CITED)}")
    retrieved = _pairs(record, "retrieved_contexts", "retrieved_context_ids")
    response = {"answer": record.get("response"), "documents": [
        {"id": r["source"], "source": r["source"], "text": r["content"]} for r in retrieved],
        **({"citations": retrieved} if cited == "retrieved" else {})}
    return {"query": record.get("user_input"),
            "references": _pairs(record, "reference_contexts", "reference_context_ids", True),
            "response": None if response["answer"] is None else response,
            "metadata": {"reference": record["reference"]} if "reference" in record else {}}

"""ExpertQA: one expert question with one real system answer per line, judged claim by claim.

Each line of ``rand_test.jsonl`` / ``rand_val.jsonl`` holds ``question``, ``metadata`` and
``answers = {<system>: answer}`` with exactly one system, one of :data:`SYSTEMS`. The answer has
``answer_string``, ``attribution`` (``"[n] URL"`` strings) and ``claims``; each claim carries its
``evidence`` (``"[n] URL"`` or ``"[n] URL\\n\\npassage"`` strings) and the expert's ``support``
judgement of that evidence for that claim.

How ragcite reads it (``conf/dataset/expertqa.yaml``):

- **Citations** (the system's response, :func:`response_record`): the numbered sources the
  claims cite, each ``[n]`` once, in first-seen order: ``{"source": URL, "content": passage}``.
  ``gpt4`` and ``bing_chat`` evidence is URL-only, so their citations have empty content.
  ``attribution`` entries no claim cites (retrieved but unused sources, Bing's "learn more"
  links) are not citations: no expert judged them.
- **References** (the ground truth, :func:`case_record`): the evidence of every claim whose
  ``support`` is in :data:`SUPPORTING` (only ``"Complete"``: the expert judged the cited
  evidence to support the whole claim), deduplicated by exact (URL, passage), first-seen order.
  ``"Partial"``, ``"Incomplete"``, ``"Missing"``, ``"N/A"`` and null do not count. A URL-only
  reference (``gpt4``, ``bing_chat``) has empty content, so any citation of that URL matches it
  (SPEC 4.1): for those systems passage matching falls back to the URL.

So references are a subset of the citations: context and source recall are 1.0 by
construction, and the precisions are the share of citations an expert judged as completely
supporting a claim.

Both files mix the six systems, and the cases of one system are only meaningful with that
system's responses, so :func:`case_record` keeps the lines of one system and skips the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: The six answering systems of ExpertQA.
SYSTEMS = ("gpt4", "bing_chat", "rr_gs_gpt4", "rr_sphere_gpt4", "post_hoc_gs_gpt4",
           "post_hoc_sphere_gpt4")

#: Values of a claim's ``support`` that make its evidence a reference.
SUPPORTING = frozenset({"Complete"})

# "[n] URL" + blank line + passage (the same pattern that derived the knowledge base), or a
# URL alone (gpt4 adds stray trailing spaces).
_EVIDENCE = re.compile(r"\[(\d+)\](?: (\S+)\n\n(.*)|\s*(\S+)\s*)\Z", re.DOTALL)


def parse_evidence(text: str) -> tuple[str, str, str]:
    """Split one evidence string into its marker, URL and passage.

    Args:
        text: ``"[n] URL\\n\\npassage"`` or ``"[n] URL"``.

    Returns:
        ``(n, URL, passage)``; the passage is ``""`` for a URL-only string and is otherwise
        kept verbatim, so it equals the knowledge-base text of that (URL, passage) pair.

    Raises:
        ValueError: The string has neither shape.

    Example:
        >>> parse_evidence("[2] https://x.org/a\\n\\nSome passage.")
        ('2', 'https://x.org/a', 'Some passage.')
    """
    if m := _EVIDENCE.match(text):
        return m.group(1), m.group(2) or m.group(4), m.group(3) or ""
    raise ValueError(f"evidence string {text[:80]!r} is neither '[n] URL' nor "
                     "'[n] URL<blank line>passage'")


def _answer(record: dict[str, Any], system: str | None) -> dict[str, Any] | None:
    """The line's one answer when `system` (None: any) gave it, else None."""
    if system is not None and system not in SYSTEMS:
        raise ValueError(f"unknown ExpertQA system {system!r}; expected one of "
                         f"{', '.join(SYSTEMS)}")
    answers = record.get("answers")
    if not isinstance(answers, dict) or len(answers) != 1:
        got = list(answers) if isinstance(answers, dict) else type(answers).__name__
        raise ValueError(f"expected 'answers' to hold exactly one system's answer, got {got}")
    name, answer = next(iter(answers.items()))
    return answer if system in (None, name) else None


def _evidence(answer: dict[str, Any], supported: bool) -> Iterator[tuple[str, str, str]]:
    """``(n, URL, passage)`` of each evidence string of the answer's claims (`supported`: of
    its completely supported claims only), in order."""
    return (parse_evidence(evidence) for claim in answer.get("claims") or []
            if not supported or claim.get("support") in SUPPORTING
            for evidence in claim.get("evidence") or [])


def citations(answer: dict[str, Any]) -> list[dict[str, str]]:
    """The citations of one answer: each ``[n]`` its claims cite, once, in first-seen order."""
    seen: dict[str, dict[str, str]] = {}
    for n, url, passage in _evidence(answer, supported=False):
        seen.setdefault(n, {"source": url, "content": passage})
    return list(seen.values())


def references(answer: dict[str, Any]) -> list[dict[str, str]]:
    """The evidence of the answer's completely supported claims, distinct (URL, passage) pairs."""
    pairs = dict.fromkeys((url, passage) for _, url, passage in _evidence(answer, supported=True))
    return [{"source": url, "content": passage} for url, passage in pairs]


def case_record(record: dict[str, Any], system: str | None = None,
                default_system: str | None = None) -> dict[str, Any] | None:
    """Keep a line of the chosen system and add its ``references``; skip other systems.

    The system is ``system`` when set, else ``default_system`` (the rule the ``precomputed``
    adapter applies to pick stored responses, so the cases and the responses always agree);
    when both are None every line is kept. Query and metadata are mapped by JMESPath in the
    dataset config; case ids are the line numbers (the default id), which the response records
    read from the same file share.

    Args:
        record: One raw ExpertQA line.
        system: The system under test (``model.system`` in the runner's config).
        default_system: The dataset's ``default_system``.

    Returns:
        The record with ``references`` added, or None for a line of another system.

    Raises:
        ValueError: The chosen system is not an ExpertQA system, or the line is malformed.
    """
    answer = _answer(record, system or default_system)
    return None if answer is None else {**record, "references": references(answer)}


def response_record(record: dict[str, Any], system: str) -> dict[str, Any] | None:
    """The stored response of `system` on one line: its answer and citations; None otherwise.

    Args:
        record: One raw ExpertQA line.
        system: One of :data:`SYSTEMS`.

    Returns:
        ``{"response": {"answer": answer_string, "citations": [...], "unread_markers": 0}}``,
        or None for another system's line.

    Raises:
        ValueError: `system` is not an ExpertQA system, or the line is malformed.
    """
    answer = _answer(record, system)
    if answer is None or system is None:
        return None
    # The citations are the answer's [n] markers, read here: none is left unread.
    return {"response": {"answer": answer.get("answer_string") or "",
                         "citations": citations(answer), "unread_markers": 0}}

"""Citation and reference labels (SPEC 6), each declared once: where a citation went wrong, or
right. The batch scorer (:mod:`runner.scoring.batch`) decides them in this order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Label(NamedTuple):
    """One label.

    Attributes:
        kind: ``citation`` or ``reference``.
        name: As written to ``cases.parquet``.
        text: What it means (the reports' legend).
        sentence: What the labelled items do, in the plural (the run report's diagnosis).
    """

    kind: str
    name: str
    text: str
    sentence: str

    @property
    def key(self) -> str:
        """Its count's key in ``metrics.json`` → ``labels`` (``citation_supported``)."""
        return f"{self.kind}_{self.name}"


CITATION = (
    Label("citation", "supported", "its passage matches a reference",
          "quote a ground-truth passage of their own document"),
    Label("citation", "wrong_passage", "right document, but its passage matches no reference",
          "cite an expected document but a passage that matches none"),
    Label("citation", "unexpected_source", "a document that is not expected",
          "cite a document that is not expected"),
    Label("citation", "other_source",
          "its passage matches only a reference of another document (shared text)",
          "match only a passage of another document (other_source: shared text such as "
          "boilerplate; scoring.require_same_source=true would not credit them)"))
REFERENCE = (Label("reference", "cited", "matched by a citation", "are cited"),
             Label("reference", "passage_missed", "its document was cited, but not this passage",
                   "are missed although their document is cited"),
             Label("reference", "source_missed", "its document was not cited at all",
                   "belong to documents not cited"))
FIDELITY = (  # SPEC 6.1, beside the labels above: where a citation's quote comes from
    Label("fidelity", "verbatim", "as written in the document it cites", "are verbatim"),
    Label("fidelity", "paraphrased", "close to a span of its document", "are reworded"),
    Label("fidelity", "misattributed", "from another document", "come from another document"),
    Label("fidelity", "stitched", "parts from separate places of its document", "are stitched"),
    Label("fidelity", "fabricated", "found in no document", "appear in no document"),
    Label("fidelity", "unchecked", "no documents to check it against", "are not checked"))
CITATION_LABELS = tuple(lab.name for lab in CITATION)
REFERENCE_LABELS = tuple(lab.name for lab in REFERENCE)
LABEL_TEXT = {lab.name: lab.text for lab in (*CITATION, *REFERENCE, *FIDELITY)}
"""What each label means, by name."""
KINDS = (("citations", "citation_", CITATION_LABELS), ("references", "reference_",
                                                        REFERENCE_LABELS))
"""Each kind of item (``counts`` key), its labels' key prefix and its labels in order."""
CHECKED = ("checked quotes", "fidelity_", tuple(lab.name for lab in FIDELITY[:-1]))
"""The fidelity labels of a checked quote (all but ``unchecked``), as a kind of :data:`KINDS`."""


def shares(labels: Mapping[str, int], counts: Mapping[str, int]) -> dict[str, float | None]:
    """Each label's count over the items of its kind (``counts`` → ``citations`` or
    ``references``; a fidelity label's over the checked quotes, ``fidelitys``, when `labels`
    count them): ``metrics.json`` → ``label_shares``, None when there is none."""
    return {lab.key: labels.get(lab.key, 0) / whole if (whole := counts.get(lab.kind + "s"))
            else None for lab in (*CITATION, *REFERENCE, *FIDELITY[:-1]) if lab.key in labels}


def diagnose(labels: Mapping[str, int]) -> str:
    """The diagnosis of a run (``metrics.json`` → ``diagnosis``): the main finding of its label
    counts, ``wrong_documents`` (a retrieval problem), ``wrong_passages`` (of the right
    documents), ``incomplete`` (citations), ``mostly_right``, ``mixed``, ``no_citations`` or
    ``nothing`` (no citation or reference scored). The run report states it with its counts."""
    sup, wrong, unexp, other, cited, p_missed, s_missed = (  # the declared labels, in order
        int(labels.get(lab.key) or 0) for lab in (*CITATION, *REFERENCE))
    total, refs = sup + other + wrong + unexp, cited + p_missed + s_missed
    if not total:
        return "no_citations" if refs else "nothing"
    if sup >= 0.75 * total and (not refs or cited >= 0.75 * refs):
        return "mostly_right"
    if unexp >= wrong and unexp > 0 and (unexp >= sup or s_missed >= p_missed):
        return "wrong_documents"
    if wrong > 0 and (wrong >= sup or p_missed >= s_missed):
        return "wrong_passages"
    return "incomplete" if sup >= 0.75 * total else "mixed"

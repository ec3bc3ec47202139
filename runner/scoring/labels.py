"""Citation and reference labels (SPEC 6), each declared once: where a citation went wrong, or
right. The batch scorer (:mod:`runner.scoring.batch`) decides them in this order."""

from __future__ import annotations

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
CITATION_LABELS = tuple(lab.name for lab in CITATION)
REFERENCE_LABELS = tuple(lab.name for lab in REFERENCE)
LABEL_TEXT = {lab.name: lab.text for lab in (*CITATION, *REFERENCE)}
"""What each label means, by name."""

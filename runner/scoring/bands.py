"""Bands for metric values and the seed's explanation texts (SPEC 6)."""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_BANDS: dict[str, float] = {"green": 0.75, "medium": 0.25}
"""Lower bounds: green ≥ 0.75, medium ≥ 0.25, red below."""

BAND_TEXT: dict[str, dict[str, str]] = {
    "context_recall": {
        "green": "All ground-truth passages are each matched by at least one response citation - "
                 "the model correctly cited all expected supporting passages.",
        "medium": "Half of the ground-truth passages are matched by at least one response "
                  "citation - the model cited some but not all expected supporting passages.",
        "red": "None of the ground-truth passages are matched by any response citation - the "
               "model failed to cite any of the expected supporting passages.",
    },
    "context_precision": {
        "green": "All response citations' passages each match at least one ground-truth "
                 "reference - every citation is correct and refers to an expected supporting "
                 "passage.",
        "medium": "Half of the response citations' passages match a ground-truth reference - "
                  "some citations are correct while others are spurious or refer to an "
                  "unexpected passage.",
        "red": "None of the response citations' passages match any ground-truth reference - all "
               "citations are spurious or refer to an unexpected passage.",
    },
    "context_f1": {
        "green": "The harmonic mean of context recall and precision is high - the model cites "
                 "the expected passages and little else.",
        "medium": "The harmonic mean of context recall and precision is middling - some expected "
                  "passages are missed or some citations are spurious.",
        "red": "The harmonic mean of context recall and precision is low - the cited passages "
               "hardly overlap the expected ones.",
    },
    "source_recall": {
        "green": "The expected source documents appear in at least one response citation each - "
                 "the model correctly cited all expected sources.",
        "medium": "Half of the expected source documents appear in a response citation - the "
                  "model cited some expected sources but omitted others.",
        "red": "The expected source documents do not appear in any response citation - the model "
               "failed to cite any of the expected sources.",
    },
    "source_precision": {
        "green": "The cited source documents are all among the expected sources - these "
                 "citations refer to expected source documents only.",
        "medium": "Half of the cited source documents are among the expected sources - some "
                  "citations refer to correct sources while others are unexpected or "
                  "irrelevant.",
        "red": "The cited source documents are not among the expected sources - these citations "
               "refer to unexpected or irrelevant source documents.",
    },
    "source_f1": {
        "green": "The harmonic mean of source recall and precision is high - the model cites the "
                 "expected documents and little else.",
        "medium": "The harmonic mean of source recall and precision is middling - some expected "
                  "documents are missed or some cited documents are unexpected.",
        "red": "The harmonic mean of source recall and precision is low - the cited documents "
               "hardly overlap the expected ones.",
    },
}


def band(value: float | None, bands: Mapping[str, float] = DEFAULT_BANDS) -> str | None:
    """``green`` when value ≥ bands['green'], ``medium`` when ≥ bands['medium'], else ``red``.

    Returns None for an undefined value.
    """
    if value is None:
        return None
    if value >= bands["green"]:
        return "green"
    if value >= bands["medium"]:
        return "medium"
    return "red"

"""The sentences the reports generate about a run, each true of its own figures.

A headline card shows a macro mean (the mean of the per-case values); its sentence gives the
pooled counts behind it (``metrics.json`` → ``counts`` and ``labels``) and says what the value
is, so "0.806" never sits next to "All ground-truth passages are matched". The seed's band
texts (each metric's ``band_text``) describe what 1.0, 0.5 and 0.0 mean: the
reports show them as a legend, not as a statement about the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.scoring.explain import count_of, listing, percent, plural
from runner.scoring.labels import CITATION, REFERENCE, Label
from runner.scoring.metrics import F1, METRICS

UNDEFINED_TEXT = "Undefined: no scored case defines this metric."


def card_sentence(key: str, metrics: Mapping[str, Any]) -> str:
    """The sentence of a headline card: true of its value (the macro mean) and its counts.

    Example (the demo's default run, context recall 0.806): "25 of 34 ground-truth passages
    (74%) are matched by a citation; 5 are missed although their document is cited and 4
    belong to documents not cited. 0.806 is the mean of the per-case context recalls over 30
    cases."
    """
    value = (metrics.get("metrics") or {}).get(key)
    if not isinstance(value, (int, float)):
        return UNDEFINED_TEXT
    m = METRICS[key]
    # The cases the mean is over: the scored ones that define the metric.
    defined = ((metrics.get("histograms") or {}).get(key) or {}).get("defined")
    over = f" over {plural(defined, 'case')}" if isinstance(defined, int) else ""
    counts, mean = m.sentence(metrics), f"{float(value):.3f} is the mean of the {m.mean_of}{over}."
    if isinstance(m, F1):
        return mean + (" " + counts if counts else "")
    return (counts + " " if counts else "") + mean


def diagnosis(metrics: Mapping[str, Any]) -> tuple[str, str]:
    """The run report's diagnosis: a headline stating scoring's finding (``metrics.json`` →
    ``diagnosis``), and the counts.

    Every clause states a count of ``metrics.json`` → ``labels`` (of ``counts`` →
    ``citations`` or ``references``) and its share (``label_shares``); a clause whose count is
    0 is left out, so nothing is claimed that did not happen.
    """
    labels, shares = metrics.get("labels") or {}, metrics.get("label_shares") or {}
    _, wrong, unexp, _, cited, _, s_missed = (  # the declared labels, in order
        int(labels.get(lab.key) or 0) for lab in (*CITATION, *REFERENCE))
    total, refs = (count_of(metrics, "counts", k) or 0 for k in ("citations", "references"))
    finding = metrics.get("diagnosis")
    if finding in (None, "nothing"):
        return (("Nothing to diagnose", "No citation or reference was scored.") if finding else
                ("Not diagnosed", "These results were written without a diagnosis."))
    detail = _detail(CITATION, labels, shares, total, "citation") + " " + _detail(
        REFERENCE, labels, shares, refs, "ground-truth passage")
    if finding == "no_citations":
        return "No citations: the responses cite nothing.", detail
    if finding == "mostly_right":
        head = "Mostly right: most citations quote a ground-truth passage of their own document"
        return head + ("." if not refs else ", and most ground-truth passages are cited."), detail
    if finding == "wrong_documents":
        return (f"Main problem: wrong documents. {unexp} of {plural(total, 'citation')} "
                f"cite{'s' if unexp == 1 else ''} a document that is not expected" + (
                    f", and {s_missed} of {plural(refs, 'ground-truth passage')} "
                    f"belong{'s' if s_missed == 1 else ''} to documents not cited"
                    if s_missed else "") + " (usually a retrieval problem).", detail)
    if finding == "wrong_passages":
        return (f"Main problem: wrong passages. {wrong} of {plural(total, 'citation')} "
                f"cite{'s' if wrong == 1 else ''} an expected document but a passage that "
                "matches no ground-truth passage.", detail)
    if finding == "incomplete":
        return ("Main problem: incomplete citations. Most citations are right, but only "
                f"{cited} of {plural(refs, 'ground-truth passage')} are cited.", detail)
    return ("Mixed: no single failure dominates.", detail)


def _detail(kind: tuple[Label, ...], labels: Mapping[str, Any], shares: Mapping[str, Any],
            total: int, noun: str) -> str:
    """``Of 6 citations, 3 (50%) quote ...``: each label's count and share (a citation label
    other than ``other_source`` shown even at 0)."""
    if not total:
        return ("No citation was scored." if kind is CITATION
                else "No scored case has a ground-truth passage.")
    shown = (*kind[:1], *kind[3:], *kind[1:3]) if kind is CITATION else kind  # other_source 2nd
    parts = [f"{n} ({percent(shares.get(lab.key))}) {lab.sentence}" for lab in shown
             if (n := int(labels.get(lab.key) or 0)) or lab.name != "other_source"]
    return f"Of {plural(total, noun)}, " + ("; ".join(parts) if kind is CITATION
                                            else listing(parts)) + "."

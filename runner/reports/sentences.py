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

from runner.scoring.explain import listing, percent, plural
from runner.scoring.labels import CITATION, REFERENCE
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
    m, n = METRICS[key], metrics.get("n_scored")
    # The cases the mean is over: the scored ones that define the metric.
    undefined = ((metrics.get("histograms") or {}).get(key) or {}).get("undefined") or 0
    over = f" over {plural(n - int(undefined), 'case')}" if isinstance(n, int) else ""
    counts, mean = m.sentence(metrics), f"{float(value):.3f} is the mean of the {m.mean_of}{over}."
    if isinstance(m, F1):
        return mean + (" " + counts if counts else "")
    return (counts + " " if counts else "") + mean


def diagnosis(labels: Mapping[str, Any]) -> tuple[str, str]:
    """The run report's diagnosis: a headline naming the main problem, and the counts.

    Every clause states a count of ``metrics.json`` → ``labels``; a clause whose count is 0 is
    left out, so nothing is claimed that did not happen.
    """
    sup, wrong, unexp, other, cited, p_missed, s_missed = (  # the declared labels, in order
        int(labels.get(lab.key) or 0) for lab in (*CITATION, *REFERENCE))
    total, refs = sup + other + wrong + unexp, cited + p_missed + s_missed
    if not total and not refs:
        return "Nothing to diagnose", "No citation or reference was scored."
    detail = _diagnosis_detail(sup, other, wrong, unexp, total) + " " + _references_detail(
        cited, p_missed, s_missed, refs)
    if not total:
        return "No citations: the responses cite nothing.", detail
    if sup >= 0.75 * total and (not refs or cited >= 0.75 * refs):
        head = "Mostly right: most citations quote a ground-truth passage of their own document"
        return head + ("." if not refs else ", and most ground-truth passages are cited."), detail
    if unexp >= wrong and unexp > 0 and (unexp >= sup or s_missed >= p_missed):
        return (f"Main problem: wrong documents. {unexp} of {plural(total, 'citation')} "
                f"cite{'s' if unexp == 1 else ''} a document that is not expected" + (
                    f", and {s_missed} of {plural(refs, 'ground-truth passage')} "
                    f"belong{'s' if s_missed == 1 else ''} to documents not cited"
                    if s_missed else "") + " (usually a retrieval problem).", detail)
    if wrong > 0 and (wrong >= sup or p_missed >= s_missed):
        return (f"Main problem: wrong passages. {wrong} of {plural(total, 'citation')} "
                f"cite{'s' if wrong == 1 else ''} an expected document but a passage that "
                "matches no ground-truth passage.", detail)
    if sup >= 0.75 * total:
        return ("Main problem: incomplete citations. Most citations are right, but only "
                f"{cited} of {plural(refs, 'ground-truth passage')} are cited.", detail)
    return ("Mixed: no single failure dominates.", detail)


def _diagnosis_detail(sup: int, other: int, wrong: int, unexp: int, total: int) -> str:
    if not total:
        return "No citation was scored."
    lab = {c.name: c.sentence for c in CITATION}
    counts = (("supported", sup), ("other_source", other), ("wrong_passage", wrong),
              ("unexpected_source", unexp))
    return f"Of {plural(total, 'citation')}, " + "; ".join(
        f"{n} ({percent(n, total)}) {lab[name]}" for name, n in counts
        if n or name != "other_source") + "."


def _references_detail(cited: int, p_missed: int, s_missed: int, refs: int) -> str:
    if not refs:
        return "No scored case has a ground-truth passage."
    return f"Of {plural(refs, 'ground-truth passage')}, " + listing([
        f"{n} ({percent(n, refs)}) {lab.sentence}"
        for lab, n in zip(REFERENCE, (cited, p_missed, s_missed))]) + "."

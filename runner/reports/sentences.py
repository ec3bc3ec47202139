"""The sentences the reports generate about a run, each true of its own figures.

A headline card shows a macro mean (the mean of the per-case values); its sentence gives the
pooled counts behind it (``metrics.json`` → ``counts`` and ``labels``) and says what the value
is, so "0.806" never sits next to "All ground-truth passages are matched". The seed's band
texts (:data:`runner.scoring.bands.BAND_TEXT`) describe what 1.0, 0.5 and 0.0 mean: the
reports show them as a legend, not as a statement about the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

UNDEFINED_TEXT = "Undefined: no scored case defines this metric."

_MEAN_OF = {
    "context_recall": "per-case context recalls",
    "context_precision": "per-case context precisions",
    "context_f1": "per-case harmonic means of context recall and precision",
    "source_recall": "per-case source recalls",
    "source_precision": "per-case source precisions",
    "source_f1": "per-case harmonic means of source recall and precision",
}


def percent(part: float, whole: float) -> str:
    """``part / whole`` as a whole percentage that never rounds a partial share to 0 or 100."""
    if not whole:
        return "n/a"
    share = part / whole
    if 0 < share < 0.005:
        return "<1%"
    if 0.995 <= share < 1:
        return ">99%"
    return f"{100 * share:.0f}%"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 citation``, ``2 citations`` (`many` for an irregular plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _count(metrics: Mapping[str, Any], section: str, key: str) -> int | None:
    value = (metrics.get(section) or {}).get(key)
    return int(value) if isinstance(value, (int, float)) else None


def _defined(metrics: Mapping[str, Any], key: str) -> int | None:
    """Scored cases where the metric is defined (``n_scored`` minus the undefined ones)."""
    n = metrics.get("n_scored")
    if not isinstance(n, int):
        return None
    undefined = ((metrics.get("histograms") or {}).get(key) or {}).get("undefined") or 0
    return n - int(undefined)


def _mean_clause(key: str, value: float, metrics: Mapping[str, Any]) -> str:
    n = _defined(metrics, key)
    over = f" over {plural(n, 'case')}" if n is not None else ""
    return f"{value:.3f} is the mean of the {_MEAN_OF[key]}{over}."


def _parts(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _recall(m: Mapping[str, Any]) -> str | None:
    refs, hit = _count(m, "counts", "references"), _count(m, "counts", "references_matched")
    if refs is None or hit is None:
        return None
    if refs == 0:
        return "No scored case has a ground-truth passage: the value comes from the " \
               "zero-division rule (scoring.zero_division)."
    text = (f"{hit} of {plural(refs, 'ground-truth passage')} ({percent(hit, refs)}) "
            f"{'is' if hit == 1 else 'are'} matched by a citation")
    passage, source = (_count(m, "labels", "reference_passage_missed") or 0,
                       _count(m, "labels", "reference_source_missed") or 0)
    missed = []
    if passage:
        missed.append(f"{passage} {'is' if passage == 1 else 'are'} missed although "
                      f"{'its document is' if passage == 1 else 'their document is'} cited")
    if source:
        missed.append(f"{source} {'belongs' if source == 1 else 'belong'} to "
                      f"{'a document' if source == 1 else 'documents'} not cited")
    if hit == refs:
        return text + "; none is missed."
    return text + ("; " + _parts(missed) if missed else "") + "."


def _precision(m: Mapping[str, Any]) -> str | None:
    cits, hit = _count(m, "counts", "citations"), _count(m, "counts", "citations_matched")
    if cits is None or hit is None:
        return None
    if cits == 0:
        return "No scored case cites anything: the value comes from the zero-division rule " \
               "(scoring.zero_division)."
    text = (f"{hit} of {plural(cits, 'citation')} ({percent(hit, cits)}) "
            f"{'matches' if hit == 1 else 'match'} a ground-truth passage")
    other = _count(m, "labels", "citation_other_source") or 0
    if other:
        text += f" ({other} of them only a passage of another document)"
    wrong, unexpected = (_count(m, "labels", "citation_wrong_passage") or 0,
                         _count(m, "labels", "citation_unexpected_source") or 0)
    rest = []
    if wrong:
        rest.append(f"{wrong} {'cites' if wrong == 1 else 'cite'} an expected document but a "
                    "passage that matches none")
    if unexpected:
        rest.append(f"{unexpected} {'cites' if unexpected == 1 else 'cite'} a document that "
                    "is not expected")
    if hit == cits:
        return text + "; none is spurious."
    return text + ("; " + _parts(rest) if rest else "") + "."


def _sources(m: Mapping[str, Any], of: str, verb: str) -> str | None:
    whole, hit = _count(m, "counts", of), _count(m, "counts", "sources_hit")
    if whole is None or hit is None:
        return None
    noun = "expected document" if of == "expected_sources" else "cited document"
    if whole == 0:
        return (f"No scored case has a{'n' if noun[0] == 'e' else ''} {noun}: the value comes "
                "from the zero-division rule (scoring.zero_division).")
    return (f"{hit} of {plural(whole, noun)} ({percent(hit, whole)}), counted per case, "
            f"{'is' if hit == 1 else 'are'} {verb}; {whole - hit} "
            f"{'is' if whole - hit == 1 else 'are'} not.")


def _f1(m: Mapping[str, Any], level: str) -> str | None:
    micro = (m.get("micro") or {}).get(f"{level}_f1")
    if not isinstance(micro, (int, float)):
        return None
    return f"From the counts pooled over all cases it is {micro:.3f}."


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
    counts = {
        "context_recall": lambda: _recall(metrics),
        "context_precision": lambda: _precision(metrics),
        "context_f1": lambda: _f1(metrics, "context"),
        "source_recall": lambda: _sources(metrics, "expected_sources", "cited"),
        "source_precision": lambda: _sources(metrics, "cited_sources", "expected"),
        "source_f1": lambda: _f1(metrics, "source"),
    }[key]()
    mean = _mean_clause(key, float(value), metrics)
    if key.endswith("_f1"):
        return mean + (" " + counts if counts else "")
    return (counts + " " if counts else "") + mean


def diagnosis(labels: Mapping[str, Any]) -> tuple[str, str]:
    """The run report's diagnosis: a headline naming the main problem, and the counts.

    Every clause states a count of ``metrics.json`` → ``labels``; a clause whose count is 0 is
    left out, so nothing is claimed that did not happen.
    """
    def n(key: str) -> int:
        return int(labels.get(key) or 0)

    sup, other = n("citation_supported"), n("citation_other_source")
    wrong, unexp = n("citation_wrong_passage"), n("citation_unexpected_source")
    cited, p_missed = n("reference_cited"), n("reference_passage_missed")
    s_missed = n("reference_source_missed")
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
    parts = [f"{sup} ({percent(sup, total)}) quote a ground-truth passage of their own "
             "document"]
    if other:
        parts.append(f"{other} ({percent(other, total)}) match only a passage of another "
                     "document (other_source: shared text such as boilerplate; "
                     "scoring.require_same_source=true would not credit them)")
    parts.append(f"{wrong} ({percent(wrong, total)}) cite an expected document but a passage "
                 "that matches none")
    parts.append(f"{unexp} ({percent(unexp, total)}) cite a document that is not expected")
    return f"Of {plural(total, 'citation')}, " + "; ".join(parts) + "."


def _references_detail(cited: int, p_missed: int, s_missed: int, refs: int) -> str:
    if not refs:
        return "No scored case has a ground-truth passage."
    return (f"Of {plural(refs, 'ground-truth passage')}, {cited} ({percent(cited, refs)}) are "
            f"cited, {p_missed} ({percent(p_missed, refs)}) are missed although their document "
            f"is cited and {s_missed} ({percent(s_missed, refs)}) belong to documents not "
            "cited.")

"""Plain-language explanations of a case's scores, in the style of the seed's examples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _join(items: Sequence[str]) -> str:
    n = len(items)
    if n == 1:
        return items[0]
    if n == 0:
        return ""
    items = list(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def _summary(kind: str, r: float | None, p: float | None) -> str:
    if r is not None and p is not None and r == p:
        if r == 1.0:
            return f"Both {kind} recall and precision are perfect."
        if r == 0.0:
            return f"Both {kind} recall and precision are zero."
        return f"{kind.capitalize()} recall and precision are equal at {r:.2f}."
    return f"{kind.capitalize()} recall is {_fmt(r)} and {kind} precision is {_fmt(p)}."


def _reference_details(ref_sources: Sequence[str], ref_labels: Sequence[str],
                       ref_wrong_cited: Sequence[bool] | None = None) -> str:
    if ref_wrong_cited is None:
        ref_wrong_cited = [True] * len(ref_labels)
    missed_passage = [(s, w) for s, lab, w in zip(ref_sources, ref_labels, ref_wrong_cited)
                      if lab == "passage_missed"]
    # The source's citation quotes a passage that matches nothing: "uses a wrong passage".
    wrong = _unique([s for s, w in missed_passage if w])
    # Every citation of the source matches some other reference: this passage is just not cited.
    others = [s for s, w in missed_passage if not w]
    missed = _unique([s for s, lab in zip(ref_sources, ref_labels) if lab == "source_missed"])
    parts = []
    if wrong:
        parts.append(f"the {_join(wrong)} citation{'s' if len(wrong) > 1 else ''} "
                     f"use{'' if len(wrong) > 1 else 's'} a wrong passage")
    if others:
        parts.append(f"the other {_join(_unique(others))} "
                     f"passage{'s are' if len(others) > 1 else ' is'} not cited")
    if missed:
        parts.append(f"{_join(missed)} {'are' if len(missed) > 1 else 'is'} not cited at all")
    if not parts:
        return ""
    text = ", and ".join(parts)
    return " " + text[0].upper() + text[1:] + "."


def _citation_details(cit_sources: Sequence[str], cit_labels: Sequence[str]) -> str:
    wrong = _unique([s for s, lab in zip(cit_sources, cit_labels) if lab == "wrong_passage"])
    unexpected = _unique(
        [s for s, lab in zip(cit_sources, cit_labels) if lab == "unexpected_source"])
    parts = []
    if wrong:
        parts.append(f"the {_join(wrong)} citation{'s' if len(wrong) > 1 else ''} "
                     f"use{'' if len(wrong) > 1 else 's'} a wrong passage")
    if unexpected:
        parts.append(f"{_join(unexpected)} "
                     f"{'have' if len(unexpected) > 1 else 'has'} no matching ground-truth "
                     "reference")
    if not parts:
        return ""
    text = ", and ".join(parts)
    return " " + text[0].upper() + text[1:] + "."


def explain_case(
    metrics: Mapping[str, float | None],
    ref_sources: Sequence[str],
    ref_labels: Sequence[str],
    cit_sources: Sequence[str],
    cit_labels: Sequence[str],
    expected_display: Sequence[str],
    expected_hit: Sequence[bool],
    cited_display: Sequence[str],
    cited_hit: Sequence[bool],
    ref_wrong_cited: Sequence[bool] | None = None,
) -> dict[str, str]:
    """Explain each metric of one case in a sentence or two.

    Args:
        metrics: The case's six metric values.
        ref_sources, ref_labels: Each reference's source (as written) and label.
        cit_sources, cit_labels: Each citation's source (as written) and label.
        expected_display, expected_hit: Each distinct expected source (as first written) and
            whether it was cited.
        cited_display, cited_hit: Each distinct cited source and whether it is expected.
        ref_wrong_cited: For each reference, whether a citation of its source has a wrong
            passage (label ``wrong_passage``). A ``passage_missed`` reference without one is
            "not cited" rather than blamed on a wrong citation. Default: all True.

    Returns:
        Keys ``context_recall``, ``context_precision``, ``context``, ``source_recall``,
        ``source_precision`` and ``source``.
    """
    out: dict[str, str] = {}
    ref_labels, cit_labels = list(ref_labels), list(cit_labels)
    n_ref, n_cit = len(ref_labels), len(cit_labels)
    k_ref = ref_labels.count("cited")
    k_cit = cit_labels.count("supported")

    # Context recall.
    if n_ref == 0:
        out["context_recall"] = (
            "There are no ground-truth passages, so context recall is "
            f"{_fmt(metrics['context_recall'])} by the zero-division rule.")
    elif k_ref == n_ref:
        out["context_recall"] = (
            f"The only ground-truth passage, from {ref_sources[0]}, is matched by a response "
            "citation — all expected evidence passages are cited." if n_ref == 1 else
            f"All {n_ref} ground-truth passages ({_join(_unique(ref_sources))}) are matched by "
            "response citations — all expected evidence passages are cited.")
    else:
        matched = _unique([s for s, lab in zip(ref_sources, ref_labels) if lab == "cited"])
        if k_ref:
            lead = (f"Only the {_join(matched)} passage{'s' if k_ref > 1 else ''} "
                    f"match{'' if k_ref > 1 else 'es'} {'their' if k_ref > 1 else 'its'} "
                    f"ground-truth reference{'s' if k_ref > 1 else ''} ({k_ref} of {n_ref}).")
        elif n_ref == 1:
            lead = (f"The only ground-truth passage, from {ref_sources[0]}, is not matched by "
                    "any response citation.")
        else:
            lead = (f"None of the {n_ref} ground-truth passages are matched by a response "
                    "citation.")
        out["context_recall"] = lead + _reference_details(ref_sources, ref_labels,
                                                          ref_wrong_cited)

    # Context precision.
    if n_cit == 0:
        out["context_precision"] = (
            "The response cites nothing, so context precision is "
            f"{_fmt(metrics['context_precision'])} by the zero-division rule.")
    elif k_cit == n_cit:
        out["context_precision"] = (
            "The only response citation matches a ground-truth reference — there are no "
            "spurious citations." if n_cit == 1 else
            f"All {n_cit} response citations match ground-truth references — there are no "
            "spurious citations.")
    else:
        matched = _unique([s for s, lab in zip(cit_sources, cit_labels) if lab == "supported"])
        if k_cit:
            lead = (f"Only the {_join(matched)} citation{'s' if k_cit > 1 else ''} "
                    f"match{'' if k_cit > 1 else 'es'} a ground-truth reference "
                    f"({k_cit} of {n_cit}).")
        elif n_cit == 1:
            lead = (f"The only response citation, from {cit_sources[0]}, does not match any "
                    "ground-truth reference.")
        else:
            lead = f"None of the {n_cit} response citations match a ground-truth reference."
        if n_cit == 1 and cit_labels[0] == "unexpected_source":
            # "X has no matching ground-truth reference" would repeat the lead.
            details = f" {cit_sources[0]} is not an expected source."
        else:
            details = _citation_details(cit_sources, cit_labels)
        out["context_precision"] = lead + details
    out["context"] = _summary("context", metrics["context_recall"], metrics["context_precision"])

    # Source recall.
    n_exp, k_exp = len(expected_display), list(expected_hit).count(True)
    if n_exp == 0:
        out["source_recall"] = ("No source documents are expected, so source recall is "
                                f"{_fmt(metrics['source_recall'])} by the zero-division rule.")
    elif k_exp == n_exp:
        out["source_recall"] = (
            f"{expected_display[0]}, the only expected source, appears in the response "
            "citations." if n_exp == 1 else
            f"All {n_exp} expected sources ({_join(expected_display)}) appear in the response "
            "citations.")
    elif k_exp == 0:
        out["source_recall"] = (f"None of the expected sources ({_join(expected_display)}) "
                                f"{'is' if n_exp == 1 else 'are'} cited.")
    else:
        hit = [s for s, ok in zip(expected_display, expected_hit) if ok]
        miss = [s for s, ok in zip(expected_display, expected_hit) if not ok]
        out["source_recall"] = (
            f"{_join(hit)} {'are' if len(hit) > 1 else 'is'} cited, but {_join(miss)} "
            f"{'are' if len(miss) > 1 else 'is'} not ({k_exp} of {n_exp} expected sources).")

    # Source precision.
    n_cs, k_cs = len(cited_display), list(cited_hit).count(True)
    if n_cs == 0:
        out["source_precision"] = ("The response cites no source documents, so source "
                                   f"precision is {_fmt(metrics['source_precision'])} by the "
                                   "zero-division rule.")
    elif k_cs == n_cs:
        out["source_precision"] = (
            f"The only cited document, {cited_display[0]}, is among the expected sources."
            if n_cs == 1 else
            f"All {n_cs} cited documents ({_join(cited_display)}) are among the expected "
            "sources.")
    elif k_cs == 0:
        out["source_precision"] = (f"None of the cited documents ({_join(cited_display)}) "
                                   f"{'is' if n_cs == 1 else 'are'} among the expected sources.")
    else:
        good = [s for s, ok in zip(cited_display, cited_hit) if ok]
        bad = [s for s, ok in zip(cited_display, cited_hit) if not ok]
        out["source_precision"] = (
            f"{_join(good)} {'are' if len(good) > 1 else 'is an'} expected "
            f"source{'s' if len(good) > 1 else ''}, but {_join(bad)} "
            f"{'are' if len(bad) > 1 else 'is'} not ({k_cs} of {n_cs} cited sources are "
            "expected).")
    out["source"] = _summary("source", metrics["source_recall"], metrics["source_precision"])
    return out

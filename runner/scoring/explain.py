"""The words of the metrics' sentences: a case's explanations, in the style of the seed's
examples, and the helpers of the run-level sentences (:meth:`Metric.sentence
<runner.scoring.metrics.Metric.sentence>`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple


class Facts(NamedTuple):
    """What a case's explanations say: its metric values, and per reference, citation and
    distinct source what happened (sources as written).

    Attributes:
        metrics: The case's metric values.
        ref_sources, ref_labels: Each reference's source and label.
        cit_sources, cit_labels: Each citation's source and label.
        expected_display, expected_hit: Each distinct expected source (as first written) and
            whether it was cited.
        cited_display, cited_hit: Each distinct cited source and whether it is expected.
        ref_wrong_cited: For each reference, whether a citation of its source has a wrong
            passage (label ``wrong_passage``); a ``passage_missed`` reference without one is
            "not cited" rather than blamed on a wrong citation.
    """

    metrics: Mapping[str, float | None]
    ref_sources: Sequence[str]
    ref_labels: Sequence[str]
    cit_sources: Sequence[str]
    cit_labels: Sequence[str]
    expected_display: Sequence[str]
    expected_hit: Sequence[bool]
    cited_display: Sequence[str]
    cited_hit: Sequence[bool]
    ref_wrong_cited: Sequence[bool]


def undefined(value: Any) -> bool:
    """Whether a figure is undefined: None, NaN or infinite."""
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def signed(value: Any, digits: int = 3) -> str:
    """A difference with its sign: ``+0.012``, ``-0.034``, ``0.000`` (no sign), ``n/a``."""
    if undefined(value):
        return "n/a"
    text = f"{float(value):+.{digits}f}"
    return text[1:] if float(text) == 0.0 else text  # no sign on a difference that shows as 0


def percent(part: float | None, whole: float = 1.0) -> str:
    """``part / whole`` (a share when `whole` is left out) as a whole percentage that never
    rounds a partial share to 0 or 100; ``n/a`` when undefined."""
    if not whole or part is None:
        return "n/a"
    share = part / whole
    if 0 < share < 0.005:
        return "<1%"
    if 0.995 <= share < 1:
        return ">99%"
    return f"{100 * share:.0f}%"


def plural(n: int, word: str) -> str:
    """``1 citation``, ``2 citations``."""
    return f"{n} {word if n == 1 else word + 's'}"


def count_of(metrics: Mapping[str, Any], section: str, key: str) -> int | None:
    """A count of a ``metrics.json`` section (``counts``, ``labels``), or None."""
    value = (metrics.get(section) or {}).get(key)
    return int(value) if isinstance(value, (int, float)) else None


def listing(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (``""`` for none)."""
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def _labelled(sources: Sequence[str], labels: Sequence[str], *names: str) -> list[str]:
    """The distinct sources (in order) of the items labelled one of `names`."""
    return list(dict.fromkeys(s for s, lab in zip(sources, labels) if lab in names))


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def _by_rule(premise: str, name: str, value: float | None) -> str:
    """The sentence of a metric whose denominator is empty."""
    return f"{premise}, so {name} is {_fmt(value)} by the zero-division rule."


def summary(kind: str, r: float | None, p: float | None) -> str:
    if r is not None and p is not None and r == p:
        if r == 1.0:
            return f"Both {kind} recall and precision are perfect."
        if r == 0.0:
            return f"Both {kind} recall and precision are zero."
        return f"{kind.capitalize()} recall and precision are equal at {r:.2f}."
    return f"{kind.capitalize()} recall is {_fmt(r)} and {kind} precision is {_fmt(p)}."


def _part(shown: Sequence[str], n: int, lead: str, one: str, many: str, rest: str) -> str:
    """`lead`, the `shown` sources, the words for one item or for `n` > 1, and `rest` (``the a
    and b citations use a wrong passage``); "" when no source is shown."""
    return f"{lead}{listing(shown)} {one if n == 1 else many} {rest}" if shown else ""


def _sentence(parts: Sequence[str]) -> str:
    """The parts that say something as one sentence after a space ("" for none)."""
    parts = [p for p in parts if p]
    if not parts:
        return ""
    text = ", and ".join(parts)  # a source name starts it as written (``b.md``), never capitalised
    return " " + (text[0].upper() + text[1:] if text.startswith("the ") else text) + "."


def _reference_details(ref_sources: Sequence[str], ref_labels: Sequence[str],
                       ref_wrong_cited: Sequence[bool]) -> str:
    missed_passage = [(s, w) for s, lab, w in zip(ref_sources, ref_labels, ref_wrong_cited)
                      if lab == "passage_missed"]
    # The source's citation quotes a passage that matches nothing: "uses a wrong passage".
    wrong = list(dict.fromkeys(s for s, w in missed_passage if w))
    # Every citation of the source matches some other reference: this passage is just not cited.
    others = [s for s, w in missed_passage if not w]
    missed = _labelled(ref_sources, ref_labels, "source_missed")
    return _sentence([
        _part(wrong, len(wrong), "the ", "citation uses", "citations use", "a wrong passage"),
        _part(list(dict.fromkeys(others)), len(others), "the other ", "passage is", "passages are",
              "not cited"),
        _part(missed, len(missed), "", "is", "are", "not cited at all")])


def _citation_details(cit_sources: Sequence[str], cit_labels: Sequence[str]) -> str:
    wrong = _labelled(cit_sources, cit_labels, "wrong_passage")
    unexpected = _labelled(cit_sources, cit_labels, "unexpected_source")
    other = _labelled(cit_sources, cit_labels, "other_source")
    return _sentence([
        _part(other, len(other), "the ", "citation matches", "citations match",
              "only a passage of another document"),
        _part(wrong, len(wrong), "the ", "citation uses", "citations use", "a wrong passage"),
        _part(unexpected, len(unexpected), "", "has", "have",
              "no matching ground-truth reference")])


def context_recall(value: float | None, ref_sources: Sequence[str], ref_labels: list[str],
                    ref_wrong_cited: Sequence[bool]) -> str:
    n_ref, k_ref = len(ref_labels), ref_labels.count("cited")
    if n_ref == 0:
        return _by_rule("There are no ground-truth passages", "context recall", value)
    if k_ref == n_ref:
        return (f"The only ground-truth passage, from {ref_sources[0]}, is matched by a response "
                "citation — all expected evidence passages are cited." if n_ref == 1 else
                f"All {n_ref} ground-truth passages ({listing(list(dict.fromkeys(ref_sources)))}) "
                "are matched by response citations — all expected evidence passages are cited.")
    matched = _labelled(ref_sources, ref_labels, "cited")
    if k_ref:
        lead = _part(matched, k_ref, "Only the ", "passage matches its ground-truth reference",
                     "passages match their ground-truth references", f"({k_ref} of {n_ref}).")
    elif n_ref == 1:
        lead = (f"The only ground-truth passage, from {ref_sources[0]}, is not matched by "
                "any response citation.")
    else:
        lead = f"None of the {n_ref} ground-truth passages are matched by a response citation."
    return lead + _reference_details(ref_sources, ref_labels, ref_wrong_cited)


def context_precision(value: float | None, cit_sources: Sequence[str],
                       cit_labels: list[str]) -> str:
    n_cit = len(cit_labels)
    k_cit = cit_labels.count("supported") + cit_labels.count("other_source")
    if n_cit == 0:
        return _by_rule("The response cites nothing", "context precision", value)
    if k_cit == n_cit:
        return ("The only response citation matches a ground-truth reference — there are no "
                "spurious citations." if n_cit == 1 else
                f"All {n_cit} response citations match ground-truth references — there are no "
                "spurious citations.") + _citation_details(cit_sources, cit_labels)
    matched = _labelled(cit_sources, cit_labels, "supported", "other_source")
    if k_cit:
        lead = _part(matched, k_cit, "Only the ", "citation matches", "citations match",
                     f"a ground-truth reference ({k_cit} of {n_cit}).")
    elif n_cit == 1:
        lead = (f"The only response citation, from {cit_sources[0]}, does not match any "
                "ground-truth reference.")
    else:
        lead = f"None of the {n_cit} response citations match a ground-truth reference."
    if n_cit == 1 and cit_labels[0] == "unexpected_source":
        # "X has no matching ground-truth reference" would repeat the lead.
        return lead + f" {cit_sources[0]} is not an expected source."
    return lead + _citation_details(cit_sources, cit_labels)


def source_recall(value: float | None, expected: Sequence[str], hit: Sequence[bool]) -> str:
    n_exp, k_exp = len(expected), list(hit).count(True)
    if n_exp == 0:
        return _by_rule("No source documents are expected", "source recall", value)
    if k_exp == n_exp:
        return (f"{expected[0]}, the only expected source, appears in the response citations."
                if n_exp == 1 else
                f"All {n_exp} expected sources ({listing(expected)}) appear in the response "
                "citations.")
    if k_exp == 0:
        return (f"None of the expected sources ({listing(expected)}) "
                f"{'is' if n_exp == 1 else 'are'} cited.")
    yes, no = ([s for s, ok in zip(expected, hit) if bool(ok) == want] for want in (True, False))
    return (f"{listing(yes)} {'are' if len(yes) > 1 else 'is'} cited, but {listing(no)} "
            f"{'are' if len(no) > 1 else 'is'} not ({k_exp} of {n_exp} expected sources).")


def source_precision(value: float | None, cited: Sequence[str], hit: Sequence[bool]) -> str:
    n_cs, k_cs = len(cited), list(hit).count(True)
    if n_cs == 0:
        return _by_rule("The response cites no source documents", "source precision", value)
    if k_cs == n_cs:
        return (f"The only cited document, {cited[0]}, is among the expected sources."
                if n_cs == 1 else
                f"All {n_cs} cited documents ({listing(cited)}) are among the expected sources.")
    if k_cs == 0:
        return (f"None of the cited documents ({listing(cited)}) "
                f"{'is' if n_cs == 1 else 'are'} among the expected sources.")
    good, bad = ([s for s, ok in zip(cited, hit) if bool(ok) == want] for want in (True, False))
    return (f"{listing(good)} {'are' if len(good) > 1 else 'is an'} expected "
            f"source{'s' if len(good) > 1 else ''}, but {listing(bad)} "
            f"{'are' if len(bad) > 1 else 'is'} not ({k_cs} of {n_cs} cited sources are "
            "expected).")

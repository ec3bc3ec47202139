"""The metrics (SPEC 5), each declared once: its name, display names, the counts its formula
reads, the formula (in its docstring, as ranx keeps them), its band texts, its sentences and
its gate key (``gate.<name>``).

Aggregation, gates, the summary line, the reports and the tracked metric names iterate these
declarations. Defining a :class:`Metric` subclass with a ``name`` registers it in
:data:`METRICS`; the config's ``scoring.metrics`` (``<name>: {_target_: <class>}``) adds one
from outside the package to a run.

Counting rules: citations are a list, so the same passage cited twice counts twice in context
precision; sources are sets of normalised names. Empty denominators follow ``zero_division``:

* ``auto`` (default): a recall with nothing expected is 1.0; a precision with nothing cited is
  1.0 when nothing was expected either, else 0.0.
* ``nan``: the value is undefined (``None``) and left out of the means.
* ``zero`` / ``one``: the value is 0.0 / 1.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from runner.scoring import explain as ex
from runner.scoring.explain import Facts, count_of, listing, percent, plural

ZERO_DIVISION_POLICIES: tuple[str, ...] = ("auto", "nan", "zero", "one")
# A case's counts, in this order wherever they are a tuple; the metrics follow from them alone.
COUNT_KEYS: tuple[str, ...] = (
    "references", "references_matched", "citations", "citations_matched",
    "expected_sources", "cited_sources", "sources_hit",
)
_RULE = "the value comes from the zero-division rule (scoring.zero_division)."


def recall(hits: int, expected: int, zero_division: str = "auto") -> float | None:
    """hits / expected; with nothing expected: 1.0 (auto), None (nan), 0.0 (zero), 1.0 (one)."""
    if expected:
        return hits / expected
    return {"auto": 1.0, "nan": None, "zero": 0.0, "one": 1.0}[zero_division]


def precision(hits: int, cited: int, expected: int, zero_division: str = "auto") -> float | None:
    """hits / cited; with nothing cited: under ``auto`` 1.0 if nothing was expected, else 0.0."""
    if cited or zero_division != "auto":  # the rule of a recall
        return recall(hits, cited, zero_division)
    return 1.0 if expected == 0 else 0.0


def f1(p: float | None, r: float | None) -> float | None:
    """2PR / (P + R); 0.0 when P + R = 0; None when either is undefined."""
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)

def _pooled(m: Mapping[str, Any], name: str, keys: tuple[str, str], noun: str, empty: str,
            verbs: tuple[str, str], said: str, rest: tuple[tuple[str, str, str], ...],
            none: str) -> str | None:
    """The pooled sentence of context metric `name`: `hit` of `whole` (the ``counts`` of
    `keys`; their share is its ``micro`` figure) `noun`s and what is `said` of them, then each
    label of `rest` (its key, its phrase for one and for several) that counts the others, or
    "none is `none`"."""
    whole, hit = (count_of(m, "counts", key) for key in keys)
    if whole is None or hit is None:
        return None
    if whole == 0:
        return f"No scored case {empty}: " + _RULE
    text = (f"{hit} of {plural(whole, noun)} ({percent((m.get('micro') or {}).get(name))}) "
            f"{verbs[0] if hit == 1 else verbs[1]}{said}")
    if hit == whole:
        return f"{text}; none is {none}."
    parts = [f"{n} {one if n == 1 else many}" for key, one, many in rest
             if (n := count_of(m, "labels", key) or 0)]
    return text + ("; " + listing(parts) if parts else "") + "."



class Metric:
    """A metric: a formula over a case's counts (:data:`COUNT_KEYS`), and how it is shown.

    A subclass sets the class attributes and :meth:`value` (the formula in its docstring); the
    per-case value, the macro mean over cases, the micro value of the pooled counts, bands,
    histograms and intervals then follow without further code.

    Attributes:
        name: Its key in ``metrics.json``, ``cases.parquet``, the gates and the tracked metrics.
        title: Its display name (``Context Recall``); short: a column header (``Ctx R``).
        about: What it measures, in one sentence (the run report's card).
        mean_of: What its macro mean averages (``per-case context recalls``).
        counts: The counts its formula reads.
        band_text: What the ``green``, ``medium`` and ``red`` bands mean (1.0, 0.5 and 0.0;
            the report's legend).
        explains: The key of its explanation of a case (None: it has none).
        summary: Its group and letter in the summary line (``context R/P/F1 ...``); None: it is
            shown there by name.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    short: ClassVar[str] = ""
    about: ClassVar[str] = ""
    mean_of: ClassVar[str] = ""
    counts: ClassVar[tuple[str, ...]] = ()
    band_text: ClassVar[tuple[str, ...]] = ()
    explains: ClassVar[str | None] = None
    summary: ClassVar[tuple[str, str] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            METRICS[cls.name] = cls()

    def value(self, c: Mapping[str, int], zero_division: str) -> float | None:
        """The metric of a case (or of counts pooled over cases) with counts `c`."""
        raise NotImplementedError

    def sentence(self, m: Mapping[str, Any]) -> str | None:
        """The pooled counts behind a run's value (``metrics.json`` `m`), or None."""
        return None

    def explain(self, facts: Facts) -> str:
        """This metric of one case in a sentence or two."""
        raise NotImplementedError


METRICS: dict[str, Metric] = {}
"""Every declared metric by name (a subclass registers itself)."""


class ContextRecall(Metric):
    """Context recall = references_matched / references: the ground-truth passages matched by
    at least one citation."""

    name, title, short = "context_recall", "Context Recall", "Ctx R"
    about = ("The fraction of ground-truth reference passages matched by at least one response "
             "citation.")
    mean_of, explains = "per-case context recalls", "context_recall"
    summary = ("context", "R")
    counts = ("references_matched", "references")
    band_text = (
        "All ground-truth passages are each matched by at least one response citation - "
        "the model correctly cited all expected supporting passages.",
        "Half of the ground-truth passages are matched by at least one response "
        "citation - the model cited some but not all expected supporting passages.",
        "None of the ground-truth passages are matched by any response citation - the "
        "model failed to cite any of the expected supporting passages.",
    )

    def value(self, c: Mapping[str, int], zero_division: str) -> float | None:
        return recall(c["references_matched"], c["references"], zero_division)

    def sentence(self, m: Mapping[str, Any]) -> str | None:
        return _pooled(m, self.name, ("references", "references_matched"), "ground-truth passage",
                       "has a ground-truth passage", ("is", "are"), " matched by a citation",
                       (("reference_passage_missed", "is missed although its document is cited",
                         "are missed although their document is cited"),
                        ("reference_source_missed", "belongs to a document not cited",
                         "belong to documents not cited")), "missed")

    def explain(self, facts: Facts) -> str:
        return ex.context_recall(facts.metrics[self.name], facts.ref_sources,
                                 list(facts.ref_labels), facts.ref_wrong_cited)


class ContextPrecision(Metric):
    """Context precision = citations_matched / citations: the citations (duplicates counted)
    that match at least one ground-truth passage."""

    name, title, short = "context_precision", "Context Precision", "Ctx P"
    about = ("The fraction of response citations whose passage matches at least one "
             "ground-truth reference.")
    mean_of, explains = "per-case context precisions", "context_precision"
    summary = ("context", "P")
    counts = ("citations_matched", "citations", "references")
    band_text = (
        "All response citations' passages each match at least one ground-truth "
        "reference - every citation is correct and refers to an expected supporting "
        "passage.",
        "Half of the response citations' passages match a ground-truth reference - "
        "some citations are correct while others are spurious or refer to an "
        "unexpected passage.",
        "None of the response citations' passages match any ground-truth reference - all "
        "citations are spurious or refer to an unexpected passage.",
    )

    def value(self, c: Mapping[str, int], zero_division: str) -> float | None:
        return precision(c["citations_matched"], c["citations"], c["references"], zero_division)

    def sentence(self, m: Mapping[str, Any]) -> str | None:
        other = count_of(m, "labels", "citation_other_source") or 0
        return _pooled(m, self.name, ("citations", "citations_matched"), "citation",
                       "cites anything", ("matches", "match"), " a ground-truth passage" + (
                           f" ({other} of them only a passage of another document)" if other
                           else ""),
                       (("citation_wrong_passage", "cites an expected document but a passage "
                         "that matches none", "cite an expected document but a passage that "
                         "matches none"),
                        ("citation_unexpected_source", "cites a document that is not expected",
                         "cite a document that is not expected")), "spurious")

    def explain(self, facts: Facts) -> str:
        return ex.context_precision(facts.metrics[self.name], facts.cit_sources,
                                    list(facts.cit_labels))


class F1(Metric):
    """The harmonic mean of a recall and a precision, declared by :class:`ContextF1` and
    :class:`SourceF1`."""

    of: ClassVar[tuple[Metric, Metric]]

    def value(self, c: Mapping[str, int], zero_division: str) -> float | None:
        r, p = (m.value(c, zero_division) for m in self.of)
        return f1(p, r)

    def sentence(self, m: Mapping[str, Any]) -> str | None:
        micro = (m.get("micro") or {}).get(self.name)
        if not isinstance(micro, (int, float)):
            return None
        return f"From the counts pooled over all cases it is {micro:.3f}."

    def explain(self, facts: Facts) -> str:
        r, p = (facts.metrics[m.name] for m in self.of)
        return ex.summary(str(self.explains), r, p)


class ContextF1(F1):
    """Context F1 = 2PR / (P + R) of context precision P and recall R; 0.0 when P + R = 0."""

    name, title, short = "context_f1", "Context F1", "Ctx F1"
    about = "The harmonic mean of context recall and context precision."
    mean_of, explains = "per-case harmonic means of context recall and precision", "context"
    summary = ("context", "F1")
    of = (METRICS["context_recall"], METRICS["context_precision"])
    counts = (*ContextRecall.counts, *ContextPrecision.counts[:2])
    band_text = (
        "The harmonic mean of context recall and precision is high - the model cites "
        "the expected passages and little else.",
        "The harmonic mean of context recall and precision is middling - some expected "
        "passages are missed or some citations are spurious.",
        "The harmonic mean of context recall and precision is low - the cited passages "
        "hardly overlap the expected ones.",
    )


class _SourceShare(Metric):
    """sources_hit / |a source set| of the case (see :class:`SourceRecall`)."""

    whole: ClassVar[str]
    other: ClassVar[str]
    noun: ClassVar[str]
    verb: ClassVar[str]

    def value(self, c: Mapping[str, int], zero_division: str) -> float | None:
        if self.whole == "expected_sources":
            return recall(c["sources_hit"], c[self.whole], zero_division)
        return precision(c["sources_hit"], c[self.whole], c[self.other], zero_division)

    def sentence(self, m: Mapping[str, Any]) -> str | None:
        whole, hit = count_of(m, "counts", self.whole), count_of(m, "counts", "sources_hit")
        if whole is None or hit is None:
            return None
        if whole == 0:
            return (f"No scored case has a{'n' if self.noun[0] == 'e' else ''} {self.noun}: "
                    + _RULE)
        share = (m.get("micro") or {}).get(self.name)  # hit / whole
        return (f"{hit} of {plural(whole, self.noun)} ({percent(share)}), counted per "
                f"case, {'is' if hit == 1 else 'are'} {self.verb}; {whole - hit} "
                f"{'is' if whole - hit == 1 else 'are'} not.")


class SourceRecall(_SourceShare):
    """Source recall = |S_exp ∩ S_cit| / |S_exp| = sources_hit / expected_sources, over the
    normalised source names of the case."""

    name, title, short = "source_recall", "Source Recall", "Src R"
    about = ("The fraction of expected source documents that appear in the response "
             "citations.")
    mean_of, explains = "per-case source recalls", "source_recall"
    summary = ("source", "R")
    counts = ("sources_hit", "expected_sources")
    whole, other, noun, verb = "expected_sources", "cited_sources", "expected document", "cited"
    band_text = (
        "The expected source documents appear in at least one response citation each - "
        "the model correctly cited all expected sources.",
        "Half of the expected source documents appear in a response citation - the "
        "model cited some expected sources but omitted others.",
        "The expected source documents do not appear in any response citation - the model "
        "failed to cite any of the expected sources.",
    )

    def explain(self, facts: Facts) -> str:
        return ex.source_recall(facts.metrics[self.name], facts.expected_display,
                                facts.expected_hit)


class SourcePrecision(_SourceShare):
    """Source precision = |S_cit ∩ S_exp| / |S_cit| = sources_hit / cited_sources."""

    name, title, short = "source_precision", "Source Precision", "Src P"
    about = ("The fraction of response-cited source documents that are among the expected "
             "sources.")
    mean_of, explains = "per-case source precisions", "source_precision"
    summary = ("source", "P")
    counts = ("sources_hit", "cited_sources", "expected_sources")
    whole, other, noun, verb = "cited_sources", "expected_sources", "cited document", "expected"
    band_text = (
        "The cited source documents are all among the expected sources - these "
        "citations refer to expected source documents only.",
        "Half of the cited source documents are among the expected sources - some "
        "citations refer to correct sources while others are unexpected or "
        "irrelevant.",
        "The cited source documents are not among the expected sources - these citations "
        "refer to unexpected or irrelevant source documents.",
    )

    def explain(self, facts: Facts) -> str:
        return ex.source_precision(facts.metrics[self.name], facts.cited_display,
                                   facts.cited_hit)


class SourceF1(F1):
    """Source F1 = 2PR / (P + R) of source precision P and recall R; 0.0 when P + R = 0."""

    name, title, short = "source_f1", "Source F1", "Src F1"
    about = "The harmonic mean of source recall and source precision."
    mean_of, explains = "per-case harmonic means of source recall and precision", "source"
    summary = ("source", "F1")
    of = (METRICS["source_recall"], METRICS["source_precision"])
    counts = ("sources_hit", "expected_sources", "cited_sources")
    band_text = (
        "The harmonic mean of source recall and precision is high - the model cites the "
        "expected documents and little else.",
        "The harmonic mean of source recall and precision is middling - some expected "
        "documents are missed or some cited documents are unexpected.",
        "The harmonic mean of source recall and precision is low - the cited documents "
        "hardly overlap the expected ones.",
    )


METRIC_KEYS: tuple[str, ...] = tuple(METRICS)
"""The built-in metrics, in the order every output lists them."""
LIMITS = ("max_error_rate", "max_fabricated")
"""The gates that bound a share from above (runner/scoring/gates.py), after the metrics'."""


def declared(names: Any) -> list[Metric]:
    """The declarations of `names` (metric names; unknown names are skipped)."""
    return [METRICS[n] for n in names if n in METRICS]


def summary_figures(values: Mapping[str, float | None]) -> str:
    """The metrics of `values` for the summary line: ``context R/P/F1 0.806/0.283/0.408  source
    R/P/F1 ...``, each group in the order of its first metric; a metric without a group as
    ``<name> <value>``."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for name, value in values.items():
        shown = "n/a" if value is None else f"{value:.3f}"
        group, letter = getattr(METRICS.get(name), "summary", None) or (name, "")
        groups.setdefault(group, []).append((letter, shown))
    return "  ".join(f"{g} {'/'.join(a for a, _ in items)}{' ' if items[0][0] else ''}"
                     f"{'/'.join(v for _, v in items)}" for g, items in groups.items())

"""The demo's `loose_quotes` system: quotes as real systems make them, so the knobs show.

Every citation of `loose_quotes` names the right document and quotes (part of) the right
passage, as real systems do: verbatim, truncated, with an ellipsis, lightly reworded, re-chunked
across a sentence boundary, or paraphrased. Each reference/citation pair is built to fall in one
band of the `ngram` similarity (n = 3), and every other pair of a case has similarity 0, so each
match decision, and each figure, is worked out by hand from the table below:

    A  1.0          substring and ngram at every level match (verbatim, truncated, ellipsis,
                    or a re-chunked quote that holds the whole reference)
    B  [0.75, 1)    ngram strict (0.75), default and lenient match; substring does not
    C  [0.5, 0.75)  ngram default (0.5) and lenient match
    D  [0.3, 0.5)   only ngram lenient (0.3) matches
    E  below 0.3    nothing matches (a paraphrase no word-overlap matcher credits)

`ben-2`'s reference is empty: its Benefits Guide citation matches it under every setting.
`none-1` expects nothing and cites nothing: (1, 1 | 1, 1). All sources are right, so the source
figures are 1.0 under every setting; only the passage decisions move.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from runner import evaluate
from runner.data.dataset import Dataset
from runner.data.models import Case
from runner.matchers.ngram import NgramMatcher
from runner.matchers.substring import SubstringMatcher
from tests.conftest import REPO
from tests.data.test_demo_dataset import LABEL_KEYS, dataset_conf

F = Fraction
SYSTEM = "loose_quotes"

# The band of each reference's own citation (citation i quotes reference i), by hand.
BANDS: dict[str, str] = {
    "rw-1": "B",     # "shall" → "must"
    "ec-1": "A",     # truncated before "of resignation"
    "mix-1": "ADB",  # ellipsis; re-chunked across a sentence boundary; "store" → "keep"
    "rw-2": "A",     # truncated
    "rw-3": "D",     # reworded and shortened
    "rw-4": "C",     # reworded
    "ec-2": "B",     # "upon" → "on"
    "ec-3": "A",     # re-chunked: the sentence before plus the whole reference
    "ec-4": "E",     # paraphrase
    "ds-1": "AD",    # verbatim; reworded
    "ds-2": "B",     # "phishing emails that were opened" → "opened phishing emails"
    "ds-3": "C",     # re-chunked: the sentence before plus most of the reference
    "au-1": "A",     # truncated, lower case
    "au-2": "B",     # "prohibited" → "not allowed"
    "it-1": "A",     # ellipsis
    "it-2": "D",     # re-chunked: the end of the reference plus the next sentence
    "te-1": "B",     # "itemised" → "itemized"
    "te-2": "C",     # "flights shorter than six hours" → "short flights"
    "pto-1": "D",    # reworded
    "pto-2": "A",    # ellipsis
    "pto-3": "C",    # re-chunked: the sentence before plus the start of the reference
    "pto-4": "D",    # reworded
    "coc-1": "A",    # truncated
    "coc-2": "E",    # paraphrase
    "ben-1": "C",    # reworded
    "ben-2": "-",    # empty reference: any citation of its document matches
    "hs-1": "B",     # "by" → "through"
    "mix-2": "AE",   # truncated; a short reworded sentence
    "mix-3": "BA",   # "shall" → "must"; truncated at the front
    "none-1": "",    # nothing expected, nothing cited
}
LOW = {"A": F(1), "B": F(3, 4), "C": F(1, 2), "D": F(3, 10), "E": F(0)}
HIGH = {"A": F(1), "B": F(1), "C": F(3, 4), "D": F(1, 2), "E": F(3, 10)}

# Per setting, the bands that match. Context F1 per case: a one-reference case scores 1 when
# its band matches, else 0; a case with k references and one citation each scores
# (matched / k) for recall, precision and F1 alike. Counting the cases of the table:
#   single-reference cases: A 7, B 6, C 5, D 4, E 2, plus ben-2 and none-1 (always 1)
#   mix-1 ADB, ds-1 AD, mix-2 AE, mix-3 BA
# substring (A):     9 + 1/3 + 1/2 + 1/2 + 1/2      = 65/6 → / 30 = 13/36
# ngram strict (AB): 15 + 2/3 + 1/2 + 1/2 + 1       = 53/3 → / 30 = 53/90
# ngram default (ABC): 20 + 2/3 + 1/2 + 1/2 + 1     = 68/3 → / 30 = 34/45
# ngram lenient (ABCD): 24 + 1 + 1 + 1/2 + 1        = 55/2 → / 30 = 11/12
# Context recall and precision equal F1 (one citation per reference, each matching only its
# own). References matched (of 34, ben-2 included): A 11 + 1, B 8, C 5, D 6.
SETTINGS: dict[tuple[str, str], tuple[str, Fraction, int]] = {
    ("substring", "strict"): ("A", F(13, 36), 12),
    ("substring", "lenient"): ("A", F(13, 36), 12),
    ("ngram", "strict"): ("AB", F(53, 90), 20),
    ("ngram", "default"): ("ABC", F(34, 45), 25),
    ("ngram", "lenient"): ("ABCD", F(11, 12), 31),
}


@pytest.fixture(scope="module")
def demo() -> Dataset:
    return Dataset(dataset_conf("demo"))


@pytest.fixture(scope="module")
def cases(demo: Dataset) -> list[Case]:
    return list(demo.iter_cases())


def test_every_citation_names_its_reference_document(demo: Dataset,
                                                     cases: list[Case]) -> None:
    responses = demo.responses(SYSTEM) or {}
    assert list(responses) == [c.id for c in cases] == list(BANDS)
    for case in cases:
        cited = [c.source for c in responses[case.id].citations]
        assert cited == [r.source for r in case.references], case.id


def test_every_similarity_is_in_its_band(demo: Dataset, cases: list[Case]) -> None:
    responses = demo.responses(SYSTEM) or {}
    ngram, substring = NgramMatcher(), SubstringMatcher()
    for case in cases:
        cits = [c.content for c in responses[case.id].citations]
        for i, ref in enumerate(case.references):
            if not ref.content:
                continue
            sims = ngram.similarities([(ref.content, c) for c in cits])
            subs = substring.similarities([(ref.content, c) for c in cits])
            band = BANDS[case.id][i]
            assert LOW[band] <= F(sims[i]) <= HIGH[band], (case.id, i, sims[i])
            if band != "A":
                assert F(sims[i]) < HIGH[band], (case.id, i, sims[i])
            assert subs[i] == (1.0 if band == "A" else 0.0), (case.id, i)
            # Every other citation of the case shares no trigram with this reference.
            assert [s for j, s in enumerate(sims) if j != i] == [0.0] * (len(cits) - 1)


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_figures_per_matcher_and_level(demo: Dataset, cases: list[Case],
                                       setting: tuple[str, str]) -> None:
    matcher, level = setting
    _, f1, cited = SETTINGS[setting]
    result = evaluate(cases, matcher=matcher, threshold=level, responses=demo.responses(SYSTEM))
    assert (result.n_cases, result.n_scored) == (30, 30)
    for key in ("context_recall", "context_precision", "context_f1"):
        assert result.metrics[key] == pytest.approx(float(f1), rel=1e-12), key
    for key in ("source_recall", "source_precision", "source_f1"):
        assert result.metrics[key] == 1.0
    assert tuple(result.labels[k] for k in LABEL_KEYS) == (cited, 34 - cited, 0,
                                                           cited, 34 - cited, 0)


def readme_sweep() -> list[str]:
    """The README's sweep over matchers and threshold levels on `loose_quotes` (its args)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [m.group(1) for m in re.finditer(r"^ragcite (-m [^#\n]*?)\s*(?:#.*)?$", readme,
                                             re.MULTILINE)
             if "matcher=substring,ngram threshold=strict,lenient" in m.group(1)]
    assert lines, "the README's sweep example is gone"
    return shlex.split(lines[0])


def test_the_readme_sweep_shows_the_knobs(run_job_in: Callable[..., list[Any]],
                                          tmp_path: Path) -> None:
    args = readme_sweep()
    assert args[0] == "-m"
    params = dict(a.split("=", 1) for a in args[1:])
    assert params["model"] == "precomputed" and params["model.system"] == SYSTEM
    fixed = [f"{k}={v}" for k, v in params.items() if k not in ("matcher", "threshold")]
    # The sweep's jobs, as ragcite's sweeper launches them: one per matcher, each deciding
    # every threshold level from one pass.
    figures = {}
    for matcher in params["matcher"].split(","):
        levels = params["threshold"].split(",")
        outcomes = run_job_in(f"matcher={matcher}", f"scoring.threshold=[{','.join(levels)}]",
                              *fixed, out=tmp_path / matcher)
        for level, outcome in zip(levels, outcomes):
            assert outcome.threshold.level == level
            figures[matcher, level] = outcome.result.metrics["context_f1"]
    assert list(figures) == [("substring", "strict"), ("substring", "lenient"),
                             ("ngram", "strict"), ("ngram", "lenient")]
    for setting, value in figures.items():
        assert value == pytest.approx(float(SETTINGS[setting][1]), rel=1e-12), setting
    # 13/36, 53/90, 11/12: substring's levels coincide (its similarity is 0 or 1).
    assert len({round(v, 12) for v in figures.values()}) == 3

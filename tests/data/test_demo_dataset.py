"""The shipped demo dataset: its design rules, and every headline figure worked out by hand.

The demo's citations are built so that, under the default `ngram` matcher (n = 3, threshold
0.5), every reference/citation similarity is 1.0 (verbatim, truncated or ellipsis quotes) or
below 0.2 (unrelated passages). Each match decision is therefore obvious, and the figures below
were computed by hand from the case tables, not by running the code.

Per-case values are written (context recall, context precision | source recall, source
precision); a case not listed scores (1, 1 | 1, 1) or, where noted, the system's usual value.
Empty denominators use `zero_division=auto`: nothing expected → recall 1; nothing cited →
precision 1 if nothing was expected, else 0; something cited for nothing expected → 0.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from runner import evaluate
from runner.config.schema import DatasetConf
from runner.data.dataset import Dataset
from runner.data.loading import resolve_path
from runner.data.models import Case, Response
from runner.matchers.ngram import NgramMatcher
from runner.matchers.text import split_ellipsis
from runner.results import RunResult

CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"
SYSTEMS = ("wrong_documents", "wrong_passages", "mostly_right")
HEADLINE = ("context_recall", "context_precision", "source_recall", "source_precision")
F = Fraction


def dataset_conf(name: str) -> Any:
    """A `conf/dataset/<name>.yaml` merged onto its schema, as Hydra would (without Hydra)."""
    values = OmegaConf.load(CONF / f"{name}.yaml")
    values.pop("defaults")
    return OmegaConf.merge(OmegaConf.structured(DatasetConf), values)


@pytest.fixture(scope="module")
def demo() -> Dataset:
    return Dataset(dataset_conf("demo"))


@pytest.fixture(scope="module")
def cases(demo: Dataset) -> list[Case]:
    return list(demo.iter_cases())


@pytest.fixture(scope="module")
def results(demo: Dataset, cases: list[Case]) -> dict[str, RunResult]:
    return {s: evaluate(cases, matcher="ngram", responses=demo.responses(s)) for s in SYSTEMS}


def by_id(result: RunResult) -> dict[str, dict[str, float | None]]:
    return {c.id: c.metrics for c in result.cases}


# --- shape ------------------------------------------------------------------------------------


def test_demo_shape(demo: Dataset, cases: list[Case]) -> None:
    assert demo.name == "demo"
    assert len(cases) == 30
    assert sum(len(c.references) for c in cases) == 34
    assert [c.id for c in cases[:3]] == ["rw-1", "ec-1", "mix-1"]
    kb = demo.knowledge_base()
    assert len(kb) == 10
    assert len({d.source for d in kb}) == 10
    # The three systems below, then `loose_quotes` (tests/data/test_demo_loose_quotes.py) and
    # `markers` (tests/data/test_demo_markers.py).
    assert list(demo.cfg["systems"]) == [*SYSTEMS, "loose_quotes", "markers"]
    for system in list(demo.cfg["systems"]):
        responses = demo.responses(system)
        assert responses is not None
        assert list(responses) == [c.id for c in cases]
    # `model=precomputed` without a system replays the default one.
    assert demo.responses(None) == demo.responses("mostly_right")


def test_seed_examples_are_cases_with_their_exact_texts(cases: list[Case]) -> None:
    seed = {c.id: c for c in cases[:3]}
    assert seed["rw-1"].references[0].model_dump() == {
        "source": "Remote Work Policy.pdf",
        "content": "Employees shall submit a remote work request at least five (5) business "
                   "days prior to the requested start date."}
    assert seed["ec-1"].references[0].content == (
        "Employees are required to provide a minimum of four (4) weeks written notice of "
        "resignation.")
    assert [r.source for r in seed["mix-1"].references] == [
        "Data Security Policy.pdf", "Remote Work Policy.pdf", "Acceptable Use Policy.pdf"]


def test_every_passage_is_quoted_verbatim_from_its_document(
        demo: Dataset, cases: list[Case]) -> None:
    docs = {d.source.lower(): d.text for d in demo.knowledge_base()}
    passages = [(r.source, r.content) for c in cases for r in c.references]
    for system in SYSTEMS:
        responses = demo.responses(system) or {}
        passages += [(cit.source, cit.content) for r in responses.values()
                     for cit in r.citations]
    for source, content in passages:
        assert source.lower() in docs, source
        for part in split_ellipsis(content):
            assert part in docs[source.lower()], (source, part)


def test_every_similarity_is_far_from_the_threshold(demo: Dataset, cases: list[Case]) -> None:
    matcher = NgramMatcher()
    pairs = []
    for system in SYSTEMS:
        responses = demo.responses(system) or {}
        for case in cases:
            pairs += [(r.content, c.content) for r in case.references
                      for c in responses[case.id].citations if r.content and c.content]
    sims = matcher.similarities(pairs)
    assert len(sims) == 134
    assert all(s == 1.0 or s < 0.2 for s in sims), sorted(sims)


# --- the hand-computed figures ------------------------------------------------------------------
#
# mostly_right (right documents and passages, a few slips). 25 cases are perfect (1, 1 | 1, 1),
# including the edge cases: rw-2 truncated quote and rw-3 ellipsis quote (similarity 1.0: the
# overlap is measured on the shorter passage), rw-4 source in lower case (equal after
# normalisation), te-1 the same passage cited twice (both match), ben-2 an empty reference
# matched by a citation of its document, none-1 nothing expected and nothing cited. The slips:
#   mix-1  seed example 3: VPN ok, Remote Work wrong passage, IT Handbook  (1/3, 1/3 | 2/3, 2/3)
#   ec-3   right passage + the working-week sentence of the same contract  (1,   1/2 | 1,   1)
#   it-2   leavers sentence instead of the access-review sentence          (0,   0   | 1,   1)
#   pto-3  right passage + the "inform your manager" sentence              (1,   1/2 | 1,   1)
#   mix-3  cites the contract, misses the Code of Conduct                  (1/2, 1   | 1/2, 1)
# context recall    = (27 + 1/3 + 0 + 1/2) / 30         = 167/180
# context precision = (26 + 1/3 + 1/2 + 0 + 1/2) / 30   = 82/90  = 41/45
# source recall     = (28 + 2/3 + 1/2) / 30             = 175/180 = 35/36
# source precision  = (29 + 2/3) / 30                   = 89/90
# context F1 per case: 1 ×25, mix-1 1/3, ec-3 2/3, it-2 0, pto-3 2/3, mix-3 2/3 → 82/3 / 30
# source F1 per case: 1 ×28, mix-1 2/3, mix-3 2/3 → 88/3 / 30 = 44/45
#
# wrong_passages (right documents, wrong passages). 25 cases cite only wrong passages of the
# expected documents (0, 0 | 1, 1), including seed example 2 (ec-1) and mix-1 (three wrong
# passages of the three right documents). The others:
#   ds-1    passwords sentence ok + clean-desk sentence                    (1/2, 1/2 | 1, 1)
#   pto-2   the right passage                                              (1,   1   | 1, 1)
#   ben-2   empty reference: any Benefits Guide citation matches           (1,   1   | 1, 1)
#   none-1  nothing expected, one (pension) citation                      (1,   0   | 1, 0)
# context recall    = (1/2 + 1 + 1 + 1) / 30 = 7/2 / 30 = 7/60
# context precision = (1/2 + 1 + 1 + 0) / 30 = 5/2 / 30 = 1/12
# source recall     = 30 / 30 = 1
# source precision  = 29 / 30
# context F1: ds-1 1/2, pto-2 1, ben-2 1, none-1 0 → 5/2 / 30 = 1/12
# source F1: 1 ×29, none-1 0 → 29/30
#
# wrong_documents (wrong documents). 24 cases cite only other documents (0, 0 | 0, 0),
# including ben-2 (an empty reference is not matched by another document). The others:
#   mix-1   IT Handbook + the right Acceptable Use passage                 (1/3, 1/2 | 1/3, 1/2)
#   au-2    the right passage                                              (1,   1   | 1,   1)
#   te-1    the right passage + a Benefits Guide passage                   (1,   1/2 | 1,   1/2)
#   ben-1   the right passage                                              (1,   1   | 1,   1)
#   mix-2   the right Remote Work passage + an Acceptable Use passage      (1/2, 1/2 | 1/2, 1/2)
#   none-1  nothing expected, nothing cited                                (1,   1   | 1,   1)
# context recall = source recall       = (1/3 + 1 + 1 + 1 + 1/2 + 1) / 30 = 29/6 / 30 = 29/180
# context precision = source precision = (1/2 + 1 + 1/2 + 1 + 1/2 + 1) / 30 = 9/2 / 30 = 3/20
# F1 (both levels): mix-1 2/5, au-2 1, te-1 2/3, ben-1 1, mix-2 1/2, none-1 1
#                   → (2/5 + 2/3 + 1/2 + 3) / 30 = 137/30 / 30 = 137/900
EXPECTED: dict[str, dict[str, Fraction]] = {
    "mostly_right": {
        "context_recall": F(167, 180), "context_precision": F(41, 45),
        "source_recall": F(35, 36), "source_precision": F(89, 90),
        "context_f1": F(82, 90), "source_f1": F(44, 45),
    },
    "wrong_passages": {
        "context_recall": F(7, 60), "context_precision": F(1, 12),
        "source_recall": F(1), "source_precision": F(29, 30),
        "context_f1": F(1, 12), "source_f1": F(29, 30),
    },
    "wrong_documents": {
        "context_recall": F(29, 180), "context_precision": F(3, 20),
        "source_recall": F(29, 180), "source_precision": F(3, 20),
        "context_f1": F(137, 900), "source_f1": F(137, 900),
    },
}


@pytest.mark.parametrize("system", SYSTEMS)
def test_macro_means_match_the_hand_computation(results: dict[str, RunResult],
                                                system: str) -> None:
    result = results[system]
    assert (result.n_cases, result.n_scored, result.n_errors) == (30, 30, 0)
    for key, value in EXPECTED[system].items():
        assert result.metrics[key] == pytest.approx(float(value), rel=1e-12), key


# Citation and reference labels (SPEC 6), counted by hand from the tables above:
#   mostly_right: 36 citations; wrong passages: mix-1 Remote Work, ec-3, it-2, pto-3 (4);
#     unexpected source: mix-1 IT Handbook (1). 34 references; passage missed: mix-1 Remote
#     Work, it-2 (2); source missed: mix-1 Acceptable Use, mix-3 Code of Conduct (2).
#   wrong_passages: 35 citations, 3 supported (ds-1, pto-2, ben-2), 1 unexpected (none-1).
#   wrong_documents: 34 citations, 5 supported (mix-1, au-2, te-1, ben-1, mix-2), the rest
#     from unexpected sources; the 29 unmatched references all lost their source.
LABELS = {
    "mostly_right": (31, 4, 1, 30, 2, 2),
    "wrong_passages": (3, 31, 1, 3, 31, 0),
    "wrong_documents": (5, 0, 29, 5, 0, 29),
}
LABEL_KEYS = ("citation_supported", "citation_wrong_passage", "citation_unexpected_source",
              "reference_cited", "reference_passage_missed", "reference_source_missed")


@pytest.mark.parametrize("system", SYSTEMS)
def test_label_counts_show_the_failure_mode(results: dict[str, RunResult], system: str) -> None:
    labels = results[system].labels
    assert tuple(labels[k] for k in LABEL_KEYS) == LABELS[system]


def test_seed_examples_score_as_in_the_seed(results: dict[str, RunResult]) -> None:
    # SPEC 5: (1.0, 1.0 | 1.0, 1.0); (0.0, 0.0 | 1.0, 1.0); (0.33, 0.33 | 0.67, 0.67).
    def headline(system: str, case_id: str) -> list[float | None]:
        return [by_id(results[system])[case_id][k] for k in HEADLINE]

    assert headline("mostly_right", "rw-1") == [1.0, 1.0, 1.0, 1.0]
    assert headline("wrong_passages", "ec-1") == [0.0, 0.0, 1.0, 1.0]
    assert headline("mostly_right", "mix-1") == pytest.approx([1 / 3, 1 / 3, 2 / 3, 2 / 3],
                                                              rel=1e-12)


@pytest.mark.parametrize("system,case_id,expected", [
    # The empty reference of ben-2 is matched by any citation of its document...
    ("wrong_passages", "ben-2", [1.0, 1.0, 1.0, 1.0]),
    # ... and by no citation of another document.
    ("wrong_documents", "ben-2", [0.0, 0.0, 0.0, 0.0]),
    # No references: recall 1 (nothing expected); precision 1 only when nothing is cited.
    ("mostly_right", "none-1", [1.0, 1.0, 1.0, 1.0]),
    ("wrong_passages", "none-1", [1.0, 0.0, 1.0, 0.0]),
    # Two references of one document, one of them cited.
    ("wrong_passages", "ds-1", [0.5, 0.5, 1.0, 1.0]),
    # Truncated, ellipsis and lower-case-source quotes still match.
    ("mostly_right", "rw-2", [1.0, 1.0, 1.0, 1.0]),
    ("mostly_right", "rw-3", [1.0, 1.0, 1.0, 1.0]),
    ("mostly_right", "rw-4", [1.0, 1.0, 1.0, 1.0]),
    ("mostly_right", "mix-3", [0.5, 1.0, 0.5, 1.0]),
    ("wrong_documents", "te-1", [1.0, 0.5, 1.0, 0.5]),
    ("wrong_documents", "mix-2", [0.5, 0.5, 0.5, 0.5]),
])
def test_per_case_values(results: dict[str, RunResult], system: str, case_id: str,
                         expected: list[float]) -> None:
    metrics = by_id(results[system])[case_id]
    assert [metrics[k] for k in HEADLINE] == expected


def test_response_files_are_canonical_records() -> None:
    # Each line is exactly {"id", "answer", "citations"}: a user can copy the format.
    for system in (*SYSTEMS, "loose_quotes"):
        path = resolve_path(f"pkg://runner.datasets/demo/responses/{system}.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            assert set(record) == {"id", "answer", "citations"}
            Response.model_validate({k: v for k, v in record.items() if k != "id"})

"""Other tools' files load by name (issue 26, item 4): `dataset=ragas`, `dataset=alce`,
`dataset=langchain`, each over its ten hand-written cases (tests/data/<tool>/, CC0, the tools'
own field names), through ``runner.evaluate`` and through the command line.

The figures are worked by hand with the `substring` matcher (a match when the reference occurs
in the cited text or the cited text in the reference): every fixture tells the same ten library
questions, with a reference sentence each (two for cases 4 and 10), and each tool's system
cites other passages. P/R are per case (context | source); the headline is their mean.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import evaluate
from runner.data.dataset import Dataset
from runner.data.errors import DataError
from tests.conftest import only_run_dir, read_json, run_cli
from tests.data.test_shipped_datasets import dataset_conf

HERE = Path(__file__).resolve().parent
KEYS = ("context_recall", "context_precision", "context_f1", "source_recall",
        "source_precision", "source_f1")

# RAGAS, every retrieved context cited (the default). Case: retrieved contexts → (ctx P,
# ctx R | src P, src R):
#  1 hours doc, parking doc → 1/2, 1 | 1/2, 1      2 card doc → 1, 1 | 1, 1
#  3 loans' 2nd sentence, fines doc → 0, 0 | 1/2, 1   4 fines doc (2 refs) → 1, 2/2 | 1, 1
#  5 wifi, rooms, print docs → 1/3, 1 | 1/3, 1     6 rooms' 1st sentence → 1, 1 | 1, 1
#  7 e-books doc → 0, 0 | 0, 0                      8 kids, hours docs → 1/2, 1 | 1/2, 1
#  9 nothing retrieved → 0, 0 | 0, 0 (nothing cited, something expected)
# 10 e-books' 1st sentence, loans doc (refs e-books 1st, loans 2nd) → 1, 1 | 1, 1
# context R = 7/10; P = (.5+1+0+1+1/3+1+0+.5+0+1)/10 = 5.3333/10; F1 per case .6667, 1, 0, 1,
# .5, 1, 0, .6667, 0, 1 → 5.8333/10. source R = 8/10; P = 5.8333/10; F1 .6667, 1, .6667, 1,
# .5, 1, 0, .6667, 0, 1 → 6.5/10.
RAGAS = (0.7, 0.53333, 0.58333, 0.8, 0.58333, 0.65)
# LangChain, every source document cited:
#  1 hours, parking docs → 1/2, 1 | 1/2, 1         2 card's 1st sentence → 1, 1 | 1, 1
#  3 loans' 2nd sentence → 0, 0 | 1, 1             4 fines doc (2 refs) → 1, 1 | 1, 1
#  5 print, wifi docs → 1/2, 1 | 1/2, 1            6 rooms doc → 1, 1 | 1, 1
#  7 e-books' 1st sentence, card doc → 0, 0 | 0, 0
#  8 kids' 1st and 2nd sentences → 1/2, 1 | 1, 1   9 nothing → 0, 0 | 0, 0
# 10 e-books, loans, hours docs → 2/3, 1 | 2/3, 1
# context R 7/10, P 5.1667/10, F1 (.6667+1+0+1+.6667+1+0+.6667+0+.8)/10 = 5.8/10;
# source R 8/10, P 6.6667/10, F1 (.6667+1+1+1+.6667+1+0+1+0+.8)/10 = 7.1333/10.
LANGCHAIN = (0.7, 0.51667, 0.58, 0.8, 0.66667, 0.71333)

# ALCE, the docs the [k] markers point at cited (docs[k-1]); the ground truth is the
# `references` added to each item (ALCE files hold gold answers, not passages):
#  1 "[1]" hours → 1, 1 | 1, 1       2 "[1][2]" card, hours → 1/2, 1 | 1/2, 1
#  3 "[1]" fines (wrong doc) → 0, 0 | 0, 0
#  4 two sentences, each "[1]" fines (2 refs) → 2 citations, 2/2, 2/2 | 1, 1
#  5 "[1][3]" wifi, print → 1/2, 1 | 1/2, 1
#  6 "[4]" over 3 docs → dangling, nothing cited → 0, 0 | 0, 0
#  7 "[1]" print → 1, 1 | 1, 1         8 "[2]" kids → 1, 1 | 1, 1
#  9 no marker → nothing cited → 0, 0 | 0, 0
# 10 "[1]" e-books, "[2]" loans in one sentence → 1, 1 | 1, 1
# R = 7/10 both; P = (1+.5+0+1+.5+0+1+1+0+1)/10 = 6/10 both; F1 (1+.6667+0+1+.6667+0+1+1+0+1)
# /10 = 6.3333/10 both.
ALCE = (0.7, 0.6, 0.63333, 0.7, 0.6, 0.63333)


def cases(name: str, path: Path, **overrides: object) -> list:
    return list(Dataset(dataset_conf(name, path=str(path), **overrides)).iter_cases())


def headline(metrics: dict) -> tuple[float, ...]:
    return tuple(round(metrics[k], 5) for k in KEYS)


def cli_metrics(tmp_path: Path, *args: str) -> dict:
    proc = run_cli(["model=precomputed", "matcher=substring", "tracking=none", "report=none",
                    "progress=false", f"output_root={tmp_path}", *args], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_json(only_run_dir(tmp_path) / "metrics.json")["metrics"]


def test_ragas_samples_read_references_and_retrieved_contexts_by_their_ids() -> None:
    loaded = cases("ragas", HERE / "ragas" / "samples.jsonl")
    first = loaded[0]
    assert first.query == "When does the library close on weekdays?"
    assert [(r.source, r.content) for r in first.references] == [
        ("lib-hours", "The library opens at 9 a.m. and closes at 8 p.m. on weekdays.")]
    assert first.response is not None
    assert [c.source for c in first.response.citations] == ["lib-hours", "lib-parking"]
    assert first.metadata == {"reference": "It closes at 8 p.m. on weekdays."}
    assert [(d.id, d.source) for d in first.response.documents] == [
        ("lib-hours", "lib-hours"), ("lib-parking", "lib-parking")]
    assert loaded[1].metadata == {}  # no `reference` in the second sample
    assert headline(evaluate(loaded, matcher="substring").metrics) == RAGAS


def test_ragas_through_the_command_line(tmp_path: Path) -> None:
    metrics = cli_metrics(tmp_path, "dataset=ragas",
                          f"dataset.path={HERE / 'ragas' / 'samples.jsonl'}")
    assert headline(metrics) == RAGAS


def test_langchain_outputs_cite_their_source_documents() -> None:
    loaded = cases("langchain", HERE / "langchain" / "outputs.jsonl")
    assert loaded[7].response is not None
    assert [(c.source, c.content) for c in loaded[7].response.citations] == [
        ("docs/kids.md", "Story time for children runs every Saturday at 10 a.m. in the "
                         "children's corner."),
        ("docs/kids.md", "Parents stay with children under six.")]
    assert headline(evaluate(loaded, matcher="substring").metrics) == LANGCHAIN


def test_langchain_through_the_command_line(tmp_path: Path) -> None:
    metrics = cli_metrics(tmp_path, "dataset=langchain",
                          f"dataset.path={HERE / 'langchain' / 'outputs.jsonl'}")
    assert headline(metrics) == LANGCHAIN


GOOD = {"user_input": "q", "response": "a", "reference_contexts": ["r"],
        "reference_context_ids": ["x"], "retrieved_contexts": [], "retrieved_context_ids": []}
NO_IDS = {k: v for k, v in GOOD.items() if k != "retrieved_context_ids"}
ZIP_NULL = ("In function zip(), invalid type for value: None, expected one of: ['array'], "
            'received: "null"')


@pytest.mark.parametrize("row,field,problem", [
    ({**NO_IDS, "retrieved_contexts": ["a"]}, "mapping.citations", ZIP_NULL),
    ({"user_input": "q", "response": "a"}, "mapping.references", ZIP_NULL),
    ({**GOOD, "reference_context_ids": ["x", "y"]}, "mapping.references",
     "zip() of lists of 2 and 1 items; give lists of one length"),
])
def test_a_ragas_sample_without_its_ids_is_refused_with_its_line_and_field(
        tmp_path: Path, row: dict, field: str, problem: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError) as caught:
        cases("ragas", path)
    assert (caught.value.where, caught.value.field) == ("line 2", field)
    assert caught.value.problem.endswith(" failed: " + problem)


def test_alce_outputs_cite_the_docs_their_markers_point_at() -> None:
    loaded = cases("alce", HERE / "alce" / "result.json")
    assert [c.id for c in loaded][:2] == ["lib-1", "lib-2"]
    second = loaded[1].response
    assert second is not None
    assert [(c.source, c.claim) for c in second.citations] == [
        ("Library cards", "Residents get a library card for free [1][2]."),
        ("Opening hours", "Residents get a library card for free [1][2].")]
    assert second.citations[0].content == (
        "A library card is free for residents of Harbor City. Visitors pay 20 euros a year "
        "for a card.")
    assert [len(c.response.citations) for c in loaded if c.response] == [
        1, 2, 1, 2, 2, 0, 1, 1, 0, 2]
    assert [c.response.dangling for c in loaded if c.response] == [0] * 5 + [1] + [0] * 4
    assert loaded[0].metadata == {"answer": "It closes at 8 p.m. on weekdays."}
    assert headline(evaluate(loaded, matcher="substring").metrics) == ALCE


def test_alce_through_the_command_line(tmp_path: Path) -> None:
    metrics = cli_metrics(tmp_path, "dataset=alce",
                          f"dataset.path={HERE / 'alce' / 'result.json'}")
    assert headline(metrics) == ALCE


def test_ragas_answers_with_markers_cite_only_the_marked_contexts(tmp_path: Path) -> None:
    # With mapping.citations=null the markers cite: the first answer's [2] cites the second
    # context (the reference: every figure 1); the second answer carries no marker, so it cites
    # nothing (every figure 0).
    path = tmp_path / "s.jsonl"
    rows = [{"user_input": "q1", "response": "It closes at eight [2].",
             "retrieved_contexts": ["x", "r"], "retrieved_context_ids": ["d1", "d2"],
             "reference_contexts": ["r"], "reference_context_ids": ["d2"]},
            {"user_input": "q2", "response": "No idea.", "retrieved_contexts": ["r"],
             "retrieved_context_ids": ["d2"], "reference_contexts": ["r"],
             "reference_context_ids": ["d2"]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = cases("ragas", path, mapping={"citations": None})
    assert [[(c.source, c.content, c.claim) for c in case.response.citations]
            for case in loaded if case.response] == [[("d2", "r", "It closes at eight [2].")], []]
    assert headline(evaluate(loaded, matcher="substring").metrics) == (0.5,) * 6


def test_zip_pairs_parallel_lists_in_any_mapping(tmp_path: Path) -> None:
    from runner import load_cases

    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"q": "q", "docs": ["a", 7], "texts": ["one", "two"]}) + "\n")
    (case,) = load_cases(path, mapping={
        "query": "q", "references": "zip(docs, texts)[*].{source: to_string([0]), content: [1]}"})
    assert [(r.source, r.content) for r in case.references] == [("a", "one"), ("7", "two")]

"""Inline markers over retrieved documents (SPEC 2.1, runner/data/citations/markers.py): each
form read into citations worked out by hand, through the model, `runner.evaluate` and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.data.citations import markers
from runner.data.models import Response, RetrievedDocument
from tests.conftest import run_cli

A, B, C = "the cat sat on the mat", "dogs bark at night", "birds sing at dawn"
DOCS = [RetrievedDocument(source="a", text=A), RetrievedDocument(source="b", text=B),
        RetrievedDocument(source="c", text=C)]


def cited(answer: str, docs: list[RetrievedDocument] = DOCS) -> tuple[list[tuple[str, str]], int]:
    """The (source, claim) of each citation the markers make, and the dangling count."""
    found, dangling = markers.read(answer, docs)
    assert all(c["content"] == {"a": A, "b": B, "c": C}[c["source"]] for c in found)
    return [(c["source"], c["claim"]) for c in found], dangling


@pytest.mark.parametrize(("answer", "expected"), [
    # [k] cites documents[k-1]; the claim is the sentence carrying the marker.
    ("Cats sit [1]. Dogs bark [2].", [("a", "Cats sit [1]."), ("b", "Dogs bark [2].")]),
    # A list and a range: one citation per number, in the order written.
    ("Both [1, 3].", [("a", "Both [1, 3]."), ("c", "Both [1, 3].")]),
    ("All [1-3].", [("a", "All [1-3]."), ("b", "All [1-3]."), ("c", "All [1-3].")]),
    ("All [1–2].", [("a", "All [1–2]."), ("b", "All [1–2].")]),  # an en dash
    ("Two [2][3]!", [("b", "Two [2][3]!"), ("c", "Two [2][3]!")]),
    # A footnote, and the assistants' form: the number before ':' or '†'.
    ("Noted[^2]. Done", [("b", "Noted[^2].")]),
    ("Seen 【3:0†source】 here? Yes", [("c", "Seen 【3:0†source】 here?")]),
    ("Seen 【1†L1-L4】", [("a", "Seen 【1†L1-L4】")]),
    # Markers right after a full stop close the sentence before them.
    ("Cats sit. [1] Dogs bark.[2] Birds.", [("a", "Cats sit. [1]"), ("b", "Dogs bark.[2]")]),
    # ... also at the end of the answer.
    ("Cats sit. Dogs bark. [2]", [("b", "Dogs bark. [2]")]),
    # Chinese and Japanese full stops end sentences with no space after them.
    ("猫が座った【1†a】。犬が吠える[2]！",
     [("a", "猫が座った【1†a】。"), ("b", "犬が吠える[2]！")]),
    ("猫坐着[1]？狗叫[3]。", [("a", "猫坐着[1]？"), ("c", "狗叫[3]。")]),
    # A line break ends a sentence; a document cited twice in one sentence is one citation.
    ("- cats [1] [1]\n- dogs [2]", [("a", "- cats [1] [1]"), ("b", "- dogs [2]")]),
])
def test_each_numeric_form_cites_its_documents_with_their_claims(
        answer: str, expected: list[tuple[str, str]]) -> None:
    assert cited(answer) == (expected, 0)


def test_a_marker_past_the_last_document_is_dangling_not_cited() -> None:
    # [4] and [0] point at no document of three; [2-5] cites b and c, and 4 and 5 dangle.
    assert cited("Cats [1][4]. None [0]. Some [2-5].") == (
        [("a", "Cats [1][4]."), ("b", "Some [2-5]."), ("c", "Some [2-5].")], 4)


def test_a_range_names_at_most_100_documents() -> None:
    # [1-1000000] reads 1..100: three cited, 97 dangling (not a million).
    assert cited("All [1-1000000].")[1] == 97


def test_id_markers_name_a_document_by_its_id() -> None:
    docs = [RetrievedDocument(id="doc-7", source="a", text=A),
            RetrievedDocument(id="Source A", source="b", text=B)]
    assert cited("Cats [doc-7]. Dogs [ Source A ]. Birds [doc-9].", docs) == (
        [("a", "Cats [doc-7]."), ("b", "Dogs [ Source A ].")], 1)


def test_a_numeric_marker_names_the_document_whose_id_it_is() -> None:
    # Numbered by id in another order: [1] is the document with id "1", not the first one.
    docs = [RetrievedDocument(id="2", source="a", text=A), RetrievedDocument(id="1", source="b",
                                                                             text=B)]
    assert cited("Dogs [1].", docs) == ([("b", "Dogs [1].")], 0)


def test_brackets_that_are_not_markers_count_for_nothing() -> None:
    # Without document ids, [sic] and [a] are text; a link and an ellipsis never are markers.
    assert cited("He said [sic] that [a] is [...] and [link](http://x) [1].") == (
        [("a", "He said [sic] that [a] is [...] and [link](http://x) [1].")], 0)
    # With ids, any other bracketed word is an id marker: [sic] names no document, dangling 1.
    docs = [RetrievedDocument(id="x", source="a", text=A)]
    assert cited("Cats [x] [sic] [...].", docs) == ([("a", "Cats [x] [sic] [...].")], 1)


def test_the_response_reads_markers_only_without_citations() -> None:
    docs = [{"source": "a", "text": A}]
    read = Response.model_validate({"answer": "Cats [1] [2].", "documents": docs})
    assert [(c.source, c.content, c.claim) for c in read.citations] == [
        ("a", A, "Cats [1] [2].")]
    assert (read.dangling, read.unread_markers) == (1, 0)
    # Citations given: the markers are not read, but counted as unread ([1] and [2]: 2).
    given = Response.model_validate({"answer": "Cats [1] [2].", "documents": docs,
                                     "citations": [{"source": "b", "content": "x"}]})
    assert ([c.source for c in given.citations], given.dangling, given.unread_markers) == (
        ["b"], 0, 2)
    # A response read back (the response cache, a results record) is read the same.
    assert Response.model_validate(read.model_dump(mode="json")) == read


def case(k: str, ref: tuple[str, str], answer: str, ids: bool = False) -> dict[str, Any]:
    docs = [{"source": "a", "text": A}, {"source": "b", "text": B}]
    if ids:
        docs = [{"id": f"doc-{d['source']}", **d} for d in docs]
    return {"id": k, "query": "q", "references": [{"source": ref[0], "content": ref[1]}],
            "response": {"answer": answer, "documents": docs}}


# Two cases over the documents [a, b]; case 1's reference is a's text, case 2's b's. A
# citation of a document quotes its whole text: ngram similarity 1.0 with its own reference, 0.0
# with the other (no shared trigram). Expected: context recall, context precision, source
# precision (macro means over the two cases).
FORMS = [
    # a in both: case 1 recall 1, precision 1/1; case 2 recall 0, precision 0/1.
    ("numeric", "Cats [1].", "Dogs [1].", (0.5, 0.5, 0.5)),
    # a and b in both: each case recall 1, precision 1/2, source precision 1/2.
    ("list", "All [1, 2].", "All [1, 2].", (1.0, 0.5, 0.5)),
    ("range", "All [1-2].", "All [1-2].", (1.0, 0.5, 0.5)),
    ("adjacent", "All [1][2].", "All [1][2].", (1.0, 0.5, 0.5)),
    # b in both: case 1 recall 0, precision 0; case 2 recall 1, precision 1.
    ("footnote", "Cats[^2].", "Dogs[^2].", (0.5, 0.5, 0.5)),
    ("assistants", "Cats【2:0†source】.", "Dogs【2†source】.", (0.5, 0.5, 0.5)),
]


@pytest.mark.parametrize(("form", "one", "two", "expected"), FORMS, ids=[f[0] for f in FORMS])
def test_evaluate_scores_each_marker_form(form: str, one: str, two: str,
                                          expected: tuple[float, float, float]) -> None:
    result = runner.evaluate([case("1", ("a", A), one), case("2", ("b", B), two)])
    m = result.metrics
    assert (m["context_recall"], m["context_precision"], m["source_precision"]) == expected
    # As metrics.json writes it: counts, never booleans (False == 0 would hide one).
    assert json.dumps(result.extra["dangling"]) == '{"citations": 0, "answers": 0}'


def test_evaluate_scores_id_markers_and_counts_dangling_ones() -> None:
    # Case 1 cites a by its id (every figure 1); case 2's [doc-z] and [3] point at no document:
    # no citation (recall 0, precision 0 under `auto` with a reference expected), 2 dangling.
    result = runner.evaluate([case("1", ("a", A), "Cats [doc-a].", ids=True),
                              case("2", ("b", B), "Dogs [doc-z] [3].", ids=True)])
    assert (result.metrics["context_recall"], result.metrics["context_precision"]) == (0.5, 0.5)
    assert result.extra["dangling"] == {"citations": 2, "answers": 1}
    assert result.cases[1].response["dangling"] == 2


def test_the_cli_scores_markers_and_shows_dangling_ones(tmp_path: Path) -> None:
    # Case 1 cites a ([1]: recall 1, precision 1) and [5] dangles; case 2 cites a (wrong:
    # recall 0, precision 0): context R/P/F1 0.5; sources: case 1 1/1, case 2 0/1: 0.5.
    lines = [case("1", ("a", A), "Cats [1]. And [5]."), case("2", ("b", B), "Dogs [1].")]
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))
    proc = run_cli(["dataset=file", "dataset.path=m.jsonl", "model=precomputed",
                    "tracking=none", "progress=false", "hydra.run.dir=out"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ("threshold 0.5: context R/P/F1 0.500/0.500/0.500  source R/P/F1 0.500/0.500/0.500"
            in proc.stderr)
    figures = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert figures["dangling"] == {"citations": 1, "answers": 1}
    frame = runner.read_results(tmp_path / "out")
    assert list(frame["id"]) == ["1", "2"]
    report = (tmp_path / "out" / "report.html").read_text()
    assert ("1 citation (markers or provider citations) in 1 answer points at no document: "
            "counted, not cited.") in report


def test_a_mapping_reads_the_documents_of_a_foreign_record(tmp_path: Path) -> None:
    # `documents` maps like `answer` and `citations` (into the response): the markers cite a
    # and b, a matches the one reference (recall 1/1, precision 1/2), b cites another source
    # (source precision 1/2).
    record = {"q": "Where did the cat sit?", "out": "On the mat [1]. Dogs bark [2].",
              "docs": [{"title": "a", "body": A}, {"title": "b", "body": B}],
              "gold": [{"title": "a", "body": A}]}
    (tmp_path / "f.jsonl").write_text(json.dumps(record) + "\n")
    cases = runner.load_cases(tmp_path / "f.jsonl", mapping={
        "query": "q", "answer": "out", "documents": "docs[].{source: title, text: body}",
        "references": "gold[].{source: title, content: body}"})
    m = runner.evaluate(cases).metrics
    assert (m["context_recall"], m["context_precision"], m["source_precision"]) == (1.0, 0.5,
                                                                                     0.5)

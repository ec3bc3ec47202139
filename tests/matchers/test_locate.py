"""`matcher=locate`: the overlap of where two passages lie, worked out by hand.

The knowledge base (after fold) and its character offsets:

    leave.md   "employees get 25 days of paid leave per year. unused days expire in march."
               sentence 1 [0, 45), sentence 2 [46, 74)
    travel.md  "travel is approved by the line manager."  [0, 39)
    假期.md     "员工每年享有二十五天带薪年假。未休的年假在次年三月作废。"
               one character an offset: sentence 1 [0, 15), sentence 2 [15, 28)
    差旅.md     "出差须经直属经理批准。"  [0, 11)

A passage in no document is scored by `ngram` (n = 3; each Chinese character a token) and
counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import evaluate
from runner.matchers.locate import LocateMatcher
from tests.conftest import read_json, run_cli

DOCS = [
    {"source": "leave.md", "text": "Employees get 25 days of paid leave per year. Unused days "
     "expire in March."},
    {"source": "travel.md", "text": "Travel is approved by the line manager."},
    {"source": "假期.md", "text": "员工每年享有二十五天带薪年假。未休的年假在次年三月作废。"},
    {"source": "差旅.md", "text": "出差须经直属经理批准。"},
]
REF = "Employees get 25 days of paid leave per year."  # leave.md [0, 45)
REF_ZH = "员工每年享有二十五天带薪年假。"  # 假期.md [0, 15)
PAIRS = [
    # "paid leave per year. unused days expire in march." is [25, 74): it shares [25, 45) with
    # the reference, 20 of the shorter span's 45 characters.
    (REF, "paid leave per year. Unused days expire in March.", 20 / 45),
    # Not verbatim: its words align with "employees ... paid" [0, 29) (6 of its 7 words in
    # order, 12 / 14 >= 0.55); the reference holds all of that span: 29 / 29.
    (REF, "employees get 25 days of paid vacation", 1.0),
    (REF, "Travel is approved by the line manager.", 0.0),  # in another document
    # "带薪年假。未休的年假在次年三月作废。" is [10, 28): it shares [10, 15) with the reference,
    # 5 of the shorter span's 15 characters.
    (REF_ZH, "带薪年假。未休的年假在次年三月作废。", 5 / 15),
    (REF_ZH, "出差须经直属经理批准。", 0.0),  # in another document (差旅.md)
    # The reference is in no document: ngram. Its trigrams: parking is free, is free for, free
    # for all, for all staff, all staff members (5); the citation's: the first three and "for
    # all visitors" (4); 3 shared over the shorter side's 4.
    ("Parking is free for all staff members.", "parking is free for all visitors", 3 / 4),
    # In no document either: 停车场对所有员工免费开放 has 10 character trigrams, the citation's
    # 停车场对所有员工免费 8, all of them shared: 8 / 8.
    ("停车场对所有员工免费开放。", "停车场对所有员工免费", 1.0),
]


def _kb(folder: Path) -> Path:
    path = folder / "kb.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), "utf-8")
    return path


def test_similarity_is_the_overlap_of_the_located_spans(tmp_path: Path) -> None:
    matcher = LocateMatcher(knowledge_base=[{"path": str(_kb(tmp_path))}])
    assert matcher.similarities([(ref, cit) for ref, cit, _ in PAIRS]) == [
        pytest.approx(want) for *_, want in PAIRS]
    assert matcher.fallback() == {"pairs": 7, "fell_back": 2, "to": "ngram"}


def test_evaluate_scores_cases_by_where_their_passages_lie(tmp_path: Path) -> None:
    # Case 1 cites PAIRS[0] and PAIRS[2]'s citations for its English reference; case 2 cites
    # PAIRS[3]'s for its Chinese one and PAIRS[6]'s for a reference in no document.
    cases = [{"id": "en", "query": "q", "references": [{"source": "leave.md", "content": REF}],
              "response": {"citations": [{"source": "leave.md", "content": PAIRS[0][1]},
                                         {"source": "travel.md", "content": PAIRS[2][1]}]}},
             {"id": "zh", "query": "q", "references": [
                 {"source": "假期.md", "content": REF_ZH},
                 {"source": "停车.md", "content": PAIRS[6][0]}],
              "response": {"citations": [{"source": "假期.md", "content": PAIRS[3][1]},
                                         {"source": "停车.md", "content": PAIRS[6][1]}]}}]
    matcher = LocateMatcher(knowledge_base=[{"path": str(_kb(tmp_path))}])
    result = evaluate(cases, matcher=matcher)
    assert result.cases[0].similarity == [[pytest.approx(20 / 45), 0.0]]
    # Rows are references, columns citations. REF_ZH is located but 停车场对所有员工免费 is in
    # no document, and the other reference is in none: ngram, no trigram shared (0) but for
    # PAIRS[6] (1.0).
    assert result.cases[1].similarity == [[pytest.approx(5 / 15), 0.0],
                                          [0.0, pytest.approx(1.0)]]
    # Matches at 0.5: en none (0.444 < 0.5); zh the second reference only.
    assert [c.metrics["context_recall"] for c in result.cases] == [0.0, 0.5]
    assert matcher.fallback() == {"pairs": 6, "fell_back": 3, "to": "ngram"}


@pytest.mark.parametrize("workers", [1, 2])
def test_the_run_summary_says_how_many_pairs_fell_back(tmp_path: Path, workers: int) -> None:
    _kb(tmp_path)
    cases = [{"id": str(k), "query": "q", "references": [{"source": "x", "content": ref}],
              "response": {"answer": "a", "citations": [{"source": "x", "content": cit}]}}
             for k, (ref, cit, _) in enumerate(PAIRS)]
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), "utf-8")
    proc = run_cli(["tracking=none", "report=none", "progress=false", "dataset=file",
                    "dataset.path=cases.jsonl", "dataset.knowledge_base.path=kb.jsonl",
                    "model=precomputed", "matcher=locate", f"scoring.workers={workers}"],
                   tmp_path)  # 2 workers: the one batch is scored in a forked process
    assert proc.returncode == 0, proc.stderr
    # Matches at 0.5 (similarities as in PAIRS): 1.0, 1.0 and 0.75 of the 7 cases.
    assert ("context R/P/F1 0.429/0.429/0.429" in proc.stderr and "; 2 of 7 pairs fell back to "
            "ngram)" in proc.stderr), proc.stderr
    (metrics,) = [read_json(p) for p in (tmp_path / "outputs").rglob("metrics.json")]
    assert metrics["matcher"]["fallback"] == {"pairs": 7, "fell_back": 2, "to": "ngram"}


def test_without_a_knowledge_base_every_pair_falls_back_to_ngram_and_is_said(
        tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(json.dumps(
        {"id": "1", "query": "q", "references": [{"source": "x", "content": PAIRS[5][0]}],
         "response": {"answer": "a", "citations": [{"source": "x", "content": PAIRS[5][1]}]}}
    ) + "\n", "utf-8")
    proc = run_cli(["tracking=none", "report=none", "progress=false", "dataset=file",
                    "dataset.path=cases.jsonl", "model=precomputed", "matcher=locate"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    # ngram's 3 / 4 (PAIRS[5]) matches at 0.5: every figure 1.0.
    assert ("context R/P/F1 1.000/1.000/1.000" in proc.stderr
            and "; 1 of 1 pair fell back to ngram)" in proc.stderr), proc.stderr

"""ragcite-compare's label shift: each label's share in A and B, and the passages that moved
between labels, with their cases (hand-worked counts), in the JSON and in Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from runner.data.models import Case, Citation, Reference, Response
from runner.reports.compare import main
from tests.reports.conftest import (
    DEVICES,
    ENCRYPTION,
    IMG,
    SCRIPT,
    TRAINING,
    VPN,
    build_run,
    load_json,
    parse,
    screenshot,
)
from tests.reports.test_compare import _cases


def _mangle(text: str, every: int) -> str:
    return " ".join("zz" if i % every == 0 else w for i, w in enumerate(text.split()))


def _case(cid: str, ref: tuple[str, str], cits: list[tuple[str, str]]) -> Case:
    return Case(id=cid, query=f"q {cid}", references=[Reference(source=ref[0], content=ref[1])],
                response=Response(answer="a", citations=[Citation(source=s, content=c)
                                                         for s, c in cits]))


def threshold_cases(odd_id: str = "c4") -> list[Case]:
    """Ngram similarity of a citation to its reference: 0.375 for a text with every 5th word
    replaced, 0.0667 for every 3rd (tests/reports/conftest.py::fuzzy_cases)."""
    return [
        _case("c1", ("Data.pdf", VPN), [("Data.pdf", _mangle(VPN, 5))]),
        _case("c2", ("Remote.pdf", ENCRYPTION), [("Remote.pdf", _mangle(ENCRYPTION, 3))]),
        _case("c3", ("Use.pdf", DEVICES), [("Use.pdf", DEVICES)]),
        _case(odd_id, ("Data.pdf", VPN), [("Data.pdf", _mangle(VPN, 5)),
                                          ("Other.pdf", TRAINING)]),
    ]


@pytest.fixture
def threshold_pair(tmp_path: Path) -> tuple[Path, Path]:
    """The same responses at threshold 0.5 (A) and 0.3 (B). By hand: the 0.375 citations of
    c1 and c4 are wrong_passage in A and supported in B, their references passage_missed then
    cited; c2 (0.0667) stays wrong_passage / passage_missed, c3 supported / cited, c4's
    Other.pdf citation unexpected_source."""
    cases = threshold_cases(odd_id=f"c4{SCRIPT}{IMG}")
    a = build_run(tmp_path / "strict", cases, threshold=0.5, name="strict")
    b = build_run(tmp_path / "loose", cases, threshold=0.3, name="loose")
    return a, b


def test_label_moves_between_thresholds(threshold_pair: tuple[Path, Path],
                                        tmp_path: Path) -> None:
    out = tmp_path / "cmp.html"
    main([str(threshold_pair[0]), str(threshold_pair[1]), "--out", str(out)])
    labels = load_json(out.with_suffix(".json"))["labels"]
    odd = f"c4{SCRIPT}{IMG}"
    assert labels["transitions"] == {
        "citations": {"followed": 5, "kept": 3, "moves": [
            {"from": "wrong_passage", "to": "supported", "items": 2, "cases": ["c1", odd]}]},
        "references": {"followed": 4, "kept": 2, "moves": [
            {"from": "passage_missed", "to": "cited", "items": 2, "cases": ["c1", odd]}]},
    }
    shares = {s["key"]: (s["a"], s["b"], s["pp_text"]) for s in labels["shares"]}
    assert shares["citation_supported"] == ("1 of 5 citations (20.0%)",
                                            "3 of 5 citations (60.0%)", "+40.0 pp")
    assert shares["citation_wrong_passage"] == ("3 of 5 citations (60.0%)",
                                                "1 of 5 citations (20.0%)", "-40.0 pp")
    assert shares["citation_unexpected_source"][2] == "0.0 pp"
    assert shares["reference_cited"] == ("1 of 4 references (25.0%)",
                                         "3 of 4 references (75.0%)", "+50.0 pp")
    page = parse(out)
    key = "citations|wrong_passage|supported"
    assert page.text(data_move_items=key) == "2" and page.text(data_move_cases=key) == "2"
    assert page.text(data_move_ids=key) == f"c1, {odd}"
    assert page.text(data_pp="reference_passage_missed") == "-50.0 pp"
    assert SCRIPT not in page.html  # escaped


def test_other_systems_follow_references_not_changed_citations(tmp_path: Path) -> None:
    """B cites another clause in cases 10-21 (12 cases) and fails case 25: the 12 references
    move cited → passage_missed; the changed citations are other passages, not followed; the
    17 unchanged ones of the 29 paired cases keep their label."""
    a = build_run(tmp_path / "base", _cases(30, wrong={1, 2}), name="base")
    b = build_run(tmp_path / "cand", _cases(30, wrong={1, 2, *range(10, 22)}, fail={25}),
                  name="cand")
    out = tmp_path / "c.html"
    main([str(a), str(b), "--out", str(out)])
    moves = load_json(out.with_suffix(".json"))["labels"]["transitions"]
    assert moves["references"] == {"followed": 29, "kept": 17, "moves": [
        {"from": "cited", "to": "passage_missed", "items": 12,
         "cases": [f"c{i}" for i in range(10, 22)]}]}
    assert moves["citations"] == {"followed": 17, "kept": 17, "moves": []}


@pytest.mark.slow
def test_label_shift_in_chromium(threshold_pair: tuple[Path, Path], tmp_path: Path,
                                 open_page: Any) -> None:
    out = tmp_path / "cmp.html"
    main([str(threshold_pair[0]), str(threshold_pair[1]), "--out", str(out)])
    page, watch = open_page(out)
    row = page.locator('[data-move="citations|wrong_passage|supported"]')
    assert row.is_visible()
    cells = [t.strip() for t in row.locator("td").all_inner_texts()]
    assert cells == ["citations", "wrong_passage → supported", "2", "2",
                     f"c1, c4{SCRIPT}{IMG}"]
    assert page.locator('[data-pp="citation_supported"]').inner_text() == "+40.0 pp"
    assert page.locator('[data-move-summary="references"]').inner_text().strip() == (
        "references\t4 followed from A to B, 2 kept their label.")
    # A case id links to that case in the changed-cases table.
    page.locator('[data-move-ids="citations|wrong_passage|supported"] a', has_text="c1").click()
    assert page.evaluate("location.hash") == "#changed-" + str(
        [e["id"] for e in load_json(out.with_suffix(".json"))["changed"]].index("c1") + 1)
    screenshot(page, "compare-label-shift")
    assert page.evaluate("window.__xss") is None
    watch.assert_clean()


def test_figures_on_the_common_cases(tmp_path: Path) -> None:
    """A scores c0-c29 (c1, c2 cite a wrong clause: context recall 0 there, else 1); B only
    c0-c19, with c1, c2 and c10-c14 wrong. By hand: A's own mean context recall 28/30; on the
    20 common cases A 18/20 = 0.9 and B 13/20 = 0.65."""
    a = build_run(tmp_path / "a", _cases(30, wrong={1, 2}), name="a")
    b = build_run(tmp_path / "b", _cases(20, wrong={1, 2, *range(10, 15)}), name="b")
    out = tmp_path / "c.html"
    main([str(a), str(b), "--out", str(out)])
    summary = load_json(out.with_suffix(".json"))
    assert summary["pairing"]["same_cases"] is False
    recall = summary["metrics"]["context_recall"]
    assert recall["a"] == pytest.approx(28 / 30)
    assert (recall["a_common"], recall["b_common"]) == (pytest.approx(0.9), pytest.approx(0.65))
    page = parse(out)
    assert page.text(data_common="a|context_recall") == "0.900"
    assert page.text(data_common="b|context_recall") == "0.650"
    assert page.text(data_field="case-sets").startswith(
        "The two runs were not scored on the same cases: 20 cases were scored in both.")
    # The same cases: no note, no extra columns.
    same = tmp_path / "same.html"
    main([str(a), str(a), "--out", str(same)])
    assert load_json(same.with_suffix(".json"))["pairing"]["same_cases"] is True
    assert "data-common=" not in same.read_text() and 'data-field="case-sets"' not in \
        same.read_text()


@pytest.mark.slow
def test_common_case_figures_in_chromium(tmp_path: Path, open_page: Any) -> None:
    a = build_run(tmp_path / "a", _cases(30, wrong={1, 2}), name="a")
    b = build_run(tmp_path / "b", _cases(20, wrong={1, 2, *range(10, 15)}), name="b")
    out = tmp_path / "c.html"
    main([str(a), str(b), "--out", str(out)])
    page, watch = open_page(out)
    assert page.locator('[data-field="case-sets"]').is_visible()
    assert page.locator('[data-common="a|context_recall"]').inner_text() == "0.900"
    assert page.locator('[data-common="b|context_recall"]').inner_text() == "0.650"
    screenshot(page, "compare-common-cases")
    watch.assert_clean()


@pytest.mark.slow
def test_fidelity_share_shift_in_chromium(tmp_path: Path, open_page: Any) -> None:
    # The quotes of tests/reports/test_run_report.py (labels worked out in
    # tests/scoring/test_fidelity.py), one a case. A: 1 verbatim, 1 paraphrased, 1 misattributed,
    # 1 fabricated of 4 checked. B: the same, with the cafeteria sentence in a document of its
    # own, so the quote citing leave.md for it is misattributed: 0 fabricated, 2 misattributed.
    from tests.reports.test_run_report import FIDELITY_KB, FIDELITY_QUOTES

    cases = [_case(cid, ("leave.md", q), [("leave.md", q)]) for cid, q, *_ in FIDELITY_QUOTES]
    a = build_run(tmp_path / "a", cases, name="a", knowledge_base=FIDELITY_KB)
    b = build_run(tmp_path / "b", cases, name="b", knowledge_base={
        **FIDELITY_KB, "cafeteria.md": "The cafeteria serves free lunch on Fridays."})
    out = tmp_path / "cmp.html"
    main([str(a), str(b), "--out", str(out)])
    shares = {s["key"]: (s["a"], s["b"], s["pp_text"])
              for s in load_json(out.with_suffix(".json"))["labels"]["shares"]
              if s["kind"] == "checked quotes"}
    assert shares == {
        "fidelity_verbatim": ("1 of 4 checked quotes (25.0%)",) * 2 + ("0.0 pp",),
        "fidelity_paraphrased": ("1 of 4 checked quotes (25.0%)",) * 2 + ("0.0 pp",),
        "fidelity_misattributed": ("1 of 4 checked quotes (25.0%)",
                                   "2 of 4 checked quotes (50.0%)", "+25.0 pp"),
        "fidelity_stitched": ("0 of 4 checked quotes (0.0%)",) * 2 + ("0.0 pp",),
        "fidelity_fabricated": ("1 of 4 checked quotes (25.0%)",
                                "0 of 4 checked quotes (0.0%)", "-25.0 pp")}
    page, watch = open_page(out)
    row = page.locator('[data-share="fidelity_fabricated"] td')
    expect(row).to_have_text(["fabricated checked quotes", "1 of 4 checked quotes (25.0%)",
                              "0 of 4 checked quotes (0.0%)", "-25.0 pp"])
    watch.assert_clean()
    # Runs scored without a knowledge base have no fidelity counts, so no such rows.
    plain = tmp_path / "plain.html"
    main([str(build_run(tmp_path / "p1", cases)), str(build_run(tmp_path / "p2", cases)),
          "--out", str(plain)])
    assert not [s for s in load_json(plain.with_suffix(".json"))["labels"]["shares"]
                if s["key"].startswith("fidelity_")]

"""The run report's pair review: marks per reference × citation pair, kept in the browser's
local storage per report, exported as a labels file (``labels.jsonl``) made in the page, and the
pairs closest to the threshold listed first.

The browser tests open the report of the demo's ``loose_quotes`` system scored by ``ngram`` at
the default threshold 0.5 (its similarities sit in bands around the thresholds:
tests/data/test_demo_loose_quotes.py) and check every exported line against the passages of the
results files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from runner.reports.cases import texts_record
from runner.reports.run import render_run_report, render_run_reports, review_key
from runner.results import read_cases
from tests.reports.conftest import (
    CLOSE,
    IMG,
    REQUEST,
    VPN,
    build_job,
    build_run,
    fuzzy_cases,
    plain_cases,
    screenshot,
    xss_cases,
)

# --- the labels format ------------------------------------------------------------------------

REQUIRED: dict[str, type] = {"reference": str, "citation": str, "label": bool,
                             "reference_source": str, "citation_source": str, "case_id": str}
OPTIONAL: dict[str, type] = {"annotator": str, "note": str}


def check_labels(text: str) -> list[dict[str, Any]]:
    """The records of a labels file, each checked: one JSON object a line, every line ended,
    the required keys with their types, optional keys with theirs, no other key."""
    assert text == "" or text.endswith("\n"), "the last line is not ended"
    records = []
    for n, line in enumerate(text.split("\n")[:-1], 1):
        record = json.loads(line)
        assert isinstance(record, dict), f"line {n}: not an object"
        assert not REQUIRED.keys() - record.keys(), f"line {n}: missing keys"
        assert not record.keys() - REQUIRED.keys() - OPTIONAL.keys(), f"line {n}: unknown keys"
        for key, kind in {**REQUIRED, **OPTIONAL}.items():
            if key in record:
                assert type(record[key]) is kind, f"line {n}, {key}: not a {kind.__name__}"
        records.append(record)
    return records


GOOD = {"reference": "a", "citation": "b", "label": True, "reference_source": "d.pdf",
        "citation_source": "d.pdf", "case_id": "q1"}


def _line(**change: Any) -> str:
    return json.dumps({k: v for k, v in {**GOOD, **change}.items() if v is not None}) + "\n"


def test_the_format_checker_accepts_the_format() -> None:
    text = _line() + _line(label=False, annotator="Ada", note="n")
    assert check_labels(text) == [GOOD, {**GOOD, "label": False, "annotator": "Ada",
                                         "note": "n"}]
    assert check_labels("") == []


@pytest.mark.parametrize("text", [
    _line(label=1),              # an integer is not a boolean
    _line(label="true"),
    _line(case_id=None),         # a required key missing
    _line(reference=None),
    _line(annotator=3),
    _line(extra="x"),            # an unknown key
    _line().rstrip("\n"),        # the last line not ended
    "[1]\n",
])
def test_the_format_checker_refuses_other_lines(text: str) -> None:
    with pytest.raises(AssertionError):
        check_labels(text)


# --- what the report embeds for the review -----------------------------------------------


def test_passages_cut_in_the_report_are_flagged() -> None:
    shared = {"references": [{"source": "a", "content": "x" * 10}, {"source": "b",
                                                                     "content": "y" * 11}],
              "response": {"citations": [{"source": "a", "content": None},
                                         {"source": "c", "content": "z" * 12}]}}
    record = texts_record(shared, 10)
    assert record["Rc"] == [1] and record["Cc"] == [1]
    assert record["R"][0] == ["a", "x" * 10] and record["C"][0] == ["a", ""]
    assert "Rc" not in texts_record(shared, 12) and "Cc" not in texts_record(shared, 12)


def test_every_result_has_its_own_review_key(tmp_path: Path) -> None:
    started = "2026-12-02T10:00:00+00:00"  # tests/reports/conftest.py extra()
    run = build_run(tmp_path / "run-a", fuzzy_cases())
    dirs = build_job(tmp_path / "job", fuzzy_cases(), [0.3, 0.5])
    keys = []
    for folder in [run, *dirs]:
        render_run_reports([folder], [None], options={"embed": "json"})
        html = (folder / "report.html").read_text(encoding="utf-8")
        meta = json.loads(html.split('id="ragcite-meta">', 1)[1].split("</script>", 1)[0])
        keys.append(meta["review_key"])
    assert keys == [f"ragcite-review:run-a|{started}|0.5", f"ragcite-review:t0.3|{started}|0.3",
                    f"ragcite-review:t0.5|{started}|0.5"]
    # Re-rendering a result keeps its key (and so its marks).
    assert review_key(run, {"started_at": started, "threshold": 0.5}) == keys[0]


# --- in Chromium ----------------------------------------------------------------------------------


@pytest.fixture
def demo_report(run_job_in: Callable[..., list[Any]], tmp_path: Path) -> Path:
    """The run report of ``model=precomputed model.system=loose_quotes`` (ngram @ 0.5)."""
    (outcome,) = run_job_in("model=precomputed", "model.system=loose_quotes",
                            out=tmp_path / "loose")
    assert outcome.threshold.value == 0.5
    return render_run_report(outcome.folder, options={"embed": "gzip"})


def _pair(page: Any, case_id: str, r: int, c: int, mark: str, scope: str = "tr.detail") -> Any:
    key = json.dumps([case_id, r, c], separators=(",", ":"))
    return page.locator(f"{scope} [data-pair='{key}'] button[data-mark='{mark}']")


def _pressed(page: Any, scope: str) -> list[tuple[str, str]]:
    """The marks shown in `scope`: (pair key, mark) of every pressed button."""
    return [tuple(x) for x in page.locator(f"{scope} button[aria-pressed='true']").evaluate_all(
        "bs => bs.map(b => [b.parentNode.getAttribute('data-pair'), b.getAttribute('data-mark')])")]


def _open_case(page: Any, case_id: str) -> None:
    page.click(f'tr.case-row[data-case-id="{case_id}"]')
    expect(page.locator(f"tr.detail [data-pair^='[\"{case_id}\",']").first).to_be_visible()


def _closest(page: Any) -> list[tuple[str, str]]:
    return [tuple(x) for x in page.locator("#review-list li.review-item").evaluate_all(
        "li => li.map(x => [x.getAttribute('data-case-id'), x.getAttribute('data-pair-at')])")]


def _export(page: Any) -> str:
    with page.expect_download() as info:
        page.click("#review-export")
    download = info.value
    assert download.suggested_filename == "labels.jsonl"
    assert download.url.startswith("blob:")
    return Path(download.path()).read_text(encoding="utf-8")


def _expected(folder: Path, pairs: list[tuple[str, int, int, bool]],
              annotator: str | None = None,
              notes: dict[tuple[str, int, int], str] | None = None) -> list[str]:
    """The exported lines of `pairs`, (case id, reference, citation, label), from the results
    files: the passages whole, as the run read them; the annotator and notes as typed."""
    cases = {c.id: c for c in read_cases(folder)}
    lines = []
    for case_id, r, c, label in pairs:
        response = cases[case_id].response
        assert response is not None
        ref, cit = cases[case_id].references[r], response["citations"][c]
        record = {"reference": ref["content"], "citation": cit["content"], "label": label,
                  "reference_source": ref["source"], "citation_source": cit["source"],
                  "case_id": case_id}
        if annotator is not None:
            record["annotator"] = annotator
        if (case_id, r, c) in (notes or {}):
            record["note"] = (notes or {})[case_id, r, c]
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return lines


@pytest.mark.slow
def test_marks_persist_export_and_clear(demo_report: Path, open_page: Any) -> None:
    page, watch = open_page(demo_report)
    status = page.locator("#review-status")
    expect(status).to_have_text("No pair marked.")

    # Two pairs marked in the case view: rw-1's quote ("shall" → "must", similarity in [0.75,
    # 1)) is the same part; mix-1's R1 (VPN) and C2 (encryption) are different.
    _open_case(page, "rw-1")
    _pair(page, "rw-1", 0, 0, "same").click()
    _open_case(page, "mix-1")
    _pair(page, "mix-1", 0, 1, "different").click()
    page.locator("tr.detail [data-pair='[\"mix-1\",0,1]'] input.note").fill("VPN, not encryption")
    # Two in the list closest to the threshold: pto-1 unsure, mix-1's R2 × C2 same part (it
    # shows at once in mix-1's open view).
    page.click("#review-closest")
    _pair(page, "pto-1", 0, 0, "unsure", "#review-list").click()
    _pair(page, "mix-1", 1, 1, "same", "#review-list").click()
    assert _pressed(page, "tr.detail") == [('["rw-1",0,0]', "same"),
                                           ('["mix-1",0,1]', "different"),
                                           ('["mix-1",1,1]', "same")]
    page.fill("#review-annotator", "Ada")
    expect(status).to_have_text("4 marked: 2 same part, 1 different, 1 unsure.")
    screenshot(page, "review-marked")

    # A reload keeps the marks and the annotator.
    page.reload()
    page.locator("html[data-ready='1']").wait_for(state="attached")
    expect(status).to_have_text("4 marked: 2 same part, 1 different, 1 unsure.")
    assert page.locator("#review-annotator").input_value() == "Ada"
    _open_case(page, "mix-1")
    _open_case(page, "pto-1")
    assert page.locator("tr.detail input.note").evaluate_all("ns => ns.map(n => n.value)") == [
        "", "VPN, not encryption"] + [""] * 8
    assert _pressed(page, "tr.detail") == [('["mix-1",0,1]', "different"),
                                           ('["mix-1",1,1]', "same"),
                                           ('["pto-1",0,0]', "unsure")]

    # The export: the three same/different pairs, in case order, the passages whole.
    text = _export(page)
    records = check_labels(text)
    assert text.split("\n")[:-1] == _expected(demo_report.parent, [
        ("rw-1", 0, 0, True), ("mix-1", 0, 1, False), ("mix-1", 1, 1, True)], "Ada",
        {("mix-1", 0, 1): "VPN, not encryption"})
    assert [r["label"] for r in records] == [True, False, True]
    assert records[0]["reference"].startswith("Employees shall submit")
    expect(status).to_have_text("4 marked: 2 same part, 1 different, 1 unsure. Exported 3 to "
                                "labels.jsonl. Not exported: 1 unsure.")

    # Clearing takes a second click; then no mark is left, even after a reload.
    page.click("#review-clear")
    expect(page.locator("#review-clear")).to_have_text("Click again to clear 4 marks and 1 note")
    assert _pressed(page, "tr.detail") != []
    page.click("#review-clear")
    expect(status).to_have_text("No pair marked. Marks cleared.")
    assert _pressed(page, "body") == []
    assert page.locator("tr.detail input.note").evaluate_all("ns => ns.map(n => n.value)") == [
        ""] * 10
    page.reload()
    page.locator("html[data-ready='1']").wait_for(state="attached")
    expect(status).to_have_text("No pair marked.")
    _open_case(page, "mix-1")
    assert _pressed(page, "body") == []
    assert page.evaluate("() => Object.keys(localStorage)") == ["ragcite-review:annotator"]
    page.click("#review-export")
    expect(status).to_have_text("No pair marked. Nothing to export: mark pairs same part or "
                                "different.")
    # No request but the report itself, once per load (two reloads); no console error.
    assert watch.requests == [watch.url] * 3
    watch.requests = [watch.url]
    watch.assert_clean()


@pytest.mark.slow
def test_pairs_closest_to_the_threshold_come_first(demo_report: Path, open_page: Any) -> None:
    # ngram similarities of the demo (n = 3) around 0.5, by hand: pto-1 8/17 (1/34 away),
    # mix-1 R2 × C2 7/15 (1/30), rw-3 4/9 and rw-4 5/9 (both 1/18: a tie, taken in case
    # order), ds-1 R2 × C2 3/7 (1/14).
    hand = {("pto-1", 0, 0): Fraction(8, 17), ("mix-1", 1, 1): Fraction(7, 15),
            ("rw-3", 0, 0): Fraction(4, 9), ("rw-4", 0, 0): Fraction(5, 9),
            ("ds-1", 1, 1): Fraction(3, 7)}
    cases = {c.id: c for c in read_cases(demo_report.parent)}
    for (case_id, r, c), value in hand.items():
        assert cases[case_id].similarity[r][c] == pytest.approx(float(value), abs=1e-12)
    page, watch = open_page(demo_report)
    page.click("#review-closest")
    items = page.locator("#review-list li.review-item")
    expect(items).to_have_count(10)
    assert _closest(page)[:5] == [("pto-1", "0:0"), ("mix-1", "1:1"), ("rw-3", "0:0"),
                                  ("rw-4", "0:0"), ("ds-1", "1:1")]
    head = " ".join(items.first.locator(".review-head").inner_text().split())
    assert head.startswith("pto-1 R1 × C1 similarity 0.4706, 0.0294 from the threshold 0.5 "
                           "(no match)")
    assert items.nth(3).locator(".review-head").inner_text().count("(match)") == 1
    # The list continues, ten at a time, over every pair with a similarity.
    n_pairs = sum(v is not None for c in cases.values() for row in c.similarity for v in row)
    page.click("#review-list button.more")
    expect(items).to_have_count(min(20, n_pairs))
    screenshot(page, "review-closest")
    page.click("#review-closest")
    expect(page.locator("#review-list")).to_be_hidden()
    watch.assert_clean()


@pytest.mark.slow
def test_hostile_passages_export_exactly_and_stay_text(tmp_path: Path, open_page: Any) -> None:
    # ngram @ 0.5: the y- case's pair has similarity 1/21 (0.4524 from 0.5), the x- case's 1.0
    # (0.5 from it); the z- case failed and has no pair.
    run = build_run(tmp_path / "run", xss_cases())
    x_id, y_id = xss_cases()[0].id, xss_cases()[1].id
    page, watch = open_page(render_run_report(run, options={"embed": "json"}))
    page.click("#review-closest")
    assert _closest(page) == [(y_id, "0:0"), (x_id, "0:0")]
    items = page.locator("#review-list li.review-item")
    items.nth(0).locator("button[data-mark='different']").click()
    items.nth(0).locator("input.note").fill(f" {CLOSE} ")  # exported trimmed
    items.nth(1).locator("button[data-mark='same']").click()
    texts = items.nth(1).locator(".txt")
    assert [texts.nth(i).inner_text() for i in range(2)] == [f"{VPN} {CLOSE}"] * 2
    page.fill("#review-annotator", IMG)
    text = _export(page)
    check_labels(text)
    assert text.split("\n")[:-1] == _expected(run, [(x_id, 0, 0, True), (y_id, 0, 0, False)],
                                              IMG, {(y_id, 0, 0): CLOSE})
    assert page.evaluate("() => window.__xss") is None
    watch.assert_clean()


@pytest.mark.slow
def test_pairs_with_a_cut_or_empty_passage_cannot_be_marked(tmp_path: Path,
                                                            open_page: Any) -> None:
    # seed-1 quotes REQUEST (111 characters) against itself; in a report cutting passages
    # after 110 characters neither side can be exported whole. empty-ref's reference is empty
    # (a labels file holds no blank passage; its citation has 108 characters). seed-3's
    # passages (86 and 53 characters) are whole.
    assert len(REQUEST) == 111
    run = build_run(tmp_path / "run", plain_cases(), report={"max_text_chars": 110})
    page, watch = open_page(render_run_report(run))
    for case_id in ("seed-1", "empty-ref", "seed-3"):
        _open_case(page, case_id)
    for case_id, disabled in (("seed-1", True), ("empty-ref", True), ("seed-3", False)):
        for mark in ("same", "different", "unsure"):
            assert _pair(page, case_id, 0, 0, mark).is_disabled() is disabled
    why = {case_id: page.locator(f"tr.detail [data-pair='[\"{case_id}\",0,0]']").inner_text()
           for case_id in ("seed-1", "empty-ref", "seed-3")}
    assert "a passage is cut in this report" in why["seed-1"]
    assert "a passage is empty" in why["empty-ref"]
    assert "cannot be marked" not in why["seed-3"]
    watch.assert_clean()


@pytest.mark.slow
def test_the_export_reads_as_labelled_pairs(demo_report: Path, open_page: Any,
                                            tmp_path: Path) -> None:
    # The calibration's own reader (runner/calibration/pairs.py); the whole loop, through
    # ragcite-calibrate: tests/reports/test_review_calibrate.py.
    from runner.calibration import pairs

    page, watch = open_page(demo_report)
    page.click("#review-closest")
    items = page.locator("#review-list li.review-item")
    for n, mark in enumerate(["same", "unsure", "different", "same"]):
        items.nth(n).locator(f"button[data-mark='{mark}']").click()
    path = tmp_path / "labels.jsonl"
    path.write_text(_export(page), encoding="utf-8")
    read = pairs.load_pairs(path)
    assert [(p.case_id, p.label, p.annotator) for p in read] == [
        ("rw-3", False, None), ("rw-4", True, None), ("pto-1", True, None)]
    assert [{k: v for k, v in vars(p).items() if v is not None and k != "where"}
            for p in read] == check_labels(path.read_text(encoding="utf-8"))
    watch.assert_clean()

"""The run report: numbers equal metrics.json, data is escaped, and it works in Chromium."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

import runner
from runner.errors import RagciteError
from runner.reports.common import EXPLANATION_KEYS, embed_json, fmt, safe_href
from runner.reports.run import HtmlOptions, render_run_report, render_run_reports
from runner.reports.sentences import card_sentence
from runner.results import PASSAGES_FILE
from runner.scoring.labels import CITATION_LABELS, REFERENCE_LABELS
from runner.scoring.metrics import METRIC_KEYS, METRICS
from tests.conftest import REPO, only_run_dir, run_cli
from tests.reports.conftest import (
    CLOSE,
    IMG,
    SCRIPT,
    _case,
    assert_no_external_refs,
    build_job,
    build_run,
    fuzzy_cases,
    load_json,
    parse,
    plain_cases,
    screenshot,
    xss_cases,
)

STATS = (("mean", "metrics"), ("micro", "micro"))


def _decode(block: dict[str, Any]) -> Any:
    if block["encoding"] == "json":
        return block["data"]
    assert block["encoding"] == "gzip-base64"
    return json.loads(gzip.decompress(base64.b64decode(block["data"])))


def _cases(page: Any, sfx: str = "") -> list[dict[str, Any]]:
    """One threshold's embedded cases as the page's script decodes them (report.js decode and
    detailOf): the shared ids, queries, passages and explanations with that threshold's
    decisions."""
    shared, decided, texts, explained = (_decode(json.loads(page.script(f"ragcite-{name}")))
                                         for name in ("cases", f"decided{sfx}", "texts",
                                                      "explained"))
    errors = dict(decided["err"])
    out = []
    for i, (cid, query, t, x) in enumerate(zip(shared["id"], shared["q"], texts, explained,
                                               strict=True)):
        bits, n = [int(d) for d in decided["M"][i]], len(t["C"])
        out.append({**t, "id": cid, "q": query, "m": decided["f"][decided["k"][i]][0],
                    "b": decided["f"][decided["k"][i]][1], "err": errors.get(i),
                    "cl": [CITATION_LABELS[int(d)] for d in decided["cl"][i]],
                    "rl": [REFERENCE_LABELS[int(d)] for d in decided["rl"][i]],
                    "M": [bits[r * n:(r + 1) * n] for r in range(len(t["R"]))],
                    "X": x[decided["x"][i]]})
    return out


def _assert_numbers(page: Any, metrics: dict[str, Any], text_of: Any) -> None:
    """Every headline figure in the page equals metrics.json formatted by the same function."""
    for key in METRIC_KEYS:
        assert text_of(data_metric=key, data_stat="mean") == fmt(metrics["metrics"][key])
        assert text_of(data_metric=key, data_stat="micro") == fmt(metrics["micro"][key])
        ci = metrics["ci"][key]
        assert text_of(data_metric=key, data_stat="ci-low") == (fmt(ci[0]) if ci else "n/a")
        assert text_of(data_metric=key, data_stat="ci-high") == (fmt(ci[1]) if ci else "n/a")
    for key in ("n_cases", "n_scored", "n_errors"):
        assert text_of(data_count=key) == str(metrics[key])
    for label, count in metrics["labels"].items():
        assert text_of(data_label=label) == str(count)


def test_report_numbers_equal_metrics_json(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", plain_cases())
    path = render_run_report(run)
    assert path == run / "report.html"
    page = parse(path)
    metrics = load_json(run / "metrics.json")
    _assert_numbers(page, metrics, page.text)
    assert page.text(data_count="failed") == "1"
    # Identity and the seed's band explanations.
    assert page.text(data_field="dataset") == "fixture"
    assert page.text(data_field="matcher") == "ngram"
    assert page.text(data_field="threshold") == "0.5"
    assert page.text(data_field="threshold-line") == "Threshold 0.5"
    assert page.text(data_field="date") == "2026-12-02 10:00 UTC"
    shown = page.texts(**{"class": "bandtext"})
    for key, text in zip(METRIC_KEYS, shown):
        value = metrics["metrics"][key]
        band = "green" if value >= 0.75 else "medium" if value >= 0.25 else "red"
        assert metrics["bands"][key] == band  # written by scoring, shown as it is
        assert text == card_sentence(key, metrics)
        # The seed's texts stay as the legend of what 1.0, 0.5 and 0.0 mean.
        assert page.texts(data_legend=key) == list(METRICS[key].band_text)
    # Five scored cases (one failed): seed-1 (1 of 1 reference matched), seed-2 (1 of 3; the
    # Remote Work passage missed though its document is cited, Acceptable Use not cited),
    # seed-3 (its only reference's document not cited), empty-ref (1 of 1), no-cits (0 of 1,
    # nothing cited). Context recall per case: 1, 1/3, 0, 1, 0 → 7/15 = 0.467.
    assert shown[0] == (
        "3 of 7 ground-truth passages (43%) are matched by a citation; 1 is missed although "
        "its document is cited and 3 belong to documents not cited. 0.467 is the mean of the "
        "per-case context recalls over 5 cases.")
    assert_no_external_refs(page.html)


def test_embedded_cases_round_trip_and_are_escaped(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", xss_cases())
    page = parse(render_run_report(run, options={"embed": "json"}))
    scored = {c.id: c for c in runner.evaluate(xss_cases()).cases}  # their explanations
    blocks = [page.script(f"ragcite-{name}")
              for name in ("cases", "decided", "texts", "docs", "explained")]
    for text in blocks:
        assert "<" not in text and ">" not in text and "&" not in text
    rows, texts = _cases(page), _decode(json.loads(blocks[2]))
    originals = {c.id: c for c in _read(run)}
    assert [c["id"] for c in rows] == list(originals)
    assert len(texts) == len(rows)
    for row, passages in zip(rows, texts):
        assert {"R", "C", "E", "S"} <= set(passages) <= {"R", "C", "E", "S", "a", "md"}
        detail = row
        case = originals[row["id"]]
        assert row["q"] == case.query
        assert row["m"] == pytest.approx([case.metrics[k] for k in METRIC_KEYS], abs=1e-6)
        assert row.get("err") == case.error
        assert row["cl"] == case.citation_labels and row["rl"] == case.reference_labels
        assert [r[0] for r in detail["R"]] == [r["source"] for r in case.references]
        assert [r[1] for r in detail["R"]] == [r["content"] for r in case.references]
        explained = {} if case.error else scored[case.id].explanations
        assert detail["X"] == [explained.get(k, "") for k in EXPLANATION_KEYS]
        assert detail["S"] == [[None if v is None else round(v, 4) for v in r]
                               for r in case.similarity]
    # Exactly the report's own seven script elements; the payloads are text.
    assert page.html.count("<script") == 7
    assert SCRIPT not in page.html and IMG not in page.html
    assert page.texts(data_count="failed") == ["1"]
    failed_ids = [t for t in page.texts(**{"class": "id"})]
    assert f"z-{CLOSE}" in failed_ids


def test_gzip_embedding_round_trips(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", plain_cases())
    json_page = parse(render_run_report(run, options={"embed": "json"},
                                        output=tmp_path / "a.html"))
    gzip_page = parse(render_run_report(run, options={"embed": "gzip"},
                                        output=tmp_path / "b.html"))
    for block in ("ragcite-cases", "ragcite-decided", "ragcite-texts", "ragcite-docs",
                  "ragcite-explained"):
        plain = json.loads(json_page.script(block))
        packed = json.loads(gzip_page.script(block))
        assert plain["encoding"] == "json" and packed["encoding"] == "gzip-base64"
        assert _decode(packed) == _decode(plain)


def test_auto_embedding_gzips_once_the_blocks_together_pass_the_limit(tmp_path: Path) -> None:
    """``embed=auto`` gzips every block once their JSON holds more than ``gzip_above_mb``
    together: the shared blocks alone, or with the explanations and decisions made after them
    (the shared ones are then compressed beside that work)."""
    run = build_run(tmp_path / "run", plain_cases())
    plain = parse(render_run_report(run, options={"embed": "json"}, output=tmp_path / "a.html"))
    names = ("cases", "texts", "docs", "explained", "decided")
    size = {name: len(json.dumps(_decode(json.loads(plain.script(f"ragcite-{name}"))),
                                 ensure_ascii=False, separators=(",", ":")).encode())
            for name in names}
    shared, total = size["cases"] + size["texts"] + size["docs"], sum(size.values())
    assert 0 < shared < total
    for limit, encoding in ((shared - 1, "gzip-base64"), (total - 1, "gzip-base64"),
                            (total, "json")):
        page = parse(render_run_report(run, options={"embed": "auto",
                                                     "gzip_above_mb": limit / 2**20},
                                       output=tmp_path / f"{limit}.html"))
        for name in names:
            block = json.loads(page.script(f"ragcite-{name}"))
            assert block["encoding"] == encoding, (limit, name)
            assert _decode(block) == _decode(json.loads(plain.script(f"ragcite-{name}")))


def test_options_come_from_the_run_config(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", plain_cases(),
                    report={"_target_": "runner.reports.html.HtmlReports", "max_cases": 2,
                            "page_size": 7})
    page = parse(render_run_report(run))
    meta = json.loads(page.script("ragcite-meta"))
    assert meta["page_size"] == 7 and meta["n_embedded"] == 2 and meta["n_cases"] == 6
    assert "The table holds the first 2 of 6 cases" in " ".join(page.html.split())
    # The figures still cover every case.
    assert page.text(data_count="n_cases") == "6"


def test_bad_options_are_rejected() -> None:
    with pytest.raises(RagciteError) as exc:
        HtmlOptions.from_config({"embed": "zip"})
    assert str(exc.value) == "report.embed: unknown mode 'zip'; choose from: auto, json, gzip"
    with pytest.raises(RagciteError) as exc:
        HtmlOptions.from_config({"page_size": 0})
    assert str(exc.value) == "report.page_size: must be an integer >= 1, got 0"
    assert HtmlOptions.from_config({"max_cases": None,
                                    "_target_": "runner.reports.html.HtmlReports"}
                                   ).max_cases is None
    with pytest.raises(RagciteError, match=r"^report\.page_size: must be an integer >= 1, got 0$"):
        HtmlOptions(page_size=0)
    with pytest.raises(RagciteError) as exc:
        HtmlOptions(max_cases=-1)
    assert str(exc.value) == "report.max_cases: must be an integer >= 0, got -1"


def test_minimal_metrics_json_renders(tmp_path: Path) -> None:
    """A result folder written from runner.evaluate alone (no run identity) still renders."""
    import runner
    from runner.results import write_result

    result = runner.evaluate(plain_cases(), bootstrap_resamples=50)
    write_result(tmp_path, result)
    page = parse(render_run_report(tmp_path))
    assert page.text(data_field="dataset") == "unknown"
    assert page.text(data_field="threshold-line") == "Threshold 0.5 (level default)"
    assert page.text(data_metric="context_recall", data_stat="mean") == fmt(
        result.metrics["context_recall"])


def test_unsafe_tracking_links_are_not_links(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", plain_cases())
    page = parse(render_run_report(run, tracking_link="javascript:alert(1)"))
    assert 'href="javascript' not in page.html
    assert page.texts(data_field="tracking-link") == []
    page = parse(render_run_report(run, tracking_link="http://127.0.0.1:5000/#/experiments/1/runs/a"))
    assert page.text(data_field="tracking-link") == "MLflow run"
    assert safe_href("data:text/html,x") is None and safe_href("https://x") == "https://x"


def test_embed_json_escapes_everything_that_could_end_a_script() -> None:
    text = str(embed_json({"a": "</script><!-- <script> & \u2028"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- <script> & \u2028"}


def _read(run: Path) -> list[Any]:
    from runner.results import read_cases

    return list(read_cases(run))


# --- in Chromium ----------------------------------------------------------------------------------


def _rows(page: Any) -> list[str]:
    return [str(x) for x in page.locator("#case-body tr.case-row").evaluate_all(
        "rows => rows.map(r => r.getAttribute('data-case-id'))")]


@pytest.mark.slow
@pytest.mark.parametrize("embed", ["json", "gzip"])
def test_run_report_in_chromium(tmp_path: Path, open_page: Any, embed: str) -> None:
    run = build_run(tmp_path / "run", plain_cases(), name="browser-run")
    path = render_run_report(run, options={"embed": embed, "page_size": 4},
                             tracking_link="http://127.0.0.1:5000/#/experiments/1/runs/abc")
    metrics = load_json(run / "metrics.json")
    page, watch = open_page(path)

    # Headline numbers are visible and equal metrics.json.
    def text_of(**attrs: str) -> str:
        selector = "".join(f'[{k.replace("_", "-")}="{v}"]' for k, v in attrs.items())
        node = page.locator(selector)
        assert node.count() == 1, selector
        assert node.is_visible(), selector
        return " ".join(node.inner_text().split())

    _assert_numbers(page, metrics, text_of)

    # Pagination: 6 cases, 4 a page.
    assert _rows(page) == ["seed-1", "seed-2", "seed-3", "empty-ref"]
    page.click("#case-next")
    assert _rows(page) == ["no-cits", "broken"]
    page.click("#case-first")

    # Expanding a case shows its references and citations side by side, with the matches.
    row = page.locator('tr.case-row[data-case-id="seed-2"]')
    row.click()
    detail = page.locator("tr.detail")
    assert detail.count() == 1
    cits = detail.locator(".cits .item")
    refs = detail.locator(".refs .item")
    expect(cits).to_have_count(3)      # (the details may still be parsing: wait for them)
    expect(refs).to_have_count(3)
    assert "IT Compliance Handbook.pdf" in cits.nth(2).inner_text()
    assert "unexpected_source" in cits.nth(2).inner_text()
    assert "matches R1 (similarity 1.000)" in cits.nth(0).inner_text()
    assert "matched by C1 (similarity 1.000)" in refs.nth(0).inner_text()
    assert "passage_missed" in refs.nth(1).inner_text()
    assert detail.locator("table.matrix td.hit").count() == 1
    assert "(1 of 3)" in detail.locator(".explain").inner_text()
    screenshot(page, f"run-expanded-{embed}")
    row.click()
    assert page.locator("tr.detail").count() == 0

    # Filters narrow the table: free text, label, band, errors.
    page.fill("#case-search", "compliance handbook")
    expect(page.locator("#case-body tr.case-row")).to_have_count(2)
    assert _rows(page) == ["seed-2", "seed-3"]
    page.fill("#case-search", "")
    expect(page.locator("#case-body tr.case-row")).to_have_count(4)
    page.select_option("#case-label", "c:wrong_passage")
    assert _rows(page) == ["seed-2"]
    page.select_option("#case-label", "error")
    assert _rows(page) == ["broken"]
    page.select_option("#case-label", "")
    page.select_option("#case-band-metric", str(METRIC_KEYS.index("context_recall")))
    page.select_option("#case-band", "red")
    assert _rows(page) == ["seed-3", "no-cits"]
    page.click("#case-reset")
    assert len(_rows(page)) == 4

    # Sorting: context recall ascending puts the zeros first and the failed case last.
    page.click('th[data-key="m0"] button')
    page.select_option("#case-page-size", "25")
    order = _rows(page)
    assert order[:2] == ["seed-3", "no-cits"] and order[-1] == "broken"
    page.click('th[data-key="m0"] button')
    assert _rows(page)[-1] == "broken"

    # Failed cases are listed with their errors; the tracking link is a link.
    assert "TimeoutError: the model did not answer" in page.locator("#failed-table").inner_text()
    assert page.locator('[data-field="tracking-link"]').get_attribute("href") == (
        "http://127.0.0.1:5000/#/experiments/1/runs/abc")
    screenshot(page, f"run-{embed}")
    watch.assert_clean()


# Quote fidelity in the case view (SPEC 6.1): the knowledge base and four quotes of
# tests/scoring/test_fidelity.py (labels and spans worked out there), one case each, all citing
# leave.md. After fold leave.md is "employees get 25 days of paid leave per year. unused days
# expire in march. requests go through the hr portal.": "unused days expire in march." is
# [46, 74); the paraphrase keeps 8 of its 9 words in order against sentence 1's 9, similarity
# 2 * 8 / 18 = 0.888... (shown to 2 decimals: 0.89), span [0, 44) ("employees" to "year");
# travel.md's whole text is [0, 39); the cafeteria sentence is in no document.
FIDELITY_KB = {"leave.md": "Employees get 25 days of paid leave per year. Unused days expire in "
               "March.  Requests go through the HR portal.",
               "travel.md": "Travel is approved by the line manager."}
FIDELITY_QUOTES = [
    ("as-written", "Unused days expire in March.", "verbatim",
     "quote located in leave.md at characters 46–74:"),
    ("reworded", "Employees get 25 days of paid holiday per year.", "paraphrased 0.89",
     "quote located in leave.md at characters 0–44:"),
    ("elsewhere", "Travel is approved by the line manager.", "misattributed: from travel.md",
     "quote located in travel.md at characters 0–39:"),
    ("made-up", "The cafeteria serves free lunch on Fridays.", "fabricated",
     "nothing to highlight: found in no document")]


@pytest.mark.slow
def test_fidelity_chips_and_filter_in_chromium(tmp_path: Path, open_page: Any) -> None:
    cases = [_case(cid, "q", [("leave.md", quote)], [("leave.md", quote)])
             for cid, quote, *_ in FIDELITY_QUOTES]
    run = build_run(tmp_path / "run", cases, knowledge_base=FIDELITY_KB)
    page, watch = open_page(render_run_report(run))
    for cid, _, chip, located in FIDELITY_QUOTES:
        page.locator(f'tr.case-row[data-case-id="{cid}"]').click()
        cit = page.locator("tr.detail .cits .item")
        expect(cit.locator("[data-fidelity]")).to_have_text(chip)
        expect(cit.locator("[data-located]")).to_have_text(located)
        page.locator(f'tr.case-row[data-case-id="{cid}"]').click()
    # The label filter by fidelity: one fabricated quote, one paraphrased, none stitched.
    page.select_option("#case-label", "f:fabricated")
    expect(page.locator("#case-body tr.case-row")).to_have_count(1)
    assert _rows(page) == ["made-up"]
    page.select_option("#case-label", "f:paraphrased")
    expect(page.locator('tr.case-row[data-case-id="reworded"]')).to_have_count(1)
    assert _rows(page) == ["reworded"]
    page.select_option("#case-label", "f:stitched")
    expect(page.locator("#case-body tr.case-row")).to_have_count(0)
    page.select_option("#case-label", "")
    expect(page.locator("#case-body tr.case-row")).to_have_count(4)
    watch.assert_clean()


# The located span highlighted in its document (docs/fidelity.md): each case cites one quote,
# the spans worked out by hand in the documents as written (all shorter than 200 characters,
# so each excerpt is its whole document). leave.md and travel.md as above: the stitched quote's
# second sentence is [76, 110) as written ("March.  Requests": two spaces, one after fold).
# Scoring keeps the blocks of 100 characters within 100 of a span: leave.md's two ([0, 100) and
# [100, 110)), shared by its two quotes, and one of each other document: the page embeds 6.
# moves.md "The Straße  office\u200b closes. Lunch starts at noon." folds to "the strasse office
# closes. lunch starts at noon." (ß → ss +1, two spaces -1, the zero-width space -1): "lunch
# starts at noon." is [27, 48) in the fold, [28, 49) as written. 通知.md
# "通知　　㈱公司：未休假期于三月作废。" folds to "通知 (株)公司:未休假期于三月作废。"
# (two ideographic spaces -1, ㈱ → (株) +2): the sentence is [9, 19) in the fold, [8, 18) as
# written. xss.md holds a script-closing text of 44 characters and a space before its sentence
# [45, 68), shown as text. A blank quote is unchecked.
HIGHLIGHT_KB = {**FIDELITY_KB, "moves.md": "The Straße  office\u200b closes. Lunch starts at noon.",
                "通知.md": "通知\u3000\u3000㈱公司：未休假期于三月作废。",
                "xss.md": CLOSE + " Badges open every door."}
HIGHLIGHTS = [  # (case, cited document, quote, chip, located line, the marked texts)
    ("stitched-parts", "leave.md", "Employees get 25 days of paid leave per year. Requests go "
     "through the HR portal.", "stitched", "quote located in leave.md at characters 0–45, 76–110:",
     ["Employees get 25 days of paid leave per year.", "Requests go through the HR portal."]),
    ("reworded", "leave.md", "Employees get 25 days of paid holiday per year.", "paraphrased 0.89",
     "quote located in leave.md at characters 0–44:",
     ["Employees get 25 days of paid leave per year"]),
    ("elsewhere", "leave.md", "Travel is approved by the line manager.",
     "misattributed: from travel.md", "quote located in travel.md at characters 0–39:",
     ["Travel is approved by the line manager."]),
    ("moved-en", "moves.md", "Lunch starts at noon.", "verbatim",
     "quote located in moves.md at characters 28–49:", ["Lunch starts at noon."]),
    ("moved-zh", "通知.md", "未休假期于三月作废。", "verbatim",
     "quote located in 通知.md at characters 8–18:", ["未休假期于三月作废。"]),
    ("escaped", "xss.md", "Badges open every door.", "verbatim",
     "quote located in xss.md at characters 45–68:", ["Badges open every door."]),
    ("made-up", "leave.md", "The cafeteria serves free lunch on Fridays.", "fabricated",
     "nothing to highlight: found in no document", []),
    ("blank", "leave.md", "", "unchecked",
     "nothing to highlight: no documents to check it against", [])]


@pytest.mark.slow
def test_located_spans_highlighted_in_chromium(tmp_path: Path, open_page: Any) -> None:
    cases = [_case(cid, "q", [(src, quote or "x")], [(src, quote)])
             for cid, src, quote, *_ in HIGHLIGHTS]
    run = build_run(tmp_path / "run", cases, knowledge_base=HIGHLIGHT_KB)
    path = render_run_report(run)
    embedded = parse(path).script("ragcite-docs")  # xss.md's script-closing text escaped
    assert "<" not in embedded and ">" not in embedded and "&" not in embedded
    blocks = _decode(json.loads(embedded))
    assert sorted(map(tuple, blocks)) == sorted([
        (0, HIGHLIGHT_KB["leave.md"][:100]), (100, "HR portal."),
        *((0, HIGHLIGHT_KB[d]) for d in ("travel.md", "moves.md", "通知.md", "xss.md"))])
    page, watch = open_page(path)
    for cid, src, _, chip, located, marks in HIGHLIGHTS:
        page.locator(f'tr.case-row[data-case-id="{cid}"]').click()
        cit = page.locator("tr.detail .cits .item")
        expect(cit.locator("[data-fidelity]")).to_have_text(chip)
        expect(cit.locator("[data-located]")).to_have_text(located)
        assert cit.locator("[data-excerpt] mark").all_text_contents() == marks
        # The excerpt is the document as written (the misattributed quote's: travel.md), each
        # character as it is, the script-closing text shown as text.
        document = HIGHLIGHT_KB["travel.md" if cid == "elsewhere" else src]
        assert cit.locator("[data-excerpt]").all_text_contents() == [document] * bool(marks)
        page.locator(f'tr.case-row[data-case-id="{cid}"]').click()
    assert page.evaluate("window.__xss") is None
    watch.assert_clean()


@pytest.mark.slow
def test_the_threshold_switch_in_chromium(tmp_path: Path, open_page: Any) -> None:
    dirs = build_job(tmp_path / "job", fuzzy_cases(), [0.05, 0.3, 0.5])
    [path] = render_run_reports(dirs, [None] * 3, options={"embed": "gzip"})
    page, watch = open_page(path)
    html = page.locator("html")

    def shown(index: int) -> None:
        """The page shows the `index`-th threshold: its parts, figures, table and review."""
        value = ("0.05", "0.3", "0.5")[index]
        assert page.locator('[data-field="threshold-line"]:visible').all_inner_texts() == [
            f"Threshold {value}"]
        assert page.locator('[data-metric="context_recall"][data-stat="mean"]:visible'
                            ).all_inner_texts() == [("1.000", "0.500", "0.000")[index]]
        cases = {c.id: c for c in _read(dirs[index])}
        table = page.evaluate("window.__ragcite.cases.map(c => [c.id, c.m[1]])")
        assert table == [[cid, c.metrics["context_recall"]] for cid, c in cases.items()]
        assert page.evaluate("window.__ragcite.review.key") == json.loads(
            parse(path).script("ragcite-meta" + (f"-{index}" if index else "")))["review_key"]

    html.locator("xpath=self::*[@data-view='0'][@data-details='1']").wait_for(state="attached")
    shown(0)
    page.focus("#threshold-switch")  # by keyboard: the next threshold
    page.keyboard.press("ArrowDown")
    html.locator("xpath=self::*[@data-view='1'][@data-details='1']").wait_for(state="attached")
    assert page.url.endswith("report.html#t0.3")
    shown(1)
    page.goto(path.resolve().as_uri() + "#t0.5")  # the fragment chooses, also on load
    page.reload()
    html.locator("xpath=self::*[@data-ready='1'][@data-view='2'][@data-details='1']").wait_for(
        state="attached")
    assert page.locator("#threshold-switch").input_value() == "2"
    shown(2)
    watch.requests.remove(watch.url)  # the reload: the file itself again, and nothing else
    watch.assert_clean()


@pytest.mark.slow
@pytest.mark.parametrize("embed", ["json", "gzip"])
def test_xss_payloads_render_as_text(tmp_path: Path, open_page: Any, embed: str) -> None:
    run = build_run(tmp_path / "run", xss_cases(), name=f"run {SCRIPT}",
                    dataset=f"data {IMG}")
    path = render_run_report(run, options={"embed": embed},
                             tracking_link=f"javascript:window.__xss=1 {SCRIPT}")
    page, watch = open_page(path)
    ids = _rows(page)
    assert ids == [c.id for c in xss_cases()]
    assert page.locator("h1").inner_text() == f"run {SCRIPT}"
    assert page.locator('[data-field="dataset"]').inner_text() == f"data {IMG}"
    first = page.locator("tr.case-row").first
    assert SCRIPT in first.inner_text() and IMG in first.inner_text()
    for i in range(len(ids)):
        page.locator("tr.case-row").nth(i).click()
    details = page.locator("tr.detail")
    assert details.count() == 3
    expect(page.locator("tr.detail .sides")).to_have_count(3)
    text = " ".join(details.all_inner_texts())
    assert CLOSE in text and SCRIPT in text and IMG in text
    page.fill("#case-search", "</script>")
    expect(page.locator("#case-body tr.case-row")).to_have_count(3)
    page.fill("#case-search", "svg onload")
    expect(page.locator("#case-body tr.case-row")).to_have_count(3)
    page.fill("#case-search", "third")
    expect(page.locator("#case-body tr.case-row")).to_have_count(1)
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("document.querySelectorAll('img, svg[onload], iframe').length") == 0
    screenshot(page, f"run-xss-{embed}")
    watch.assert_clean()


@pytest.mark.slow
def test_ragcite_report_html_writes_a_report(tmp_path: Path) -> None:
    """The CLI renders report.html when report=html (the fixture dataset, stored responses)."""
    conf = tmp_path / "conf" / "dataset"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text(
        "defaults: [/schema/dataset@_here_, _self_]\nname: mine\n"
        f"path: {REPO / 'tests' / 'fixtures' / 'seed_examples.jsonl'}\n", encoding="utf-8")
    proc = run_cli(["--config-dir", str(tmp_path / "conf"), "dataset=mine", "model=precomputed",
                    "report=html", "report.page_size=10", "tracking=none", "progress=false",
                    f"output_root={tmp_path / 'out'}"], cwd=tmp_path,
                   env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = only_run_dir(tmp_path / "out")
    page = parse(run / "report.html")
    metrics = load_json(run / "metrics.json")
    _assert_numbers(page, metrics, page.text)
    assert json.loads(page.script("ragcite-meta"))["page_size"] == 10


def test_a_run_where_every_case_failed_renders(tmp_path: Path) -> None:
    cases = [c for c in plain_cases() if c.id == "broken"]
    run = build_run(tmp_path / "run", cases)
    page = parse(render_run_report(run))
    for key in METRIC_KEYS:
        assert page.text(data_metric=key, data_stat="mean") == "n/a"
        assert page.text(data_metric=key, data_stat="ci-low") == "n/a"
    assert page.text(data_count="n_errors") == "1"
    assert "Nothing to diagnose" in page.html


def test_an_empty_run_renders(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", [])
    page = parse(render_run_report(run))
    assert page.text(data_count="n_cases") == "0"
    assert json.loads(page.script("ragcite-meta"))["n_embedded"] == 0


def _thirty() -> list[Any]:
    """30 cases: 3 of every 10 cite a wrong clause of the right document, case 7 has no
    response."""
    from tests.reports.test_compare import _cases

    cases = _cases(30, wrong={1, 2, 11, 12, 21, 22})
    return [c if c.id != "c7" else c.model_copy(update={"response": None}) for c in cases]


def test_only_the_embedded_cases_are_read(tmp_path: Path) -> None:
    """30 cases, max_cases=10: exactly the first 10 are embedded; every figure, the
    distributions included, is metrics.json's."""
    run = build_run(tmp_path / "run", _thirty())
    metrics = load_json(run / "metrics.json")
    page = parse(render_run_report(run, options={"max_cases": 10, "embed": "json"}))
    assert [r["id"] for r in _cases(page)] == [f"c{i}" for i in range(10)]
    assert len(_decode(json.loads(page.script("ragcite-texts")))) == 10
    meta = json.loads(page.script("ragcite-meta"))
    assert (meta["n_cases"], meta["n_embedded"]) == (30, 10)
    assert "The table holds the first 10 of 30 cases" in " ".join(page.html.split())
    assert page.text(data_count="n_cases") == "30"
    # The distributions are the histograms of metrics.json: bar by bar.
    for key in METRIC_KEYS:
        bars = [a for tag, a, _ in page.parser.elements
                if tag == "rect" and a.get("data-bin-of") == key]
        assert [int(str(a["data-count"])) for a in bars] == metrics["histograms"][key]["counts"]
    # By hand: 29 scored cases (c7 has no response); context recall 1 in 23 of them, 0 in the
    # 6 that cite a wrong clause.
    recall = metrics["histograms"]["context_recall"]
    assert recall["counts"][19] == 23 and recall["counts"][0] == 6 and recall["undefined"] == 0
    assert page.text(data_count="failed") == "1"
    assert page.texts(**{"class": "id"}) == ["c7"]


def test_a_job_of_three_thresholds_renders_one_page_with_a_switch(tmp_path: Path) -> None:
    dirs = build_job(tmp_path / "job", fuzzy_cases(), [0.05, 0.3, 0.5], level="custom")
    assert [d.name for d in dirs] == ["t0.05", "t0.3", "t0.5"]
    paths = render_run_reports(dirs, [None, "http://127.0.0.1:5000/#/r/2", None],
                               options={"embed": "json"})
    assert paths == [tmp_path / "job" / "report.html"]
    assert not any((d / "report.html").exists() for d in dirs)
    page = parse(paths[0])
    assert [(a.get("value"), a.get("data-name"), text) for tag, a, text in page.parser.elements
            if tag == "option" and a.get("data-name")] == [
        ("0", "t0.05", "Threshold 0.05 (level custom)"),
        ("1", "t0.3", "Threshold 0.3 (level custom)"),
        ("2", "t0.5", "Threshold 0.5 (level custom)")]
    # One part per threshold, the first shown; each shows its own metrics.json.
    assert [(a["data-view"], a.get("data-name"), "hidden" in a)
            for _, a, _ in page.parser.elements if a.get("class") == "tview"] == [
        ("0", "t0.05", False), ("1", "t0.3", True), ("2", "t0.5", True)] * 3  # 3 parts each
    for index, (d, value) in enumerate(zip(dirs, ("0.05", "0.3", "0.5"))):
        metrics = load_json(d / "metrics.json")
        assert page.texts(data_field="threshold-line")[index] == (
            f"Threshold {value} (level custom)")
        _assert_numbers(page, metrics, lambda index=index, **a: page.texts(**a)[index])
        sfx = f"-{index}" if index else ""
        rows = _cases(page, sfx)
        cases = {c.id: c for c in _read(d)}
        for row in rows:  # each threshold's table shows its own decisions
            assert row["m"] == pytest.approx(
                [cases[row["id"]].metrics[k] for k in METRIC_KEYS], abs=1e-6)
        assert json.loads(page.script("ragcite-meta" + sfx))["threshold"] == float(value)
    # Similarities 0.375 and 0.0667: both match at 0.05, one at 0.3, none at 0.5.
    assert page.texts(data_metric="context_recall", data_stat="mean") == [
        "1.000", "0.500", "0.000"]
    # The passages embedded once, from the one ../passages.parquet.
    texts = _decode(json.loads(page.script("ragcite-texts")))
    assert [t["R"][0][1] for t in texts] == [c.references[0]["content"] for c in _read(dirs[0])]
    assert (tmp_path / "job" / PASSAGES_FILE).is_file()
    assert not (dirs[0] / PASSAGES_FILE).exists()
    assert page.html.count(">MLflow run</a>") == 1  # the link of the second threshold only
    assert page.texts(data_field="tracking-link") == ["MLflow run"]


def test_a_job_folder_of_several_thresholds_is_rendered_again_by_hand(tmp_path: Path) -> None:
    from runner.reports.run import main

    dirs = build_job(tmp_path / "job", fuzzy_cases(), [0.05, 0.5])
    assert main([str(tmp_path / "job")]) == 0
    page = parse(tmp_path / "job" / "report.html")
    assert page.texts(data_field="threshold-line") == ["Threshold 0.05", "Threshold 0.5"]
    assert main([str(dirs[1]), "--out", str(tmp_path / "alone.html")]) == 0
    assert parse(tmp_path / "alone.html").text(data_field="threshold-line") == "Threshold 0.5"


def test_each_threshold_of_the_page_embeds_what_its_own_report_would(tmp_path: Path) -> None:
    dirs = build_job(tmp_path / "job", fuzzy_cases(), [0.05, 0.5])
    [job_page] = render_run_reports(dirs, [None, None], options={"embed": "gzip"})
    page = parse(job_page)
    for index, d in enumerate(dirs):
        alone = parse(render_run_report(d, options={"embed": "gzip"}))
        sfx = f"-{index}" if index else ""
        assert page.script("ragcite-meta" + sfx) == alone.script("ragcite-meta")
        assert _cases(page, sfx) == _cases(alone)
    with pytest.raises(ValueError, match="links"):
        render_run_reports(dirs, [None])

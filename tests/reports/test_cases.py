"""The report's case data read in parts, and the passages cache shared by a sweep's reports."""

from __future__ import annotations

import base64
import gzip
import json
import os
from pathlib import Path
from typing import Any

import yaml

from runner.cache import REPORT_TEXTS_DIR, DiskCache
from runner.reports.cases import ReportCases, SplitCase, TextsCache, split_line
from runner.reports.common import pack_text
from runner.reports.run import render_run_report
from runner.results import CaseFigures, CaseResult
from tests.reports.conftest import _case, build_run, parse, plain_cases


def _config(run: Path, cache_dir: Path, enabled: bool = True, embed: str = "gzip") -> None:
    (run / "config.yaml").write_text(yaml.safe_dump({
        "report": {"format": "html", "embed": embed},
        "cache": {"enabled": enabled, "dir": str(cache_dir), "clear": False}}),
        encoding="utf-8")


def _block(path: Path, name: str) -> list[dict[str, Any]]:
    block = json.loads(parse(path).script(f"ragcite-{name}"))
    if block["encoding"] == "json":
        data: list[dict[str, Any]] = block["data"]
        return data
    decoded: list[dict[str, Any]] = json.loads(gzip.decompress(base64.b64decode(block["data"])))
    return decoded


def _stored(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / REPORT_TEXTS_DIR).glob("*.json"))


def test_lines_are_read_in_parts_unless_failed(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", plain_cases())
    lines = (run / "cases.jsonl").read_bytes().splitlines()
    # plain_cases: seed-1, seed-2, seed-3, empty-ref, no-cits are scored; "broken" failed.
    split = [split_line(line, 10_000) for line in lines]
    assert [s is not None for s in split] == [True] * 5 + [False]
    first = split[0]
    assert isinstance(first, SplitCase)
    record = json.loads(lines[0])
    row, scores = json.loads(first.row_json), json.loads(first.scores_json)
    assert row["id"] == "seed-1" and row["q"] == record["query"]
    assert scores["M"] == [[1]]  # one reference, one citation of the same passage
    assert first.texts(10_000)["R"] == [[r["source"], r["content"]]
                                        for r in record["references"]]
    assert first.texts(10_000)["a"] == "Five business days ahead."
    # Another key order is read whole: reversed, or the passages' keys after the scores' (their
    # bytes would not be where the passages are read from).
    reordered = json.dumps(dict(reversed(list(record.items()))), separators=(",", ":"))
    assert split_line(reordered.encode(), 10_000) is None
    keys = list(record)
    moved = [*keys[:3], *keys[6:13], *keys[3:6], keys[13]]  # expected_sources..metadata last
    assert moved[-4:] == ["expected_sources", "response", "metadata", "error"]
    late = json.dumps({k: record[k] for k in moved}, separators=(",", ":")).encode()
    assert late.endswith(b'"error":null}') and split_line(late, 10_000) is None
    # Past the embedded ones only the figures; the failed case whole.
    kinds = [type(r) for r in ReportCases(run / "cases.jsonl", 2, 10_000)]
    assert kinds == [SplitCase, SplitCase, CaseFigures, CaseFigures, CaseFigures, CaseResult]


def test_a_stored_passages_block_gives_the_same_report(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", plain_cases())
    cache_dir = tmp_path / "cache"
    _config(run, cache_dir)
    first = run / "first.html"
    render_run_report(run, output=first)  # computes the passages and stores them
    assert len(_stored(cache_dir)) == 1
    second = run / "second.html"
    render_run_report(run, output=second)  # reads them
    assert len(_stored(cache_dir)) == 1
    _config(run, cache_dir, enabled=False)
    plain = run / "plain.html"
    render_run_report(run, output=plain)  # no cache at all
    assert first.read_bytes() == second.read_bytes() == plain.read_bytes()
    # Each case's first reference source, in order; seed-3 has metadata, "broken" failed.
    texts = _block(first, "texts")
    assert [t["R"][0][0] for t in texts] == [
        "Remote Work Policy.pdf", "Data Security Policy.pdf", "IT Compliance Handbook.pdf",
        "Acceptable Use Policy.pdf", "Data Security Policy.pdf", "Data Security Policy.pdf"]
    assert [t.get("md") for t in texts] == [None, None, '{"topic": "training"}', None, None,
                                            None]
    assert [len(t["C"]) for t in texts] == [1, 3, 1, 1, 0, 0]


def test_the_stored_block_is_what_a_hit_embeds(tmp_path: Path) -> None:
    # Proof that a hit reads the store: a block put under the report's key is embedded as is.
    run = build_run(tmp_path / "run", plain_cases())
    cache_dir = tmp_path / "cache"
    _config(run, cache_dir)
    render_run_report(run)
    (entry,) = _stored(cache_dir)
    TextsCache(cache_dir / REPORT_TEXTS_DIR).put(entry.stem, *pack_text('[{"R":[["x","y"]]}]'))
    render_run_report(run)
    assert _block(run / "report.html", "texts") == [{"R": [["x", "y"]]}]
    # A damaged entry is not embedded: the passages are built again (and stored again).
    entry.write_text(json.dumps({"bytes": 2, "data": '"</script><script>alert(1)//'}),
                     encoding="utf-8")
    render_run_report(run)
    texts = _block(run / "report.html", "texts")
    assert len(texts) == 6 and texts[0]["a"] == "Five business days ahead."
    assert "alert(1)" not in (run / "report.html").read_text(encoding="utf-8")


def test_another_threshold_hits_and_other_passages_miss(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    # 2 of the reference's 6 word trigrams are in the citation: similarity 1/3.
    partial = _case("partial", "Which steps?",
                    [("A.pdf", "alpha beta gamma delta epsilon zeta eta theta")],
                    [("A.pdf", "alpha beta gamma delta iota kappa lambda mu")])
    low = build_run(tmp_path / "low", [*plain_cases(), partial], threshold=0.2)
    high = build_run(tmp_path / "high", [*plain_cases(), partial], threshold=0.9)
    for run in (low, high):
        _config(run, cache_dir)
        render_run_report(run)
    assert len(_stored(cache_dir)) == 1  # a threshold sweep's jobs share the passages
    assert _block(low / "report.html", "texts") == _block(high / "report.html", "texts")
    # ... and each shows its own matches: "partial" (the last case) matches at 0.2 only.
    assert [d["M"] for d in _block(low / "report.html", "details")][-1] == [[1]]
    assert [d["M"] for d in _block(high / "report.html", "details")][-1] == [[0]]
    assert _block(high / "report.html", "details")[-1]["S"] == [[0.3333]]
    # One changed passage is another key, and the report shows the new text.
    lines = (high / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["references"][0]["content"] = "Changed passage."
    lines[0] = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    (high / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    render_run_report(high)
    assert len(_stored(cache_dir)) == 2
    assert _block(high / "report.html", "texts")[0]["R"] == [["Remote Work Policy.pdf",
                                                             "Changed passage."]]


def test_small_json_reports_store_nothing(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", plain_cases())
    cache_dir = tmp_path / "cache"
    _config(run, cache_dir, embed="auto")  # 6 cases: plain JSON
    render_run_report(run)
    assert json.loads(parse(run / "report.html").script("ragcite-texts"))["encoding"] == "json"
    assert _stored(cache_dir) == []


def test_the_cache_keeps_the_most_recently_used(tmp_path: Path) -> None:
    cache = TextsCache(tmp_path / "texts", keep=2)
    for n, key in enumerate(("a", "b", "c")):
        cache.put(key, 2, pack_text("[]")[1])
        os.utime(tmp_path / "texts" / f"{key}.json", (1000 + n, 1000 + n))
    # "c" was stored third: "a", the oldest, left.
    assert sorted(p.stem for p in (tmp_path / "texts").glob("*.json")) == ["b", "c"]
    assert cache.get("b") == (2, pack_text("[]")[1])  # a read makes "b" the most recent
    cache.put("d", 2, pack_text("[]")[1])
    assert sorted(p.stem for p in (tmp_path / "texts").glob("*.json")) == ["b", "d"]
    assert cache.get("a") is None


def test_pruning_leaves_files_being_written(tmp_path: Path) -> None:
    cache = TextsCache(tmp_path, keep=1)
    partial = tmp_path / ".tmp-writer.part"  # another process's block, not yet in place
    partial.write_text("{", encoding="utf-8")
    cache.put("a", 2, pack_text("[]")[1])
    cache.put("b", 2, pack_text("[]")[1])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-writer.part", "b.json"]


def test_clearing_the_cache_drops_the_stored_passages(tmp_path: Path) -> None:
    TextsCache(tmp_path / REPORT_TEXTS_DIR).put("k", 2, pack_text("[]")[1])
    disk = DiskCache(tmp_path)
    disk.clear()
    disk.close()
    assert not (tmp_path / REPORT_TEXTS_DIR).exists()


def test_rows_of_lines_read_before_come_from_the_fragment_memo(tmp_path: Path) -> None:
    # A sweep's next report (the same report helper, runner/reports/host.py) finds the rows and
    # scores its predecessors built; the report is byte for byte the one built without them.
    from runner.reports.cases import FragmentMemo

    partial = _case("partial", "Which steps?",
                    [("A.pdf", "alpha beta gamma delta epsilon zeta eta theta")],
                    [("A.pdf", "alpha beta gamma delta iota kappa lambda mu")])
    low = build_run(tmp_path / "low", [*plain_cases(), partial], threshold=0.2)
    high = build_run(tmp_path / "high", [*plain_cases(), partial], threshold=0.9)
    memo = FragmentMemo()
    render_run_report(low, output=low / "memo.html", fragments=memo)
    assert len(memo) == 6  # the scored cases; "broken" failed, read whole
    render_run_report(high, output=high / "memo.html", fragments=memo)
    # Only "partial" changed its decisions (it matches at 0.2, not at 0.9): one new entry, its.
    assert len(memo) == 7
    body = (high / "cases.jsonl").read_bytes().splitlines()[-1]
    key = memo.key(body, body.find(b',"references":'), body.rfind(b',"similarity":'), 10_000)
    found = memo.get(key)
    assert found is not None
    row, _, metrics = found
    assert json.loads(row)["id"] == "partial" and metrics["context_recall"] == 0.0
    for run in (low, high):
        render_run_report(run, output=run / "plain.html")
        assert (run / "memo.html").read_bytes() == (run / "plain.html").read_bytes()
    # Another max_text_chars is another key: nothing found.
    render_run_report(high, options={"max_text_chars": 5}, output=high / "cut.html",
                      fragments=memo)
    assert len(memo) == 7 + 6
    assert _block(high / "cut.html", "cases")[0]["q"].startswith("How e … [cut in the report")


def test_the_last_reports_lines_give_the_same_passages_key_without_hashing(
        tmp_path: Path) -> None:
    # A sweep's report helper keeps the last report's lines (FragmentMemo.last): a line equal
    # to the one at its position is not parsed again, and when every line has the passages of
    # the one at its position the passages key is the last report's. The keys and the cases
    # read are those of a report read on its own.
    from runner.reports.cases import FragmentMemo

    partial = _case("partial", "Which steps?",
                    [("A.pdf", "alpha beta gamma delta epsilon zeta eta theta")],
                    [("A.pdf", "alpha beta gamma delta iota kappa lambda mu")])
    low = build_run(tmp_path / "low", [*plain_cases(), partial], threshold=0.2)
    high = build_run(tmp_path / "high", [*plain_cases(), partial], threshold=0.9)

    def read(run: Path, memo: FragmentMemo | None) -> tuple[str | None, list[Any]]:
        cases = ReportCases(run / "cases.jsonl", None, 10_000, memo)
        got = [(c.row_json, c.scores_json, c.texts(10_000)) if isinstance(c, SplitCase)
               else c.to_dict() for c in cases]
        return cases.texts_key, got

    memo = FragmentMemo()
    alone = {run.name: read(run, None) for run in (low, high)}
    assert alone["low"][0] == alone["high"][0]  # the same passages
    assert read(low, memo) == alone["low"] and memo.last is not None
    assert memo.last[2] == alone["low"][0] and len(memo.last[1]) == 7
    assert read(high, memo) == alone["high"]  # "partial" has another tail, the same passages
    # A changed passage is another key, as on its own.
    lines = (high / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["references"][0]["content"] = "Changed passage."
    lines[0] = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    (high / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    changed = read(high, None)
    assert changed[0] != alone["high"][0]
    assert read(high, memo) == changed
    # Fewer lines than the last report: another key too.
    (high / "cases.jsonl").write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    assert read(high, memo) == read(high, None)
    # Past max_line_bytes nothing is kept for the next report.
    small = FragmentMemo(max_line_bytes=100)
    assert read(low, small) == alone["low"] and small.last is None

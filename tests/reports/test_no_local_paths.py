"""Shared pages name files without this machine's folders: the dataset, the labels, the results
folders and paths in overrides appear relative to the folder the command ran in when inside it,
else by their name (runner/reports/common.py::place)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.reports.common import place
from tests.calibration.conftest import FIXTURE
from tests.conftest import run_cli
from tests.helpers import SEED_FILE
from tests.reports.conftest import parse
from tests.test_secrets import inflated

LEAN = ["tracking=none", "progress=false"]


def test_a_path_is_shown_relative_to_the_working_folder_or_by_its_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert place(str(tmp_path / "data" / "cases.jsonl")) == "data/cases.jsonl"
    assert place(str(tmp_path / "data" / ".." / "cases.jsonl")) == "cases.jsonl"
    assert place("/srv/elsewhere/team/cases.jsonl") == "cases.jsonl"
    for kept in ("pkg://runner.datasets/demo/cases.jsonl", "data/cases.jsonl",
                 "http://127.0.0.1:5000/v1", 0.5, None):
        assert place(kept) == kept


@pytest.mark.slow
def test_no_page_holds_the_folders_of_its_files(tmp_path: Path) -> None:
    # The command runs in work/; the data and the results are elsewhere, given as absolute
    # paths: every page (and every compressed block in it) is searched for tmp_path.
    work, data, out = tmp_path / "work", tmp_path / "data", tmp_path / "out"
    work.mkdir()
    data.mkdir()
    shutil.copy(SEED_FILE, data / "cases.jsonl")
    shutil.copy(FIXTURE, data / "labels.jsonl")
    common = [f"output_root={out}", *LEAN]
    sweep = run_cli(["-m", "dataset=file", f"dataset.path={data / 'cases.jsonl'}",
                     "model=precomputed", "matcher=substring,ngram", *common], work)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    (sweep_dir,) = (out / "sweeps").iterdir()
    jobs = sorted(p for p in sweep_dir.iterdir() if (p / "report.html").is_file())
    compare = run_cli([str(jobs[0]), str(jobs[1]), "--out", str(out / "compare.html")], work,
                      module="runner.reports.compare")
    assert compare.returncode == 0, compare.stderr[-3000:]
    calibrate = run_cli(["-m", f"calibrate.labels={data / 'labels.jsonl'}",
                         "matcher=substring,ngram",
                         *common], work, module="runner.calibration.app")
    assert calibrate.returncode == 0, calibrate.stderr[-3000:]
    pages = sorted(out.rglob("*.html"))
    assert [p.name for p in pages] == [
        "calibration.html", "calibration.html", "calibration_summary.html", "compare.html",
        "report.html", "report.html", "sweep.html"]
    for page in pages:
        raw = page.read_bytes()
        for text in [raw, *inflated(raw)]:
            for folder in {str(tmp_path), str(tmp_path.resolve())}:
                assert folder.encode() not in text, f"{folder} in {page}"
    # What the pages show instead: the file's or the folder's name.
    report = parse(jobs[0] / "report.html").html
    assert '<span class="muted small">(cases.jsonl)</span>' in report
    assert "dataset.path=cases.jsonl" in (sweep_dir / "sweep.html").read_text("utf-8")
    sources = parse(out / "compare.html").texts(data_field="source")
    assert sources == [jobs[0].name, jobs[1].name]
    (summary,) = out.rglob("calibration_summary.html")
    assert '<dd class="mono">labels.jsonl</dd>' in summary.read_text("utf-8")

"""Reports chosen by report._target_: HtmlReports renders, NoReports does nothing, and a report
writes nothing but itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.errors import RagciteError
from runner.reports.base import NoReports, Reporter, make_reports
from runner.reports.html import HtmlReports
from runner.results import result_dirs
from tests.reports.conftest import build_job, build_run, fuzzy_cases, parse, plain_cases


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_make_reports_instantiates_the_target() -> None:
    html = make_reports({"report": {"_target_": "runner.reports.html.HtmlReports",
                                    "max_cases": 3, "page_size": 9}})
    assert isinstance(html, HtmlReports) and isinstance(html, Reporter)
    assert (html.max_cases, html.page_size, html.embed) == (3, 9, "auto")
    none = make_reports({"report": {"_target_": "runner.reports.base.NoReports"}})
    assert isinstance(none, NoReports) and isinstance(none, Reporter)
    assert isinstance(make_reports({}), NoReports)
    with pytest.raises(RagciteError, match="_target_"):
        make_reports({"report": {"format": "html"}})
    with pytest.raises(RagciteError) as exc:
        make_reports({"report": {"_target_": "runner.reports.run.HtmlOptions"}})
    assert str(exc.value) == (
        "report._target_: runner.reports.run.HtmlOptions is not a reporter: it lacks "
        "render_run, render_runs, render_sweep (runner.reports.base.Reporter)")
    with pytest.raises(RagciteError) as exc:
        make_reports({"report": {"_target_": "runner.reports.html.HtmlReports", "embed": "x"}})
    assert str(exc.value) == ("report: cannot build runner.reports.html.HtmlReports: report.embed: "
                              "unknown mode 'x'; choose from: auto, json, gzip")


def test_html_reports_render_runs_and_write_only_the_report(tmp_path: Path) -> None:
    job = tmp_path / "job"
    dirs = build_job(job, fuzzy_cases(), [0.05, 0.5])
    before = _files(job)
    reports = HtmlReports(max_cases=1, page_size=5)
    reports.render_runs(dirs, [None, None])
    assert _files(job) - before == {"report.html"}  # one page for the job's two thresholds
    assert parse(job / "report.html").texts(data_field="threshold-line") == [
        "Threshold 0.05", "Threshold 0.5"]
    run = build_run(tmp_path / "run", plain_cases())
    before = _files(run)
    reports.render_run(result_dirs(run)[0], "http://127.0.0.1:5000/#/r/1")
    assert _files(run) - before == {"report.html"}


def test_no_reports_render_nothing(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", plain_cases())
    before = _files(run)
    none = NoReports()
    none.render_run(run, None)
    none.render_runs([run], [None])
    none.render_sweep(tmp_path)
    assert _files(run) == before and not (tmp_path / "sweep.html").exists()


def test_a_page_that_fails_as_it_is_written_leaves_no_file(tmp_path: Path) -> None:
    from runner.reports.common import write_html

    def pieces() -> Iterator[str]:  # a page is written piece by piece as it renders
        yield "<html>"
        raise ValueError("a template error")

    with pytest.raises(ValueError, match="a template error"):
        write_html(tmp_path / "report.html", pieces())
    assert _files(tmp_path) == set()  # neither the page nor its temporary file
    assert write_html(tmp_path / "report.html", iter(["<p>", "a", "</p>"])).read_text(
        encoding="utf-8") == "<p>a</p>"

"""The report helper of a sweep (runner/reports/host.py, ``ReportHost``): one forked process that
renders the job reports in order, each exactly as a report rendered on its own."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
import yaml

from runner.errors import RagciteError
from runner.reports.host import ReportHost, active_host
from runner.reports.run import render_run_report
from tests.helpers import true_in_forked_child
from tests.reports.conftest import _case, build_run, plain_cases

LINK = "http://127.0.0.1:5000/#/experiments/1/runs/abc"


def _page(path: Path) -> str:
    """The page without the minute it was generated in."""
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "<when>", path.read_text(encoding="utf-8"))


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    partial = _case("partial", "Which steps?",
                    [("A.pdf", "alpha beta gamma delta epsilon zeta eta theta")],
                    [("A.pdf", "alpha beta gamma delta iota kappa lambda mu")])
    return (build_run(tmp_path / "low", [*plain_cases(), partial], threshold=0.2),
            build_run(tmp_path / "high", [*plain_cases(), partial], threshold=0.9))


def test_reports_are_rendered_in_order_each_as_on_its_own(tmp_path: Path) -> None:
    low, high = _runs(tmp_path)
    host = ReportHost()
    try:
        assert active_host() is host
        assert host._proc.pid != os.getpid()
        host.render(low)
        host.render(high, LINK)
        host.wait(high)  # receives low's outcome on the way, kept for its own wait
        host.wait(low)
        with pytest.raises(RagciteError, match=r"report of .* was never requested"):
            host.wait(low)  # one wait per request
    finally:
        host.close()
    assert active_host() is None and host._proc.exitcode == 0
    render_run_report(low, output=tmp_path / "low.html")
    render_run_report(high, tracking_link=LINK, output=tmp_path / "high.html")
    assert _page(low / "report.html") == _page(tmp_path / "low.html")
    assert _page(high / "report.html") == _page(tmp_path / "high.html")
    assert LINK in _page(high / "report.html") and LINK not in _page(low / "report.html")


def test_a_failed_report_is_its_jobs_error_alone(tmp_path: Path,
                                                 capfd: pytest.CaptureFixture[str]) -> None:
    low, high = _runs(tmp_path)
    (low / "config.yaml").write_text(yaml.safe_dump({"report": {"page_size": 0}}),
                                     encoding="utf-8")
    host = ReportHost()
    try:
        host.render(low)
        host.render(high)
        with pytest.raises(RagciteError) as failed:
            host.wait(low)
        assert str(failed.value) == (
            f"the HTML report of {low} failed (ValueError: report.page_size must be at least "
            "1; its traceback is printed above)")
        host.wait(high)  # the helper went on
    finally:
        host.close()
    assert not (low / "report.html").exists() and (high / "report.html").is_file()
    err = capfd.readouterr().err
    assert "Traceback" in err and "ValueError: report.page_size must be at least 1" in err


def test_a_helper_that_died_is_an_error_not_a_hang(tmp_path: Path) -> None:
    low, _ = _runs(tmp_path)
    host = ReportHost()
    try:
        os.kill(host._proc.pid, signal.SIGKILL)
        host._proc.join(timeout=30)
        with pytest.raises(RagciteError, match=r"^the report process stopped \(exit code -9"):
            host.render(low)
            host.wait(low)
    finally:
        host.close()


def test_a_forked_child_does_not_see_the_helper(tmp_path: Path) -> None:
    host = ReportHost()
    try:
        assert true_in_forked_child(lambda: active_host() is None)
        assert active_host() is host
    finally:
        host.close()

"""Which reports a run or sweep writes: an object chosen by ``report._target_``.

``conf/report/html.yaml`` names :class:`runner.reports.html.HtmlReports`, ``conf/report/none.yaml``
:class:`NoReports`. The pipeline and the sweep call only the members of :class:`Reporter`:

* ``render_run(result_dir, link)`` after a job that decides one threshold;
* ``render_runs(result_dirs, links)`` after a job that decides several (one page in the job
  folder with a threshold switch; their shared ``passages.parquet`` embedded once);
* ``render_sweep(sweep_dir)`` once ``sweep.json`` is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from runner.errors import RagciteError


@runtime_checkable
class Reporter(Protocol):
    """What renders the reports of results folders."""

    def render_run(self, result_dir: Path, link: str | None) -> None:
        """Render the report of one result folder (`link`: the tracked run, or None)."""

    def render_runs(self, result_dirs: Sequence[Path], links: Sequence[str | None]) -> None:
        """Render the reports of a job's result folders (one link each)."""

    def render_sweep(self, sweep_dir: Path) -> None:
        """Render the report of a sweep folder from its ``sweep.json``."""


class NoReports:
    """``report=none``: nothing is rendered."""

    def _nothing(self, *_: Any, **__: Any) -> None:
        """Render nothing."""

    render_run = render_runs = render_sweep = _nothing


def make_reports(cfg: Mapping[str, Any]) -> Reporter:
    """The :class:`Reporter` of a composed config: ``cfg["report"]`` instantiated by its
    ``_target_`` (no ``report`` section: :class:`NoReports`).

    Raises:
        RagciteError: The section has no ``_target_``, its target fails (a bad option), or it
            does not make a :class:`Reporter` (:func:`runner.config.plugins.build`).
    """
    section = cfg.get("report")
    if not section:
        return NoReports()
    if not isinstance(section, Mapping) or not section.get("_target_"):
        raise RagciteError("report: a report section needs a _target_ (e.g. "
                         "runner.reports.html.HtmlReports); use report=none for no reports")
    from runner.config.plugins import build

    return build(section, "report", protocol=Reporter)

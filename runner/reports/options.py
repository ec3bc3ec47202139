"""The options of the HTML reports (``conf/report/html.yaml``; schema ``HtmlReportConf``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

EMBED_CHOICES = ("auto", "json", "gzip")


@dataclass
class HtmlOptions:
    """How the HTML reports are rendered.

    Attributes:
        page_size: Rows per page of the run report's per-case table.
        max_cases: Cases embedded in the per-case table (None = all); the figures always cover
            every case (they come from ``metrics.json``).
        max_text_chars: Passages, answers and queries longer than this are cut in the report
            (the results files keep them whole).
        embed: ``json`` (plain JSON), ``gzip`` (compressed, for big runs) or ``auto`` (gzip
            once the JSON exceeds ``gzip_above_mb``).
        gzip_above_mb: The ``auto`` threshold in megabytes.
        max_failed_listed: Failed cases listed in the "Failed cases" section (at most the
            ``failed.listed`` of ``metrics.json``, which scoring bounds the same way).
    """

    page_size: int = 50
    max_cases: int | None = 20_000
    max_text_chars: int = 10_000
    embed: str = "auto"
    gzip_above_mb: float = 2.0
    max_failed_listed: int = 500

    def __post_init__(self) -> None:
        if self.page_size < 1:
            raise ValueError("report.page_size must be at least 1")
        if self.embed not in EMBED_CHOICES:
            raise ValueError(f"report.embed must be auto, json or gzip, not {self.embed!r}")
        if self.max_cases is not None and self.max_cases < 0:
            raise ValueError("report.max_cases must not be negative")

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None) -> HtmlOptions:
        """The options from a ``report`` config section (other keys, e.g. ``_target_``,
        ignored; a null option takes its default, except ``max_cases``: null embeds all)."""
        known = {f.name for f in fields(HtmlOptions)}
        kwargs = {k: v for k, v in (data or {}).items()
                  if k in known and (v is not None or k == "max_cases")}
        return HtmlOptions(**kwargs)

    def options(self) -> HtmlOptions:
        """These options as a plain :class:`HtmlOptions`."""
        return HtmlOptions(**{f.name: getattr(self, f.name) for f in fields(HtmlOptions)})

"""Fixtures of the report tests: result folders built with the real scoring (written with
:mod:`runner.results`, as a job writes them), and Chromium.

Browser tests drive Debian's headless Chromium (``/usr/bin/chromium``) through Playwright; every
page is opened from ``file://`` and watched for console errors, page errors, dialogs and network
requests. Screenshots go to ``test-artifacts/reports/`` in the repository (git-ignored).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest

import runner
from runner.data.models import Case, Citation, Reference, Response
from runner.results import PASSAGES_FILE, CaseResult, write_job, write_result

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "reports"
CHROMIUM = Path(os.environ.get("RAGCITE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

# XSS payloads: each sets window.__xss or opens a dialog if it ever runs.
SCRIPT = "<script>window.__xss=1</script>"
IMG = '"><img src=x onerror="window.__xss=1;alert(1)">'
CLOSE = "</script><script>window.__xss=1</script><!--"
SVG = "<svg onload=window.__xss=1>'\"&amp;"

VPN = ("Remote workers must use a company-approved VPN at all times when accessing internal "
       "systems from outside the office.")
ENCRYPTION = ("All devices used for remote work must have full-disk encryption and approved "
              "endpoint security software installed.")
DEVICES = ("Employees must not store confidential company data on personal devices or "
           "unapproved cloud storage services.")
REQUEST = ("Employees shall submit a remote work request at least five (5) business days prior "
           "to the requested start date.")
TRAINING = "Annual security training is mandatory for all employees with access to sensitive data."


def _case(cid: str, query: str, refs: Sequence[tuple[str, str]],
          cits: Sequence[tuple[str, str]] | None, answer: str = "", error: str | None = None,
          metadata: dict[str, Any] | None = None) -> Case:
    response = None
    if cits is not None or error is not None:
        response = Response(answer=answer, error=error,
                            citations=[Citation(source=s, content=c) for s, c in cits or []])
    return Case(id=cid, query=query, references=[Reference(source=s, content=c) for s, c in refs],
                response=response, metadata=metadata or {})


def plain_cases() -> list[Case]:
    """A small run with every label, an empty reference, a failed case and a cited-twice one."""
    return [
        _case("seed-1", "How early must I ask to work remotely?",
              [("Remote Work Policy.pdf", REQUEST)], [("Remote Work Policy.pdf", REQUEST)],
              answer="Five business days ahead."),
        _case("seed-2", "What security rules apply when working remotely?",
              [("Data Security Policy.pdf", VPN), ("Remote Work Policy.pdf", ENCRYPTION),
               ("Acceptable Use Policy.pdf", DEVICES)],
              [("Data Security Policy.pdf", VPN), ("Remote Work Policy.pdf", REQUEST),
               ("IT Compliance Handbook.pdf", TRAINING)], answer="Use the VPN."),
        _case("seed-3", "Is training mandatory?", [("IT Compliance Handbook.pdf", TRAINING)],
              [("Other.pdf", "Something unrelated entirely, nothing in common here.")],
              metadata={"topic": "training"}),
        _case("empty-ref", "Which policy covers devices?", [("Acceptable Use Policy.pdf", "")],
              [("Acceptable Use Policy.pdf", DEVICES)]),
        _case("no-cits", "Anything about VPN?", [("Data Security Policy.pdf", VPN)], []),
        _case("broken", "Will this fail?", [("Data Security Policy.pdf", VPN)], None,
              error="TimeoutError: the model did not answer"),
    ]


def _mangle(text: str, every: int) -> str:
    return " ".join("zz" if i % every == 0 else w for i, w in enumerate(text.split()))


def fuzzy_cases() -> list[Case]:
    """Citations that match their reference only at low thresholds: ngram similarity 0.375
    (every 5th word replaced) and 0.0667 (every 3rd), and a failed case."""
    return [
        _case("fuzzy-1", "VPN rules?", [("Data Security Policy.pdf", VPN)],
              [("Data Security Policy.pdf", _mangle(VPN, 5))]),
        _case("fuzzy-2", "Encryption rules?", [("Remote Work Policy.pdf", ENCRYPTION)],
              [("Remote Work Policy.pdf", _mangle(ENCRYPTION, 3))]),
        _case("broken", "Will this fail?", [("Data Security Policy.pdf", VPN)], None,
              error="TimeoutError: the model did not answer"),
    ]


def xss_cases() -> list[Case]:
    """Payloads in ids, queries, answers, sources, passages, metadata and errors."""
    return [
        _case(f"x-{SCRIPT}", f"Query {SCRIPT} {IMG}", [(f"Doc {IMG}.pdf", f"{VPN} {CLOSE}")],
              [(f"Doc {IMG}.pdf", f"{VPN} {CLOSE}")], answer=f"Answer {SVG} {CLOSE}",
              metadata={"note": CLOSE, SCRIPT: IMG}),
        _case(f"y-{IMG}", f"Second {CLOSE}", [(f"Src {SCRIPT}", f"{ENCRYPTION} {SVG}")],
              [(f"Other {CLOSE}", f"{DEVICES} {IMG}")]),
        _case(f"z-{CLOSE}", f"Third {SVG}", [(f"S {SVG}", TRAINING)], None,
              error=f"RuntimeError: {SCRIPT} {IMG}"),
    ]


def extra(name: str, dataset: str = "fixture", model: str = "precomputed",
          matcher: str = "ngram", threshold: float = 0.5, digest: str = "0123abcd",
          identity: dict[str, Any] | None = None, level: str | None = None,
          index: int = 0) -> dict[str, Any]:
    """The identity part of metrics.json as the pipeline writes it."""
    now = dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.timezone.utc).isoformat()
    return {
        "threshold": {"value": threshold, "level": level, "index": index},
        "run": {"name": name, "ragcite_version": runner.__version__, "started_at": now,
                "finished_at": now, "output_dir": "."},
        "dataset": {"name": dataset, "path": "cases.jsonl", "digest": digest, "n_cases": 0},
        "model": {"name": model, "identity": {"class": "x", "system": "fixture"}},
        "matcher": {"name": matcher, "identity": identity or {"class": "y", "n": 3}},
        "scoring": {"zero_division": "auto", "require_same_source": False,
                    "source_normalization": ["nfc", "casefold"],
                    "bands": {"green": 0.75, "medium": 0.25}},
        "usage": {}, "gates": {"passed": True, "failures": [], "config": {}},
        "execution": {"workers": 1, "timings": {}, "cache": {}},
    }


def _write(folder: Path, cases: Sequence[Case], matcher: str, threshold: float,
           passages: str, report: dict[str, Any] | None,
           knowledge_base: dict[str, str] | None = None, **extra_args: Any) -> Path:
    result = runner.evaluate(cases, matcher=matcher, threshold=threshold, bootstrap_resamples=200,
                             knowledge_base=knowledge_base)
    result.extra = extra(matcher=matcher, threshold=threshold, **extra_args)
    result.extra["dataset"]["n_cases"] = len(cases)
    write_result(folder, result, passages=passages)
    if report is not None:
        import yaml

        (folder / "config.yaml").write_text(yaml.safe_dump({"report": report}), encoding="utf-8")
    return folder


def build_run(folder: Path, cases: Sequence[Case], matcher: str = "ngram",
              threshold: float = 0.5, name: str | None = None, dataset: str = "fixture",
              report: dict[str, Any] | None = None, **extra_args: Any) -> Path:
    """Score `cases` with the real engine and write a job folder deciding one threshold (its
    own result folder: passages.parquet, cases.parquet, metrics.json, job.json)."""
    _write(folder, cases, matcher, threshold, PASSAGES_FILE, report,
           name=name or folder.name, dataset=dataset, **extra_args)
    write_job(folder, ["."])
    return folder


def build_job(folder: Path, cases: Sequence[Case], thresholds: Sequence[float],
              matcher: str = "ngram", name: str | None = None, level: str | None = None,
              report: dict[str, Any] | None = None, **extra_args: Any) -> list[Path]:
    """A job folder deciding several thresholds: one passages.parquet, a result folder
    ``t<value>`` per threshold, job.json. Returns the result folders."""
    dirs = []
    for index, threshold in enumerate(thresholds):
        dirs.append(_write(folder / f"t{threshold:g}", cases, matcher, threshold,
                           f"../{PASSAGES_FILE}", report, name=name or folder.name, level=level,
                           index=index, **extra_args))
    write_job(folder, [d.name for d in dirs])
    return dirs


def read_cases_raw(folder: Path) -> list[CaseResult]:
    from runner.results import read_cases

    return list(read_cases(folder))


# --- HTML without a browser ----------------------------------------------------------------------


class _Collector(HTMLParser):
    """Texts of elements by attribute, and the raw text of <script> elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str | None], list[str]]] = []
        self.elements: list[tuple[str, dict[str, str | None], str]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: tuple[dict[str, str | None], list[str]] | None = None

    VOID: ClassVar[set[str]] = {"meta", "link", "br", "img", "input", "hr", "col", "source",
                                "wbr"}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._script = (dict(attrs), [])
            return
        if tag in self.VOID:
            self.elements.append((tag, dict(attrs), ""))
            return
        self.stack.append((tag, dict(attrs), []))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs), ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script[0], "".join(self._script[1])))
            self._script = None
            return
        while self.stack:
            name, attrs, parts = self.stack.pop()
            text = "".join(parts)
            self.elements.append((name, attrs, text))
            if self.stack:
                self.stack[-1][2].append(text)
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script[1].append(data)
        elif self.stack:
            self.stack[-1][2].append(data)


@dataclass
class Page:
    """A parsed report: look elements up by attributes."""

    html: str
    parser: _Collector = field(default_factory=_Collector)

    def __post_init__(self) -> None:
        self.parser.feed(self.html)
        self.parser.close()

    def texts(self, **attrs: str) -> list[str]:
        want = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [" ".join(text.split()) for _, a, text in self.parser.elements
                if all(a.get(k) == v for k, v in want.items())]

    def text(self, **attrs: str) -> str:
        found = self.texts(**attrs)
        assert len(found) == 1, (attrs, found)
        return found[0]

    def script(self, element_id: str) -> str:
        found = [text for a, text in self.parser.scripts if a.get("id") == element_id]
        assert len(found) == 1, element_id
        return found[0]


def parse(path: Path) -> Page:
    return Page(path.read_text(encoding="utf-8"))


def assert_no_external_refs(html: str) -> None:
    """No src/href to anything but a relative path or fragment; no http(s) URL loaded."""
    for m in re.finditer(r'\b(?:src|href)\s*=\s*"([^"]*)"', html):
        assert not re.match(r"(?i)(https?:|//|javascript:|data:)", m.group(1)), m.group(0)
    assert "<link" not in html and "@import" not in html


# --- the browser --------------------------------------------------------------------------------


@dataclass
class Watch:
    """What a page did: requests, console messages, errors, dialogs."""

    url: str
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.requests == [self.url], self.requests
        assert [c for c in self.console if c[0] in ("error", "warning")] == [], self.console
        assert self.errors == [], self.errors
        assert self.dialogs == [], self.dialogs


BROWSER_BOUND_MS = 120_000
"""Milliseconds a page may take for any step (Playwright's default is 30 s): generous, as the
suite must pass on a loaded 2-core machine; a step that is done returns at once."""

_SHARED_BROWSER: list[Any] = []
"""The Chromium of the test module being run: other folders' conftests import :func:`browser`
(tests/calibration/, tests/tracking/), and Playwright's sync API starts once per thread."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (Debian's package) driven by Playwright, one per test module: while it
    runs, Playwright's sync API keeps an asyncio loop running in this thread, so a later test
    module that calls ``asyncio.run`` in process (tests/apis/) must not find it still open."""
    if _SHARED_BROWSER:  # started by the same fixture imported into another folder's conftest
        yield _SHARED_BROWSER[0]
        return
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install -y chromium` "
                    "(.ci/run does); the report tests need a real browser")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                       timeout=BROWSER_BOUND_MS)
        _SHARED_BROWSER.append(instance)
        try:
            yield instance
        finally:
            _SHARED_BROWSER.clear()
            instance.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    """``open_page(path) -> (page, watch)``: a fresh page on a file:// URL, being watched."""
    contexts = []

    def _open(path: Path, wait_ready: bool = True) -> tuple[Any, Watch]:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(BROWSER_BOUND_MS)
        contexts.append(context)
        page = context.new_page()
        watch = Watch(url=path.resolve().as_uri())
        page.on("request", lambda r: watch.requests.append(r.url))
        page.on("console", lambda m: watch.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: watch.errors.append(str(e)))

        def _dialog(d: Any) -> None:
            watch.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", _dialog)
        page.goto(watch.url)
        if wait_ready:
            # (wait_for_function would evaluate a string, which the report's CSP forbids)
            page.locator("html[data-ready='1']").wait_for(state="attached")
        return page, watch

    yield _open
    for context in contexts:
        context.close()


def screenshot(page: Any, name: str) -> Path:
    """Keep a full-page screenshot as a test artifact; returns (and prints) its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))

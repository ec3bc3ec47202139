"""What the three HTML reports share: the Jinja environment, formatting, the label bars (run
and sweep reports), safe embedding.

Every report is one self-contained file: CSS and JavaScript are inlined, charts are inline SVG,
data is embedded as JSON in ``<script type="application/json">`` blocks, and a Content Security
Policy forbids every network request and every script but the report's own (by hash). So a
report opened from disk makes no request, and text from the data can never run as code even if
it slipped past the escaping.

Templates live in ``templates/`` (the package ``runner.templates``) and are loaded through
:mod:`importlib.resources`, which works for editable and wheel installs alike.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jinja2
import orjson
from markupsafe import Markup

from runner.config.naming import params_text, place
from runner.scoring.explain import signed, undefined
from runner.scoring.labels import CITATION_LABELS, KINDS, LABEL_TEXT, REFERENCE_LABELS
from runner.scoring.metrics import METRIC_KEYS, METRICS, declared

TEMPLATE_PACKAGE = "runner.templates"
CSS_FILE = "report.css"
JS_FILE = "report.js"

EXPLANATION_KEYS = tuple(m.explains for m in declared(METRIC_KEYS) if m.explains)
"""The explanations of a case in the order the reports show them."""


def fmt(value: Any, digits: int = 3) -> str:
    """A metric value as shown in every report: fixed decimals, ``n/a`` when undefined.

    Tests compare report text with ``metrics.json`` through this same function.
    """
    return "n/a" if undefined(value) else f"{float(value):.{digits}f}"


def pct(share: float | None, digits: int = 0) -> str:
    """A share (``metrics.json`` → ``label_shares``) as a percentage (``—`` when undefined)."""
    return "—" if share is None else f"{100.0 * share:.{digits}f}%"


def clip(text: Any, limit: int) -> str:
    """`text` as a string, cut after `limit` characters with a note of how much was cut."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [cut in the report: {len(text) - limit:,} more characters]"


def short_date(iso: str | None) -> str:
    """``2026-12-02T10:48:41+00:00`` → ``2026-12-02 10:48 UTC`` (the input when unparseable)."""
    if not iso:
        return "unknown"
    try:
        stamp = dt.datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if stamp.tzinfo is not None:
        return stamp.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return stamp.strftime("%Y-%m-%d %H:%M")


def stacked_bars(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The citation and the reference labels of one result (``metrics.json``), each label in
    order with its count (``labels``) and share (``label_shares``), and their total
    (``counts``): the templates draw each kind as a stacked bar."""
    labels, shares = metrics.get("labels") or {}, metrics.get("label_shares") or {}
    return [{"kind": kind, "total": int((metrics.get("counts") or {}).get(kind) or 0),
             "segments": [{"label": name, "key": prefix + name, "share": shares.get(prefix + name),
                           "count": int(labels.get(prefix + name) or 0)} for name in names]}
            for kind, prefix, names in KINDS]


def safe_href(url: str | None) -> str | None:
    """`url` when it is safe as a link (http, https, file or relative), else None.

    A ``javascript:`` or ``data:`` link from a config or a tracking server is never rendered as
    a link; the template shows it as text instead.
    """
    if not url:
        return None
    scheme = urlsplit(str(url)).scheme.lower()
    return str(url) if scheme in ("", "http", "https", "file") else None


def _escape_script_json(text: str) -> str:
    # Inside <script> the HTML parser ends the element at "</script" and treats "<!--" specially;
    # JSON allows "\u003c" for "<", so no "<" (and no ">" or "&") survives in the block at all.
    # U+2028/2029 are valid in JSON strings; escaped anyway for older JavaScript parsers.
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def embed_json(data: Any) -> Markup:
    """`data` as JSON that is safe inside ``<script type="application/json">``.

    Parse it in the page with ``JSON.parse(element.textContent)``.
    """
    return Markup(_escape_script_json(dumps_compact(data).decode("utf-8")))


def dumps_compact(data: Any) -> bytes:
    """Compact, strict JSON (NaN written as null), non-ASCII kept as is, as UTF-8.

    orjson writes the same text as ``json.dumps(..., separators=(",", ":"))`` several times
    faster (the case data of a 20,000-case report); what it cannot encode (non-string keys,
    integers beyond 64 bits) goes through the standard library.
    """
    try:
        return orjson.dumps(data)
    except TypeError:
        return json.dumps(data, ensure_ascii=False, allow_nan=False,
                          separators=(",", ":")).encode("utf-8")


def embed_packed(text: bytes, gzipped: bool) -> Markup:
    """A JSON document `text` (UTF-8) wrapped for an embedded block, safe inside ``<script>``.

    Plain: ``{"encoding": "json", "data": <text>}``. `gzipped`: ``{"encoding": "gzip-base64",
    "bytes": n, "data": "<base64 of gzipped text>"}``, the UTF-8 bytes of `text` gzipped (no
    timestamp: the same text packs the same), which the page inflates with the browser's
    built-in ``DecompressionStream``. Base64 holds no character that could end the block.
    """
    if not gzipped:
        return Markup(_escape_script_json('{"encoding":"json","data":' + text.decode("utf-8")
                                          + "}"))
    data = base64.b64encode(gzip.compress(text, compresslevel=3, mtime=0)).decode("ascii")
    return Markup(f'{{"encoding":"gzip-base64","bytes":{len(text)},"data":"{data}"}}')


@cache
def environment() -> jinja2.Environment:
    """The Jinja environment of the reports: autoescape on, undefined names are errors."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(files(TEMPLATE_PACKAGE))),
                             autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(fmt=fmt, signed=signed, pct=pct, short_date=short_date, place=place,
                       clip=clip, params_text=params_text, safe_href=safe_href)
    env.globals.update(METRIC_KEYS=METRIC_KEYS, METRICS=METRICS, LABEL_TEXT=LABEL_TEXT,
                       EXPLANATION_KEYS=EXPLANATION_KEYS,
                       CITATION_LABELS=CITATION_LABELS, REFERENCE_LABELS=REFERENCE_LABELS)
    return env


@cache
def page_assets() -> dict[str, Any]:
    """The inline stylesheet and script, and the Content Security Policy that admits them."""
    css, js = ((files(TEMPLATE_PACKAGE) / name).read_text(encoding="utf-8")
               for name in (CSS_FILE, JS_FILE))
    for name, text, closing in ((CSS_FILE, css, "</style"), (JS_FILE, js, "</script")):
        if closing in text.lower():
            raise ValueError(f"{name} must not contain {closing!r}")
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    csp = ("default-src 'none'; style-src 'unsafe-inline'; "
           f"script-src 'sha256-{digest}'; img-src 'none'; base-uri 'none'; "
           "form-action 'none'")
    return {"css": Markup(css), "js": Markup(js), "csp": csp}


def render(template: str, **context: Any) -> Iterator[str]:
    """Render a report template with the shared assets and page facts, piece by piece (as
    :func:`write_html` writes them: the page is never held whole)."""
    from runner import __version__

    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return environment().get_template(template).generate(
        assets=page_assets(), version=__version__, generated_at=now, **context)


def write_html(path: Path, text: str | Iterable[str]) -> Path:
    """Write a report (or a summary) atomically: a reader never sees a half-written file, and
    a write that fails (a full disk) leaves none behind and names `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.writelines([text] if isinstance(text, str) else text)
    except BaseException as exc:  # a failed write, or a page that fails as it renders
        with contextlib.suppress(OSError):  # none was made on a read-only file system
            tmp.unlink()
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    tmp.replace(path)
    return path

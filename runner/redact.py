"""Keep secrets out of everything a run writes and prints.

A key is secret when its name contains ``api_key``, ``secret``, ``password`` or
``authorization``, or ends with ``token`` (``access_token``, ``accessToken``; not a count such
as ``max_tokens`` or ``chars_per_token``, nor ``tokenizer``), case-insensitive, or when it sits
under a ``headers`` mapping. A header's
value names environment variables (``RAG_TOKEN``, ``Bearer $RAG_TOKEN``): their values are the
secrets (a header value naming none is a secret itself). So are the password, the query and
the fragment of every URL (``http://user:***@host/v1?***#***``: all of a query, whatever its
parameters are called), those of ``MLFLOW_TRACKING_URI`` and ``OPENAI_BASE_URL`` too. Secret
values are replaced by ``***`` in configs, and :func:`scrub_files` replaces any known secret
value (for example a key given on the command line, which Hydra writes verbatim into
``.hydra/``) in every text file of a folder.

The process also keeps the secrets it has met (:func:`protect`): :func:`guard_output` makes
everything printed to stdout and stderr and every log record carry ``***`` in their place (and
escapes the characters that drive a terminal: :func:`printable`), and
the adapters scrub what a service echoes as it arrives, before it is scored or cached
(:func:`known_secrets`). Scrubbing is by text, so a value shorter than :data:`MIN_SECRET` is
never a secret; binary-like values (cached vectors) are never scrubbed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REDACTED = "***"
MIN_SECRET = 4
"""Shorter values are never treated as secrets (replacing them would garble every output)."""
_SECRET_KEY = re.compile(r"api_?key|secret|password|authorization|(?<!per_)token$", re.IGNORECASE)
# Environment variables whose values must never appear in outputs.
SECRET_ENV_VARS = ("OPENAI_API_KEY", "MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_PASSWORD")
# Environment variables holding a URL, whose secret parts must never appear in outputs.
URL_ENV_VARS = ("MLFLOW_TRACKING_URI", "OPENAI_BASE_URL")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A ``$NAME`` or ``${NAME}`` reference to an environment variable in a header value.
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_OC_ENV = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)")


# A URL's secret parts: the password of its user-info (scheme://user:PASSWORD@host), and its
# query and fragment (...?QUERY#FRAGMENT), which end before a space, a quote, or a sentence's
# punctuation (``at http://h/?q=1: ...``).
_URI_PASSWORD = re.compile(r"(?P<pre>\b[A-Za-z][\w+.-]*://[^:/@\s]*:)(?P<pw>[^@\s/]+)@")
_URL_TAIL = re.compile(r"\b[A-Za-z][\w+.-]*://[^?#\s'\"]*?(?:\?(?P<query>[^#\s'\"]*?))?"
                       r"(?:#(?P<fragment>[^\s'\"]*?))?(?=[.,:;)]*(?:[\s'\"]|$))")
_TAIL = ("fragment", "query")  # from the end: replacing one keeps the other's place


def _masked(match: re.Match[str]) -> str:
    text, start = match[0], match.start()
    for name in _TAIL:
        if match[name]:
            low, high = match.span(name)
            text = f"{text[:low - start]}{REDACTED}{text[high - start:]}"
    return text


def mask_uri(text: str) -> str:
    """`text` with the password, the query and the fragment of every URL in it replaced by
    ``***`` (``http://user:***@host/v1?***#***``)."""
    return _URL_TAIL.sub(_masked, _URI_PASSWORD.sub(lambda m: f"{m['pre']}{REDACTED}@", text))


def _url_secrets(text: str) -> set[str]:
    """The secret parts of every URL in `text` (the query as a whole: never a common word)."""
    return {m["pw"] for m in _URI_PASSWORD.finditer(text)} | {
        m[g] for m in _URL_TAIL.finditer(text) for g in _TAIL if m[g]}


def is_secret_key(key: str) -> bool:
    """True for a key name that holds a secret."""
    return bool(_SECRET_KEY.search(str(key)))


def redact(obj: Any, _under_headers: bool = False) -> Any:
    """A copy of a plain dict/list structure with every secret value replaced by ``***``."""
    if isinstance(obj, dict):
        return {key: REDACTED if (_under_headers or is_secret_key(key)) and value is not None
                and not isinstance(value, (dict, list))
                else redact(value, _under_headers or str(key).lower() == "headers")
                for key, value in obj.items()}
    if isinstance(obj, list):
        return [mask_uri(redact_override(v)) if isinstance(v, str)
                else redact(v, _under_headers) for v in obj]
    if isinstance(obj, str):
        return mask_uri(obj)
    return obj


def _is_header_key(key: str) -> bool:
    """True for an override key under a ``headers`` mapping (``model.headers.Authorization``)."""
    return ".headers." in f".{key.lstrip('+~')}."


def redact_override(text: str) -> str:
    """Redact a ``key=value`` override string whose key is secret (or under ``headers``)."""
    key, sep, _ = text.partition("=")
    return f"{key}={REDACTED}" if sep and (is_secret_key(key) or _is_header_key(key)) else text


def header_env_names(spec: str) -> list[str]:
    """The environment variables a header value names: the value itself when it is a name
    (``RAG_TOKEN``), else its ``$NAME`` and ``${NAME}`` references (``Bearer $RAG_TOKEN``); none
    for a literal value."""
    spec = str(spec)
    return [spec] if _ENV_NAME.match(spec) else [a or b for a, b in ENV_REF.findall(spec)]


def header_secrets(spec: str) -> set[str]:
    """The secrets of one header value: the values of the environment variables it names, or
    the value itself when it names none (a literal, or ``${oc.env:NAME}`` and its value)."""
    names = header_env_names(spec)
    return {value for name in names if (value := os.environ.get(name))} if names else (
        _secret_text(str(spec)))


def _secret_text(value: str) -> set[str]:
    """A secret value, plus the values of the environment variables it reads with
    ``${oc.env:NAME}`` (shown unresolved by ``--cfg``, resolved in the job)."""
    return {value} | {v for name in _OC_ENV.findall(value) if (v := os.environ.get(name))}


@functools.lru_cache(maxsize=1)
def _override_parser() -> Any:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def _override_values(override: str, value: str) -> set[str]:
    """An override's value as typed and, as Hydra reads it, each value it stands for (the
    elements of a sweep ``a,b`` or ``choice(a,b)``, a quoted string unquoted)."""
    from hydra.errors import HydraException

    values = {value}
    try:
        parsed = _override_parser().parse_override(override)
    except (HydraException, RecursionError):  # not one Hydra reads: the value as typed is all
        return values
    if parsed.is_sweep_override():
        values.update(str(v) for v in parsed.sweep_string_iterator())
    elif isinstance(parsed.value(), str):
        values.add(parsed.value())
    return values


def override_secrets(text: str) -> set[str]:
    """The secrets of one command-line argument: the value (each value of a sweep) of a
    ``key=value`` override whose key is secret, the header rule for a key under ``headers``,
    and the secret parts of any URL (in each value too)."""
    key, sep, value = text.partition("=")
    values = _override_values(text, value) if sep else set()
    found = set().union(*map(secret_values, [text, *values]))
    if sep and _is_header_key(key):
        found = found.union(*map(header_secrets, values))
    elif sep and is_secret_key(key):
        found = found.union(*map(_secret_text, values))
    return found


def secret_values(obj: Any, _under_headers: bool = False) -> set[str]:
    """Every secret string value found in a plain structure: a list is read as command-line
    overrides (:func:`override_secrets`), a string for its URLs' secret parts
    (:func:`mask_uri`)."""
    found: set[str] = set()
    if isinstance(obj, str):
        found = _url_secrets(obj)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, str) and _under_headers:
                found |= header_secrets(value)
            elif isinstance(value, str) and is_secret_key(key):
                found |= _secret_text(value)
            else:  # a string for its URLs (the headers flag is for what lies below)
                found |= secret_values(value, _under_headers or str(key).lower() == "headers")
    elif isinstance(obj, list):
        for value in obj:
            found |= (override_secrets(value) if isinstance(value, str)
                      else secret_values(value, _under_headers))
    return {v for v in found if v and v != REDACTED and len(v) >= MIN_SECRET}


def env_secrets() -> set[str]:
    """Values of the secret environment variables that are set, and the secret parts of the
    URLs in :data:`URL_ENV_VARS`."""
    urls = " ".join(os.environ.get(name, "") for name in URL_ENV_VARS)
    return {v for name in SECRET_ENV_VARS
            if (v := os.environ.get(name)) and len(v) >= MIN_SECRET} | secret_values(urls)


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of each secret with ``***``."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def scrub_data(obj: Any, secrets: Iterable[str]) -> Any:
    """A copy of plain JSON-like data with every secret replaced in its strings (keys too)."""
    secrets = tuple(sorted(secrets, key=len, reverse=True))
    if not secrets:
        return obj

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return scrub_text(value, secrets) if any(s in value for s in secrets) else value
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v) for v in value]
        return value

    return walk(obj)


def scrub_files(folder: str | Path, secrets: Iterable[str]) -> list[Path]:
    """Rewrite every text file under `folder` (or the file `folder`) that contains a secret;
    returns those files. A file is decoded only when a secret's bytes occur in it; a YAML
    file's strings are scrubbed and it is dumped again (plain text replacement could leave
    ``key: ***``, which YAML reads as an alias), unless it does not parse."""
    import yaml

    secrets = [s for s in secrets if s]
    changed: list[Path] = []
    if not secrets:
        return changed
    needles = [s.encode("utf-8", "surrogatepass") for s in secrets]
    root = Path(folder)
    for path in [root] if root.is_file() else root.rglob("*"):
        if not path.is_file() or path.suffix in (".sqlite", ".db", ".png"):
            continue
        try:
            data = path.read_bytes()
            if not any(needle in data for needle in needles):
                continue
            text = data.decode("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        clean = scrub_text(text, secrets)
        if clean != text and path.suffix in (".yaml", ".yml"):
            with contextlib.suppress(yaml.YAMLError):
                data = yaml.safe_load(text)
                clean = yaml.safe_dump(scrub_data(data, secrets), sort_keys=False,
                                       allow_unicode=True)
        if clean != text:
            path.write_text(clean, encoding="utf-8")
            changed.append(path)
    return changed


# --- the secrets this process has met, and its output guarded against them -------------------

_KNOWN: tuple[str, ...] = ()  # longest first: a secret inside another is replaced after it


def protect(values: Iterable[str]) -> set[str]:
    """Add secrets to those this process keeps out of what it prints, logs and caches.

    Returns:
        The given values that count as secrets (at least :data:`MIN_SECRET` characters).
    """
    global _KNOWN
    new = {v for v in values if v and v != REDACTED and len(v) >= MIN_SECRET}
    if not new.issubset(_KNOWN):
        _KNOWN = tuple(sorted(set(_KNOWN) | new, key=len, reverse=True))
    return new


def known_secrets() -> tuple[str, ...]:
    """Every secret this process has met (:func:`protect`), longest first."""
    return _KNOWN


# What drives a terminal: C0 controls (ESC, CR, BEL, backspace, ...), DEL, C1 controls, and
# the bidirectional overrides and isolates that reorder what is shown.
_CONTROLS = r"\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_TERMINAL = re.compile(f"[{_CONTROLS}]")
_ONE_LINE = re.compile(f"[\\t\\n{_CONTROLS}]")


def printable(text: str, one_line: bool = False) -> str:
    """`text` with every character that could drive a terminal written as Python escapes it
    (``\\x1b``, ``\\r``, ``\\u202e``); tabs and line breaks too when `one_line`."""
    return (_ONE_LINE if one_line else _TERMINAL).sub(lambda m: ascii(m[0])[1:-1], text)


def terminal() -> Any:
    """Standard error without the guard, for progress bars: their text is ragcite's own, and
    they redraw their line with ``\\r``."""
    stream = sys.stderr
    return stream._stream if isinstance(stream, _ScrubbedStream) else stream


class _ScrubbedStream:
    """A text stream writing through to `stream` with every known secret replaced and every
    control character but tab and line break escaped (:func:`printable`)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(scrub_text(text, _KNOWN)))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _one_line(value: Any) -> Any:
    """A log call's argument (a case id, an error, a server's reply) as one printable line."""
    if not isinstance(value, (str, BaseException)):
        return value
    clean = printable(str(value), one_line=True)
    return value if clean == str(value) else clean


def _scrubbing_factory(make: Any) -> Any:
    """A log-record factory: `make`'s records, their message and traceback scrubbed and made
    printable (so every handler, the console's and the job's log file alike, writes ``***``
    and ``\\x1b``); each argument of the message is kept on one line."""

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        if isinstance(record.args, tuple):
            record.args = tuple(map(_one_line, record.args))
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: logging reports it when it formats the record
            return record
        clean = printable(scrub_text(message, _KNOWN))
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            record.exc_text = printable(scrub_text(
                logging.Formatter().formatException(record.exc_info), _KNOWN))
        return record

    factory.ragcite_scrubs = True  # type: ignore[attr-defined]
    return factory


def guard_output(argv: Sequence[str]) -> set[str]:
    """Keep secrets and terminal controls out of everything this process prints or logs from
    now on.

    Installs, once, a scrubbing wrapper around ``sys.stdout`` and ``sys.stderr`` (what Hydra
    prints: a sweep's launch lines, ``--cfg``, ``--info``, errors; tracebacks; warnings) and a
    log-record factory (every handler, including log files); then protects the secrets of
    `argv`. Both escape the control characters a case id, an error or a server's reply may
    carry (:func:`printable`), so that no data can retitle, clear or rewrite a terminal.

    Args:
        argv: Command-line arguments or overrides (``model.openai_api_key=sk-...``).

    Returns:
        The secrets of `argv` and of the secret environment variables.
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _ScrubbedStream):
            setattr(sys, name, _ScrubbedStream(stream))
    if not getattr(logging.getLogRecordFactory(), "ragcite_scrubs", False):
        logging.setLogRecordFactory(_scrubbing_factory(logging.getLogRecordFactory()))
    return protect(secret_values(list(argv)) | env_secrets())

"""Keep secrets out of everything a run writes.

A key is secret when its name contains ``api_key``, ``token``, ``secret`` or ``password``
(case-insensitive), or when it sits under a ``headers`` mapping. Secret values are replaced by
``***`` in configs, and :func:`scrub_files` replaces any known secret value (for example a key
given on the command line, which Hydra writes verbatim into ``.hydra/``) in every text file of a
folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REDACTED = "***"
_SECRET_KEY = re.compile(r"api_key|apikey|token|secret|password|authorization", re.IGNORECASE)
# Environment variables whose values must never appear in outputs.
SECRET_ENV_VARS = ("OPENAI_API_KEY", "MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_PASSWORD")


# The password of a URI's user-info: scheme://user:PASSWORD@host.
_URI_PASSWORD = re.compile(r"(?P<pre>\b[A-Za-z][\w+.-]*://[^:/@\s]*:)(?P<pw>[^@\s/]+)@")


def mask_uri_passwords(text: str) -> str:
    """Replace the password of every ``scheme://user:password@host`` in `text` with ``***``."""
    return _URI_PASSWORD.sub(lambda m: f"{m['pre']}{REDACTED}@", text)


def is_secret_key(key: str) -> bool:
    """True for a key name that holds a secret."""
    return bool(_SECRET_KEY.search(str(key)))


def redact(obj: Any, _under_headers: bool = False) -> Any:
    """A copy of a plain dict/list structure with every secret value replaced by ``***``."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if (_under_headers or is_secret_key(key)) and value is not None \
                    and not isinstance(value, (dict, list)):
                out[key] = REDACTED
            else:
                out[key] = redact(value, _under_headers or str(key).lower() == "headers")
        return out
    if isinstance(obj, list):
        return [mask_uri_passwords(redact_override(v)) if isinstance(v, str)
                else redact(v, _under_headers) for v in obj]
    if isinstance(obj, str):
        return mask_uri_passwords(obj)
    return obj


def redact_override(text: str) -> str:
    """Redact a ``key=value`` override string whose key is secret (or under ``headers``)."""
    key, sep, _ = text.partition("=")
    if sep and (is_secret_key(key) or ".headers." in f".{key.lstrip('+~')}."
                or key.lstrip("+~").startswith("headers.")):
        return f"{key}={REDACTED}"
    return text


def secret_values(obj: Any, _under_headers: bool = False) -> set[str]:
    """Every secret string value found in a plain structure (plus secret env variables)."""
    found: set[str] = set()
    if isinstance(obj, str):
        return {m["pw"] for m in _URI_PASSWORD.finditer(obj) if m["pw"] != REDACTED}
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, str) and (_under_headers or is_secret_key(key)):
                found.add(value)
            elif isinstance(value, str):
                found |= secret_values(value)
            else:
                found |= secret_values(value, _under_headers or str(key).lower() == "headers")
    elif isinstance(obj, list):
        for value in obj:
            if isinstance(value, str):
                key, sep, val = value.partition("=")
                if sep and redact_override(value) != value:
                    found.add(val)
                found |= secret_values(val if sep else value)
            else:
                found |= secret_values(value, _under_headers)
    return {v for v in found if v and v != REDACTED and len(v) >= 4}


def env_secrets() -> set[str]:
    """Values of the secret environment variables that are set."""
    return {v for name in SECRET_ENV_VARS if (v := os.environ.get(name)) and len(v) >= 4}


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of each secret with ``***``."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _scrub_yaml(text: str, secrets: Iterable[str]) -> str | None:
    """Scrub the strings of a YAML document and dump it again (None if it does not parse).

    Plain text replacement could leave ``key: ***``, which YAML reads as an alias.
    """
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None

    def walk(obj: Any) -> Any:
        if isinstance(obj, str):
            return scrub_text(obj, secrets)
        if isinstance(obj, dict):
            return {walk(k): walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [walk(v) for v in obj]
        return obj

    return yaml.safe_dump(walk(data), sort_keys=False, allow_unicode=True)


def scrub_files(folder: str | Path, secrets: Iterable[str]) -> list[Path]:
    """Rewrite every text file under `folder` (or the file `folder`) that contains a secret;
    returns those files. A file is decoded only when a secret's bytes occur in it."""
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
            clean = _scrub_yaml(text, secrets) or clean
        if clean != text:
            path.write_text(clean, encoding="utf-8")
            changed.append(path)
    return changed

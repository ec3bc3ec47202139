"""What a run is called: the system under test, names safe for a folder, and a model's,
matcher's or local path's words on a shared page (:func:`model_text`, :func:`params_text`,
:func:`place`).

"The system" is defined here once, from the config (it names folders before any adapter is
built): :func:`system_name` is used by the run and sweep job folders (the resolver
``${ragcite.system:}`` in conf/config.yaml), the default run name, ``metrics.json``'s
``model.system``, the MLflow tag ``ragcite.system``, the sweep table and the compare header.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

SYSTEM_RESOLVER = "ragcite.system"
"""``${ragcite.system:<model choice>}``: the model choice and its system, folder-safe."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_PART = 60


def safe_name(text: str) -> str:
    """`text` as one folder-name part: runs of characters other than letters, digits, ``.``,
    ``_`` and ``-`` become ``_`` (a URL host's ``:``, a model name's ``/``); at most 60
    characters; never empty, never starting or ending with a dot."""
    name = _UNSAFE.sub("_", text).strip("_.")[:MAX_PART].rstrip("_.")
    return name or "_"


def system_name(model: Mapping[str, Any], dataset: Mapping[str, Any] | None,
                choice: str) -> str:
    """The system under test, by the kind of model settings.

    * stored responses (``model=precomputed``): the side file's stem (``model.responses``),
      else the stored system (``model.system``, else the dataset's ``default_system``), else
      ``stored``;
    * a live HTTP service (``model.url``): the URL's host (and port);
    * an OpenAI-compatible chat model (``model.model``): its model name;
    * a Python callable (``model.function``): its dotted name's last part;
    * anything else (``extractive``, your own adapter): the model choice.

    Args:
        model: The ``model`` section of the config.
        dataset: The ``dataset`` section (for its ``default_system``), or None.
        choice: The chosen option of the ``model`` group.
    """
    if "system" in model or "responses" in model:
        if model.get("responses"):
            return PurePosixPath(str(model["responses"]).replace("\\", "/")).stem
        return str(model.get("system") or (dataset or {}).get("default_system") or "stored")
    if model.get("url"):
        parts = urlsplit(str(model["url"]))
        return parts.netloc.rpartition("@")[2] or str(model["url"])
    if model.get("model"):
        return str(model["model"])
    if model.get("function"):
        return str(model["function"]).rpartition(".")[2]
    return choice


def system_label(choice: str, system: str) -> str:
    """The model choice and its system as one folder-safe part: ``precomputed-wrong_passages``,
    ``openai-gpt-4o-mini``, ``http-localhost_8080``; just ``extractive`` when they agree."""
    return safe_name(choice if system == choice else f"{choice}-{system}")


def resolve_label(choice: str, *, _root_: Any) -> str:
    """``${ragcite.system:<choice>}``: the model choice and its system, from the config."""
    from omegaconf import OmegaConf

    model = OmegaConf.select(_root_, "model", default=None)
    default = OmegaConf.select(_root_, "dataset.default_system", default=None)
    settings = {k: OmegaConf.select(model, k, default=None)
                for k in ("system", "responses", "url", "model", "function")
                if OmegaConf.is_dict(model) and k in model}
    return system_label(str(choice), system_name(settings, {"default_system": default},
                                                 str(choice)))


def model_text(section: Mapping[str, Any]) -> str:
    """A ``metrics.json`` ``model`` section for a reader: ``precomputed · wrong_passages``, or
    just ``extractive`` when the system is the model choice (``?`` when unnamed)."""
    name = str(section.get("name") or "?")
    system = section.get("system")
    return f"{name} · {system}" if system and system != name else name


def place(value: Any) -> Any:
    """A local path as a shared page shows it, without the machine's folders: relative to the
    working folder when inside it, else the file's (or folder's) name alone. Anything else
    (``pkg://`` names, URLs, relative paths, numbers) is shown as it is."""
    if not isinstance(value, str) or not Path(value).is_absolute():
        return value
    path, here = Path(value).resolve(), Path.cwd().resolve()
    return path.relative_to(here).as_posix() if path.is_relative_to(here) else path.name


def params_text(identity: Any) -> str:
    """A model's or matcher's identity as ``key=value, ...`` (its class and nulls left out;
    local paths shown by :func:`place`)."""
    if not isinstance(identity, dict):
        return ""
    return ", ".join(f"{k}={place(v)}" for k, v in identity.items()
                     if k != "class" and v is not None)

"""Building the swappable parts (``_target_`` config sections): one way, one error."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hydra._internal.utils import _locate
from hydra.errors import InstantiationException
from hydra.utils import instantiate

from runner.config.hydra_errors import instantiation_reason
from runner.errors import RagciteError


class NotAPlugin(RagciteError):
    """A class built from a config that lacks members of the protocol its key asks for."""


# The object a dotted path names, found as ``_target_`` is (hydra.utils' get_class and get_object
# would also log every failure, and get_class every function, on stderr). Raises ImportError
# (nothing importable has that name) or ValueError (a relative path).
locate = _locate


def build(section: Mapping[str, Any], key: str, target_key: str | None = None, *,
          protocol: type | None = None, **kwargs: Any) -> Any:
    """Instantiate a config section by its ``_target_``, with `kwargs` added.

    Args:
        section: The config section, with its ``_target_``.
        key: Where the section is in the config (``matcher``), for the error line.
        target_key: Where the user wrote the class (default ``<key>._target_``).
        protocol: A ``runtime_checkable`` protocol the built object must implement.
        **kwargs: Added to the section's arguments.

    Raises:
        RagciteError: The class cannot be built: one line with the key, the class and its
            reason (``matcher: cannot build runner.matchers.ngram.NgramMatcher:
            NgramMatcher.n must be an integer >= 1, got 0``); a class that cannot be imported
            as ``model._target_: cannot import nope.Nope: No module named 'nope'``; an object
            without the members of `protocol` as ``tracking._target_: my_pkg.T is not a
            tracker: it lacks start_sweep, end_sweep (runner.tracking.base.Tracker)``.
    """
    target, where = section.get("_target_"), target_key or f"{key}._target_"
    try:
        built = instantiate(dict(section), _convert_="all", **kwargs)
    except InstantiationException as exc:
        reason = instantiation_reason(exc, str(target))
        if reason.startswith("cannot import"):
            raise RagciteError(f"{where}: {reason}") from None
        raise RagciteError(f"{key}: cannot build {target}: {reason}") from None
    if protocol is not None and not isinstance(built, protocol):
        members = [*getattr(protocol, "__annotations__", {}),
                   *(name for name in vars(protocol) if not name.startswith("_"))]
        noun = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", protocol.__name__).lower()
        raise NotAPlugin(f"{where}: {target} is not a {noun}: it lacks "
                           f"{', '.join(m for m in members if not hasattr(built, m))} "
                           f"({protocol.__module__}.{protocol.__qualname__})")
    return built

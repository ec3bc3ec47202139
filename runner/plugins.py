"""Building the swappable parts (``_target_`` config sections): one way, one error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate

from runner.config_errors import instantiation_reason
from runner.errors import RagciteError


def build(section: Mapping[str, Any], key: str, **kwargs: Any) -> Any:
    """Instantiate a config section by its ``_target_``, with `kwargs` added.

    Raises:
        RagciteError: The class cannot be built: one line with the key, the class and its
            reason (``matcher: cannot build runner.matchers.ngram.NgramMatcher:
            NgramMatcher.n must be an integer >= 1, got 0``); a class that cannot be imported
            as ``model._target_: cannot import nope.Nope: No module named 'nope'``.
    """
    target = section.get("_target_")
    try:
        return instantiate(dict(section), _convert_="all", **kwargs)
    except InstantiationException as exc:
        reason = instantiation_reason(exc, str(target))
        if reason.startswith("cannot import"):
            raise RagciteError(f"{key}._target_: {reason}") from None
        raise RagciteError(f"{key}: cannot build {target}: {reason}") from None

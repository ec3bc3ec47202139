"""Hydra's and OmegaConf's config errors as one located line each.

Hydra reports a composition error as a block ending with a ``HYDRA_FULL_ERROR`` hint and exits
1; with :data:`FULL_ERROR` set (runner.cli) it raises the exception instead, and :func:`describe`
turns each kind into one line naming the key and what is allowed: ``matcher.foo: no such key;
NgramMatcher takes: n, tokenizer, threads, kernel``.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from itertools import accumulate
from typing import Any

from hydra.errors import (
    ConfigCompositionException,
    InstantiationException,
    MissingConfigException,
    OverrideParseException,
)
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    MissingMandatoryValue,
    OmegaConfBaseException,
    ValidationError,
)

from runner.config.folders import write_problem
from runner.redact import mask_uri, redact_override
from runner.scoring.metrics import LIMITS, METRIC_KEYS

FULL_ERROR = "HYDRA_FULL_ERROR"
"""Set, Hydra raises its composition errors instead of printing them as a block."""
GRAMMAR_URL = "https://hydra.cc/docs/advanced/override_grammar/basic/"

_KINDS = {"Integer": "an integer", "Float": "a number"}
_REWORDED = [(re.compile(pattern, re.S), text) for pattern, text in (
    *((rf"Value '(?P<value>.*)' of type '\w+' could not be converted to {kind}\b",
       f"must be {words}, got {{value!r}}") for kind, words in _KINDS.items()),
    (r"Invalid value '(?P<value>.*)', expected one of \[(?P<choices>.*)\]",
     "must be one of: {choices}; got {value!r}"),
    (r"Value '(?P<value>.*)' is not a valid bool", "must be true or false, got {value!r}"),
    (r"field '.*' is not Optional", "must be set, not null"),
    (r"Invalid value assigned: (?P<type>\w+) is not a ListConfig",
     "must be a list ([a,b]), got {type}"),
    (r"Ambiguous value for argument '(?P<arg>.*)'",
     "{arg}: several values; sweep them with -m, or write a list as [a,b] or a string as 'a,b'"),
    (r"Could not append to config\. An item is already at '(?P<key>.*)'",
     "{key}: already set; override it without '+' ({key}=...)"),
    (r"Could not delete from config\. '(?P<key>.*)' does not exist",
     "{key}: no such key to delete"))]
"""OmegaConf's and Hydra's messages, reworded as what the key takes or what to do."""
_LOCATING = re.compile(r"Error locating target '(?P<target>[^']*)'")


def describe(exc: BaseException) -> str | None:
    """The one line the user sees for a config error (or a write the storage refused), or
    None when `exc` is not one.

    Args:
        exc: An exception raised while Hydra composed the config or ragcite read it, or a job
            wrote its results.

    Returns:
        The line without the ``ragcite: error:`` prefix, or None.
    """
    if isinstance(exc, OverrideParseException):
        if redact_override(exc.override) != exc.override:  # a secret: Hydra's detail quotes it
            return f"{redact_override(exc.override)}: not a valid override; see {GRAMMAR_URL}"
        return mask_uri(f"{exc.override}: not a valid override ({_first(exc.message)}); "
                        f"write key=value, see {GRAMMAR_URL}")
    if isinstance(exc, MissingConfigException):
        return _missing_option(exc)
    if isinstance(exc, InstantiationException):
        return instantiation_reason(exc)
    if isinstance(exc, ConfigCompositionException):
        if isinstance(exc.__cause__, OmegaConfBaseException):
            return describe(exc.__cause__)
        return _reworded(_first(str(exc)))
    if isinstance(exc, OmegaConfBaseException):
        return _omegaconf(exc)
    if isinstance(exc, RecursionError):
        return _too_deep(sys.argv[1:])
    if isinstance(exc, OSError):
        return write_problem(exc)  # a full disk, a read-only file system
    if isinstance(exc, ValueError) and str(exc).startswith("Config group override must be"):
        return ("a config group's option must be a name (group=option), got a number; "
                "see `ragcite --help` for the groups and their options")
    if isinstance(exc, ValueError) and str(exc).startswith("Only one of --run, --multirun"):
        return "-m (--multirun) cannot go with --cfg, --info or --shell-completion: give one"
    return None


def instantiation_reason(exc: InstantiationException, target: str | None = None) -> str:
    """Why Hydra could not build a ``_target_``: for a target that cannot be imported, the
    import error itself (Hydra's own message only points at its traceback hint).

    Args:
        exc: Hydra's exception.
        target: The ``_target_``, when the caller knows it.
    """
    located = _LOCATING.match(str(exc))
    if not located:
        return " ".join(str(exc.__cause__ or exc).split())
    root: BaseException = exc
    while (nxt := root.__cause__ or root.__context__) is not None:
        root = nxt
    return f"cannot import {target or located['target']}: {root}"


def _reworded(line: str) -> str:
    """`line` reworded by the first pattern of :data:`_REWORDED` it matches (else as it is)."""
    return next((text.format(**m.groupdict()) for pattern, text in _REWORDED
                 if (m := pattern.match(line))), line)


def _too_deep(args: list[str]) -> str | None:
    """The override whose lists or dicts nest too deeply for Hydra's recursive reader (a
    RecursionError), when one nests deep enough to be the cause (else None: not an input's)."""
    def depth(text: str) -> int:
        return max(accumulate(((char in "[{") - (char in "]}") for char in text), initial=0))

    arg = max(args, key=depth, default="")
    if depth(arg) < 50:
        return None
    return (f"{redact_override(arg).partition('=')[0]}: nested too deeply for Hydra to read "
            f"({depth(arg)} levels of lists or dicts)")


def _first(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), str(text))


def _missing_option(exc: MissingConfigException) -> str:
    group, _, option = (exc.missing_cfg_file or "").rpartition("/")
    if not group or exc.options is None:
        return _first(str(exc))
    choices = ", ".join(sorted(o for o in exc.options if o != "schema"))
    numbers = " or a number" if group == "threshold" else ""  # read as scoring.threshold
    return f"{group}={option}: no such option; choose one of: {choices}{numbers}"


def _omegaconf(exc: OmegaConfBaseException) -> str:
    key = str(getattr(exc, "full_key", "") or "")
    msg = _first(getattr(exc, "msg", None) or str(exc))
    if isinstance(exc, (ConfigKeyError, ConfigAttributeError)):
        bad = key or str(getattr(exc, "key", "") or "")
        return unknown_key(bad, getattr(exc, "object_type", None))
    if isinstance(exc, MissingMandatoryValue):
        return f"{key}: required and not set; give it as {key}=..."
    if isinstance(exc, ValidationError):
        msg = _reworded(msg)
    return f"{key}: {msg}" if key else msg


def unknown_key(key: str, schema: Any) -> str:
    """The line for a key the schema does not have, with the keys it does have.

    Args:
        key: The full key (``matcher.foo``).
        schema: The structured-config class of the node that lacks it, if known.
    """
    if key.rpartition(".")[0] == "gate":  # the built-in metrics' (runner.scoring.gates)
        return f"{key}: no such gate; the gates: {', '.join((*METRIC_KEYS, *LIMITS))}"
    if not (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
        return f"{key}: no such key"
    names = ", ".join(f.name for f in dataclasses.fields(schema) if not f.name.startswith("_"))
    name = schema.__name__.removesuffix("Conf")
    owner = {"Ragcite": "the config", "Calibrate": "the config", "Price": "a price"}.get(name, name)
    return f"{key}: no such key; {owner} takes{f': {names}' if names else ' no keys'}"

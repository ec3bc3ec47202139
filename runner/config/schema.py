"""The config's schemas, registered with Hydra's ConfigStore: each setting's type, default and
allowed range declared once, next to its field.

The root sections are the dataclasses below. A plug-in's schema (an option of ``conf/`` naming
a ``_target_`` class, or a class a user names with ``matcher._target_=my_pkg.Jaccard``) is
derived from the class itself by :func:`conf_for`, so a plug-in's settings live in exactly one
place: its class. Each option YAML starts from its schema (``defaults:
[/schema/<group>/<name>@_here_, _self_]``), so Hydra refuses a typo'd key or a wrong type with
the full key; :mod:`runner.config.check` checks the ranges.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from importlib.resources import files
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf._utils import is_valid_value_annotation

from runner.calibration.schema import CalibrateConf
from runner.config.constraints import COUNT, EACH, POSITIVE, CrossCheck, OneOf, Range, allows
from runner.config.plugins import locate
from runner.data.mapping import CASE_KEYS, KB_KEYS, mapping_conf
from runner.scoring.aggregate import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, MAX_RESAMPLES
from runner.scoring.bands import DEFAULT_BANDS
from runner.scoring.batch import DEFAULT_BATCH_SIZE
from runner.scoring.metrics import LIMITS, METRIC_KEYS, ZERO_DIVISION_POLICIES
from runner.scoring.sources import DEFAULT_STEPS, STEPS

FROM_APP = {"tracking": ("experiment", "output_root")}
"""The arguments the app passes a plug-in of a group itself (root keys; make_tracker), which are
therefore not settings of the group."""


def conf_for(cls: type, name: str | None = None, group: str = "") -> type:
    """The structured-config schema of a plug-in class: ``_target_`` plus its settings.

    A dataclass's settings are its init fields (not those marked ``field(metadata={"config":
    False})``); another class's are the parameters of its ``__init__``; neither counts what the
    app passes a plug-in of its `group` itself (:data:`FROM_APP`). Each keeps its type
    hint, its default and what it allows beyond its type: the field's metadata or an
    ``Annotated`` extra (``timeout: Annotated[float, SECONDS] = 5.0``), so the schema never
    disagrees with the class, shipped or not.
    """
    fields: list[tuple[str, Any, Any]] = [
        ("_target_", str, field(default=f"{cls.__module__}.{cls.__qualname__}"))]
    for key, hint, default, metadata in _settings(cls, FROM_APP.get(group, ())):
        kind, extras = _plain(hint)
        checks = [e for e in extras if isinstance(e, (Range, OneOf))]
        meta = allows(checks[0], **metadata) if checks else dict(metadata)
        fields.append((key, kind, field(default=default, metadata=meta)
                       if type(default).__hash__ is not None  # a list, a dict: a copy each
                       else field(default_factory=functools.partial(copy.deepcopy, default),
                                  metadata=meta)))
    # A check across keys (runner.config.check) is the class's own, like its defaults.
    namespace = {"config_problem": cls.config_problem} if isinstance(cls, CrossCheck) else None
    return dataclasses.make_dataclass(name or f"{cls.__name__}Conf", fields, namespace=namespace)


def target_conf(target: str, group: str) -> type | None:
    """The schema (:func:`conf_for`) of the class a dotted path names, or None when it names no
    class or cannot be imported (the config check or the build says why, with the key)."""
    try:
        cls = locate(target)
    except Exception:
        return None
    return conf_for(cls, group=group) if isinstance(cls, type) else None


def _settings(cls: type, supplied: tuple[str, ...]) -> Iterator[tuple[str, Any, Any,
                                                                   Mapping[str, Any]]]:
    """(name, type hint, default or MISSING, metadata) of each setting of a plug-in class."""
    if "__dataclass_fields__" in vars(cls):  # a dataclass (not just a subclass of one)
        hints = typing.get_type_hints(cls, include_extras=True)
        for f in dataclasses.fields(cls):
            if f.init and f.metadata.get("config", True) and f.name not in supplied:
                default = (f.default if f.default_factory is dataclasses.MISSING
                           else f.default_factory())
                yield f.name, hints[f.name], default, f.metadata
        return
    try:
        params = inspect.signature(cls, eval_str=True).parameters.values()
    except NameError:  # a hint only a type checker can read: that setting is untyped
        params = inspect.signature(cls).parameters.values()
    for p in params:
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in supplied:
            yield p.name, p.annotation, MISSING if p.default is p.empty else p.default, {}


def _plain(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """A type hint as OmegaConf takes it (``X | None`` as ``Optional[X]``; a type it cannot
    hold as ``Any``), and the extras of an ``Annotated`` hint."""
    extras: list[Any] = []
    if typing.get_origin(hint) is typing.Annotated:
        hint, *extras = typing.get_args(hint)
    if isinstance(hint, types.UnionType):
        hint = typing.Union[hint.__args__]
    return (hint if is_valid_value_annotation(hint) else Any), tuple(extras)


# --- dataset -----------------------------------------------------------------------------------


CaseMappingConf = mapping_conf("CaseMappingConf", CASE_KEYS, __name__)
"""JMESPath expression per canonical case field (SPEC 2); ``null`` = not mapped."""

DocumentMappingConf = mapping_conf("DocumentMappingConf", KB_KEYS, __name__)
"""JMESPath expression per knowledge-base field."""


@dataclass
class KnowledgeBaseConf:
    """The documents a retrieving adapter searches; ``path: null`` means none."""

    path: Optional[str] = None
    format: Optional[str] = None
    mapping: DocumentMappingConf = field(default_factory=DocumentMappingConf)  # type: ignore[valid-type]
    transform: Any = None


@dataclass
class ResponsesConf:
    """Stored responses of one system: a file of records keyed by case id."""

    path: str = MISSING
    format: Optional[str] = None
    mapping: CaseMappingConf = field(default_factory=CaseMappingConf)  # type: ignore[valid-type]
    transform: Any = None


@dataclass
class DatasetConf:
    """A test set, its knowledge base and any stored responses."""

    name: str = MISSING
    path: str = MISSING
    format: Optional[str] = None
    mapping: CaseMappingConf = field(default_factory=CaseMappingConf)  # type: ignore[valid-type]
    transform: Any = None
    limit: Optional[int] = field(default=None, metadata=allows(POSITIVE))
    knowledge_base: Optional[KnowledgeBaseConf] = None
    systems: dict[str, ResponsesConf] = field(default_factory=dict)
    default_system: Optional[str] = None


UNIT = Range(0, 1)
"""A share or a score: a number in [0, 1]."""


# --- threshold, scoring, gates, cache ----------------------------------------------------------


@dataclass
class BandsConf:
    """Lower bounds of the metric bands: green ≥ green, medium ≥ medium, red below."""

    green: float = field(default=DEFAULT_BANDS["green"], metadata=allows(UNIT))
    medium: float = field(default=DEFAULT_BANDS["medium"], metadata=allows(UNIT))

    @classmethod
    def config_problem(cls, node: Any) -> str | None:
        """Bands in order: green's lower bound is not below medium's."""
        if node.green < node.medium:
            return f"green ({node.green:g}) must be >= medium ({node.medium:g})"
        return None


@dataclass
class BootstrapConf:
    """Percentile bootstrap of the macro means."""

    resamples: int = field(default=DEFAULT_RESAMPLES,
                           metadata=allows(Range(0, MAX_RESAMPLES, integer=True)))
    confidence: float = field(default=DEFAULT_CONFIDENCE,
                              metadata=allows(Range(0, 1, open_low=True, open_high=True)))


ZeroDivision = Enum("ZeroDivision", {p: p for p in ZERO_DIVISION_POLICIES},  # type: ignore[misc]
                    module=__name__, type=str)
"""Values of empty denominators (SPEC 5); see runner.scoring.metrics."""


@dataclass
class ScoringConf:
    """How matches become scores (SPEC 3-6).

    ``threshold`` is a number, a named level (``strict``, ``default``, ``lenient``: each
    matcher's own value, ``levels`` in its class) or a list of them, decided in one pass.
    """

    threshold: Any = "default"
    zero_division: ZeroDivision = ZeroDivision["auto"]
    require_same_source: bool = False
    source_normalization: list[str] = field(default_factory=lambda: list(DEFAULT_STEPS),
                                            metadata=allows(OneOf(tuple(STEPS), "step")))
    bands: BandsConf = field(default_factory=BandsConf)
    bootstrap: BootstrapConf = field(default_factory=BootstrapConf)
    batch_size: int = field(default=DEFAULT_BATCH_SIZE, metadata=allows(POSITIVE))
    workers: Optional[int] = field(default=None, metadata=allows(COUNT))
    metrics: dict[str, Any] = field(default_factory=dict)
    fidelity: str = field(default="auto", metadata=allows(OneOf(("auto", "off"))))  # SPEC 6.1


@dataclass
class CacheConf:
    """The on-disk cache of responses and similarities, shared by the jobs of a sweep."""

    enabled: bool = True
    dir: str = MISSING
    clear: bool = False


@dataclass
class PriceConf:
    """The price of one model in USD per 1M tokens (for the cost estimate in metrics.json)."""

    input: float = field(default=0.0, metadata=allows(Range(low=0)))
    output: float = field(default=0.0, metadata=allows(Range(low=0)))


@dataclass
class RagciteConf:
    """The root config."""

    dataset: DatasetConf = MISSING
    model: Any = MISSING
    matcher: Any = MISSING
    scoring: ScoringConf = MISSING
    tracking: Any = MISSING
    report: Any = MISSING
    # Quality gates (the run exits 1 when one fails; null = none): gate.<metric> is a
    # minimum of a metric of the run, gate.max_error_rate a maximum share of failed cases,
    # gate.max_fabricated of the checked quotes found in no document (SPEC 6.1).
    gate: dict[str, Optional[float]] = field(
        default_factory=lambda: dict.fromkeys((*METRIC_KEYS, *LIMITS)))
    cache: CacheConf = field(default_factory=CacheConf)
    output_root: str = "outputs"
    seed: int = field(default=0, metadata=allows(COUNT))
    progress: bool = True
    experiment: str = "ragcite"
    run_name: Optional[str] = None
    calibrate: Optional[CalibrateConf] = None  # mode=calibrate: the labelled pairs
    # Model name → {input, output}: a plain dict so that `+prices.m.input=0.3` adds a model
    # (OmegaConf cannot add a new key to a dict of structured configs); each entry is checked
    # against PriceConf (runner.config.check).
    prices: dict[str, dict[str, float]] = field(default_factory=dict,
                                                metadata={EACH: PriceConf})


def plain_config(cfg: DictConfig) -> dict[str, Any]:
    """The composed config as plain data (interpolations resolved), with the cache folder made
    absolute so that every process of a sweep agrees on it."""
    from pathlib import Path

    data: dict[str, Any] = OmegaConf.to_container(  # type: ignore[assignment]
        cfg, resolve=True, throw_on_missing=True, enum_to_str=True)
    root = Path(data.get("output_root") or "outputs")
    cache = data.setdefault("cache", {})
    cache["dir"] = str(Path(cache.get("dir") or root / "cache").resolve())
    return data


STAMP_RESOLVER = "ragcite.stamp"
"""``${ragcite.stamp:}``: the start of every run and sweep folder name (conf/config.yaml)."""


def folder_stamp() -> str:
    """A folder name's start, unique even for runs started in the same second.

    The local time to the microsecond, then 4 random hex digits:
    ``2026-12-04_09-44-54-482113-7f3a``. Names sort by start time; two processes starting at
    the same microsecond still differ in the suffix (a 1 in 65,536 chance of a clash). Nothing
    is checked or created, so there is no race between processes.
    """
    import datetime
    import secrets

    return f"{datetime.datetime.now():%Y-%m-%d_%H-%M-%S-%f}-{secrets.token_hex(2)}"


HIDDEN_GROUPS = ("hydra", "schema")
"""Config folders that are not choosable groups."""


def help_groups() -> str:
    """``${ragcite.help_groups:}`` in ``ragcite --help`` (conf/config.yaml ``hydra.help``): one
    line per group a user chooses from, with its options (``matcher: embeddings, llm, ...``),
    read from the packaged conf/ folders (Hydra's ``$APP_CONFIG_GROUPS`` also lists the typed
    schemas under ``schema/``, which are not options)."""
    groups = sorted((p for p in files("runner.conf").iterdir() if p.is_dir()
                     and p.name not in HIDDEN_GROUPS and not p.name.startswith(("_", "."))),
                    key=lambda p: p.name)
    options = {group.name: sorted(p.name[:-len(".yaml")] for p in group.iterdir()
                                  if p.name.endswith(".yaml")) for group in groups}
    return "\n".join(f"{name}: {', '.join(names)}" for name, names in options.items() if names)


def register_resolvers() -> None:
    """Register ``${ragcite.stamp:}``, cached per config like Hydra's ``${now:}``: a sweep's jobs
    (copies of the sweep's config, in whatever process) see the sweep's value;
    ``${ragcite.system:<model choice>}`` (runner/config/naming.py; not cached: each job has its
    own system); ``${ragcite.help_groups:}`` (``--help``)."""
    from runner.config.naming import SYSTEM_RESOLVER, resolve_label

    for name, fn, cache in ((STAMP_RESOLVER, folder_stamp, True),
                            (SYSTEM_RESOLVER, resolve_label, False),
                            ("ragcite.help_groups", help_groups, False)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn, use_cache=cache)


def register_configs() -> None:
    """Register the root schemas, and the schema of every option of ``conf/`` that names a
    class (``_target_``), derived from that class, under ``schema/<group>/<option>``."""
    import yaml

    register_resolvers()
    cs = ConfigStore.instance()
    for name, node in (("config", RagciteConf), ("dataset", DatasetConf), ("scoring", ScoringConf)):
        cs.store(name=name, node=node, group="schema")
    for group in files("runner.conf").iterdir():
        for option in group.iterdir() if group.is_dir() else ():
            text = option.read_text(encoding="utf-8") if option.name.endswith(".yaml") else ""
            if "_target_:" in text:
                target = (yaml.safe_load(text) or {}).get("_target_")
                if isinstance(target, str):
                    cs.store(name=option.name[:-5], node=conf_for(locate(target), group=group.name),
                             group=f"schema/{group.name}")


def chosen_targets(args: list[str]) -> list[str]:
    """The command line with a class named as a plug-in (``matcher._target_=my_pkg.Jaccard``)
    made an option of its group, its schema derived from the class as a shipped option's is:
    its settings are set without ``+``, typed and checked like any other; the keys of the
    group's default option do not stay. The option is the class path, so the command a sweep or
    a run records (``matcher=my_pkg.Jaccard``) is one this function takes too. A name that cannot
    be imported is left as it is (the config check reports it)."""
    groups = {g.name for g in files("runner.conf").iterdir() if g.is_dir()}
    out = []
    for arg in args:
        key, eq, target = arg.partition("=")
        group, dot, rest = key.partition(".")
        # group._target_=pkg.Class, or group=pkg.Class (an option's name has no dot)
        named = rest == "_target_" if dot else group in groups and "." in target
        if eq and named and group.isidentifier() and "," not in target \
                and (conf := target_conf(target, group)) is not None:
            ConfigStore.instance().store(name=target, node=conf, group=group)
            arg = f"{group}={target}"
        out.append(arg)
    return out


# A job process of a sweep (joblib, Ray, Submitit) imports this module when it unpickles the job,
# and resolves its folder there.
register_resolvers()

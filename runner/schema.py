"""Structured-config schemas for every config group, registered with Hydra's ConfigStore.

Schemas live here, values live in ``conf/``. Each option YAML starts from its schema
(``defaults: [/schema/<group>/<name>@_here_, _self_]``), so Hydra rejects a typo'd key or a
wrong type with the full key. Plug-in schemas (matchers, model adapters) are derived from the
plug-in dataclass itself by :func:`conf_for`, so a plug-in's defaults live in exactly one place:
its class.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from runner.calibration.schema import CalibrateConf
from runner.constraints import CHECK, COUNT, POSITIVE, SECONDS, OneOf, Range, allows
from runner.scoring.aggregate import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, MAX_RESAMPLES
from runner.scoring.bands import DEFAULT_BANDS
from runner.scoring.batch import DEFAULT_BATCH_SIZE
from runner.scoring.sources import DEFAULT_STEPS, STEPS
from runner.tracking.table import DEFAULT_TABLE_ROWS


def conf_for(cls: type, name: str | None = None) -> type:
    """A structured-config dataclass for a dataclass plug-in: ``_target_`` plus its fields.

    Field names, types and defaults are taken from `cls`, so the schema never disagrees with the
    class. Fields marked ``field(metadata={"config": False})`` are left out.
    """
    target = f"{cls.__module__}.{cls.__qualname__}"
    fields: list[tuple[str, Any, Any]] = [("_target_", str, field(default=target))]
    hints = _resolved_hints(cls)
    for f in dataclasses.fields(cls):
        if not f.init or not f.metadata.get("config", True):
            continue
        default: Any
        # The metadata carries what the key allows (runner.constraints), checked before work.
        if f.default is not dataclasses.MISSING:
            default = field(default=f.default, metadata=f.metadata)
        elif f.default_factory is not dataclasses.MISSING:
            default = field(default_factory=f.default_factory, metadata=f.metadata)
        else:
            default = field(default=MISSING, metadata=f.metadata)
        fields.append((f.name, hints[f.name], default))
    # A check across keys (runner.config_check) is the class's own, like its defaults.
    across = getattr(cls, "config_problem", None)
    namespace = {"config_problem": across} if across is not None else None
    return dataclasses.make_dataclass(name or f"{cls.__name__}Conf", fields, namespace=namespace)


def _resolved_hints(cls: type) -> dict[str, Any]:
    import types
    import typing

    # Each class of the MRO resolves its annotations in its own module's namespace.
    hints = typing.get_type_hints(cls)
    # OmegaConf 2.3 understands typing.Optional[X] but not the PEP 604 spelling X | None.
    for name, hint in hints.items():
        if isinstance(hint, types.UnionType):
            hints[name] = typing.Union[hint.__args__]
    return hints


# --- dataset -----------------------------------------------------------------------------------


@dataclass
class CaseMappingConf:
    """JMESPath expression per canonical case field (SPEC 2); ``null`` = not mapped."""

    id: Optional[str] = None
    query: Optional[str] = None
    references: Optional[str] = None
    expected_sources: Optional[str] = None
    citations: Optional[str] = None
    answer: Optional[str] = None
    metadata: Optional[str] = None


@dataclass
class DocumentMappingConf:
    """JMESPath expression per knowledge-base field."""

    source: Optional[str] = None
    text: Optional[str] = None


@dataclass
class KnowledgeBaseConf:
    """The documents a retrieving adapter searches; ``path: null`` means none."""

    path: Optional[str] = None
    format: Optional[str] = None
    mapping: DocumentMappingConf = field(default_factory=DocumentMappingConf)
    transform: Any = None


@dataclass
class ResponsesConf:
    """Stored responses of one system: a file of records keyed by case id."""

    path: str = MISSING
    format: Optional[str] = None
    mapping: CaseMappingConf = field(default_factory=CaseMappingConf)
    transform: Any = None


@dataclass
class DatasetConf:
    """A test set, its knowledge base and any stored responses."""

    name: str = MISSING
    path: str = MISSING
    format: Optional[str] = None
    mapping: CaseMappingConf = field(default_factory=CaseMappingConf)
    transform: Any = None
    limit: Optional[int] = field(default=None, metadata=allows(Range(low=1, integer=True)))
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


class ZeroDivision(str, Enum):
    """Values of empty denominators (SPEC 5); see runner.scoring.metrics."""

    auto = "auto"
    nan = "nan"
    zero = "zero"
    one = "one"


@dataclass
class ScoringConf:
    """How matches become scores (SPEC 3-6).

    ``threshold`` is a number, a named level (``strict``, ``default``, ``lenient``: each
    matcher's own value, ``levels`` in its class) or a list of them, decided in one pass.
    """

    threshold: Any = "default"
    zero_division: ZeroDivision = ZeroDivision.auto
    require_same_source: bool = False
    source_normalization: list[str] = field(default_factory=lambda: list(DEFAULT_STEPS),
                                            metadata=allows(OneOf(tuple(STEPS), "step")))
    bands: BandsConf = field(default_factory=BandsConf)
    bootstrap: BootstrapConf = field(default_factory=BootstrapConf)
    batch_size: int = field(default=DEFAULT_BATCH_SIZE,
                            metadata=allows(Range(low=1, integer=True)))
    workers: Optional[int] = field(default=None, metadata=allows(COUNT))


@dataclass
class GateConf:
    """Quality gates: the run exits non-zero when one fails. ``null`` = no gate."""

    context_recall: Optional[float] = field(default=None, metadata=allows(UNIT))
    context_precision: Optional[float] = field(default=None, metadata=allows(UNIT))
    context_f1: Optional[float] = field(default=None, metadata=allows(UNIT))
    source_recall: Optional[float] = field(default=None, metadata=allows(UNIT))
    source_precision: Optional[float] = field(default=None, metadata=allows(UNIT))
    source_f1: Optional[float] = field(default=None, metadata=allows(UNIT))
    max_error_rate: Optional[float] = field(default=None, metadata=allows(UNIT))


@dataclass
class CacheConf:
    """The on-disk cache of responses and similarities, shared by the jobs of a sweep."""

    enabled: bool = True
    dir: str = MISSING
    clear: bool = False


@dataclass
class TrackingConf:
    """Where runs are tracked: the tracker class (``_target_``) and its keyword arguments.

    Built by :func:`runner.tracking.base.make_tracker`, which also passes the root keys
    ``experiment`` and ``output_root``. The default, ``tracking=none``, switches tracking off.
    """

    _target_: str = "runner.tracking.base.NullTracker"


@dataclass
class MlflowTrackingConf(TrackingConf):
    """MLflow tracking (`tracking=mlflow`): one run per result, a parent run per sweep.

    ``tracking_uri`` null means ``MLFLOW_TRACKING_URI`` when set, else
    ``sqlite:////<abs output_root>/mlflow.db``. See runner/tracking/mlflow.py.
    """

    _target_: str = "runner.tracking.mlflow.MlflowTracker"
    tracking_uri: Optional[str] = None
    artifact_location: Optional[str] = None
    required: bool = True
    timeout_s: float = field(default=5.0, metadata=allows(SECONDS))
    log_table: bool = True
    table_rows: Optional[int] = field(default=DEFAULT_TABLE_ROWS, metadata=allows(COUNT))
    ui_url: Optional[str] = None
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class ReportConf:
    """Which reports are written: the class named by `_target_` (runner.reports.base.Reports),
    made by runner.reports.base.make_reports. `none` (NoReports) writes none."""

    _target_: str = "runner.reports.base.NoReports"


@dataclass
class HtmlReportConf(ReportConf):
    """Self-contained HTML reports (`report=html`): report.html per result, sweep.html per sweep.

    The fields of runner.reports.html.HtmlReports (runner/reports/run.py::HtmlOptions).
    """

    _target_: str = "runner.reports.html.HtmlReports"
    page_size: int = field(default=50, metadata=allows(Range(low=1, integer=True)))
    max_cases: Optional[int] = field(default=20000, metadata=allows(COUNT))
    max_text_chars: int = field(default=10000, metadata=allows(POSITIVE))
    embed: str = "auto"
    gzip_above_mb: float = field(default=2.0, metadata=allows(Range(low=0)))
    max_failed_listed: int = field(default=500, metadata=allows(COUNT))


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
    gate: GateConf = field(default_factory=GateConf)
    cache: CacheConf = field(default_factory=CacheConf)
    output_root: str = "outputs"
    seed: int = field(default=0, metadata=allows(COUNT))
    progress: bool = True
    experiment: str = "ragcite"
    run_name: Optional[str] = None
    calibrate: Optional[CalibrateConf] = None  # mode=calibrate: the labelled pairs
    # Model name → {input, output} (PriceConf's keys); a plain dict so that `+prices.m.input=0.3`
    # adds a model (OmegaConf cannot add a new key to a dict of structured configs).
    prices: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def config_problem(cls, node: Any) -> str | None:
        """Each price names only PriceConf's keys (``input``, ``output``), each in its range
        (a number >= 0: NaN is none)."""
        allowed = {f.name: f.metadata[CHECK] for f in dataclasses.fields(PriceConf)}
        for model, price in (node.get("prices") or {}).items():
            for key, value in price.items():
                if key not in allowed:
                    return (f"prices.{model}.{key}: no such key; a price takes: "
                            f"{', '.join(allowed)}")
                problem = allowed[key].problem(value)
                if problem:
                    return f"prices.{model}.{key}: {problem}"
        return None


def plain_config(cfg: DictConfig) -> dict[str, Any]:
    """The composed config as plain data (interpolations resolved), with the cache folder made
    absolute so that every process of a sweep agrees on it."""
    from pathlib import Path

    from runner.errors import RagciteError

    container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True,
                                       enum_to_str=True)
    if not isinstance(container, dict):  # pragma: no cover - the root is always a mapping
        raise RagciteError("the composed config is not a mapping")
    data: dict[str, Any] = {str(k): v for k, v in container.items()}
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


def register_resolvers() -> None:
    """Register ``${ragcite.system:}`` (runner/naming.py) and ``${ragcite.stamp:}``, cached
    per config like Hydra's ``${now:}``: a sweep's jobs (copies of the sweep's config, in
    whatever process) see the sweep's value."""
    if not OmegaConf.has_resolver(STAMP_RESOLVER):
        OmegaConf.register_new_resolver(STAMP_RESOLVER, folder_stamp, use_cache=True)
    from runner.help import register_help_resolvers
    from runner.naming import register_system_resolver

    register_system_resolver()  # ${ragcite.system:<model choice>}
    register_help_resolvers()  # ${ragcite.help_groups:}, ${ragcite.help_exits:} (--help)


def register_configs() -> None:
    """Register every schema under ``schema/<group>/<name>`` in Hydra's ConfigStore."""
    register_resolvers()
    from runner.adapters.extractive import ExtractiveModel
    from runner.adapters.http import HttpModel
    from runner.adapters.openai import OpenaiModel
    from runner.adapters.precomputed import PrecomputedModel
    from runner.adapters.python import PythonModel
    from runner.matchers.embeddings import EmbeddingsMatcher
    from runner.matchers.llm import LlmMatcher
    from runner.matchers.local_embeddings import LocalEmbeddingsMatcher
    from runner.matchers.ngram import NgramMatcher
    from runner.matchers.substring import SubstringMatcher

    cs = ConfigStore.instance()
    cs.store(name="config", node=RagciteConf, group="schema")
    cs.store(name="dataset", node=DatasetConf, group="schema")
    cs.store(name="scoring", node=ScoringConf, group="schema")
    cs.store(name="tracking", node=TrackingConf, group="schema")
    cs.store(name="mlflow", node=MlflowTrackingConf, group="schema/tracking")
    cs.store(name="report", node=ReportConf, group="schema")
    cs.store(name="html", node=HtmlReportConf, group="schema/report")
    cs.store(name="ngram", node=conf_for(NgramMatcher), group="schema/matcher")
    cs.store(name="substring", node=conf_for(SubstringMatcher), group="schema/matcher")
    cs.store(name="precomputed", node=conf_for(PrecomputedModel), group="schema/model")
    cs.store(name="extractive", node=conf_for(ExtractiveModel), group="schema/model")
    cs.store(name="python", node=conf_for(PythonModel), group="schema/model")
    cs.store(name="openai", node=conf_for(OpenaiModel), group="schema/model")
    cs.store(name="http", node=conf_for(HttpModel), group="schema/model")
    cs.store(name="embeddings", node=conf_for(EmbeddingsMatcher), group="schema/matcher")
    cs.store(name="local_embeddings", node=conf_for(LocalEmbeddingsMatcher),
             group="schema/matcher")
    cs.store(name="llm", node=conf_for(LlmMatcher), group="schema/matcher")


# A job process of a sweep (joblib, Ray, Submitit) imports this module when it unpickles the job,
# and resolves its folder there.
register_resolvers()

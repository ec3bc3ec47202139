"""The typed schema of ``ragcite-calibrate``'s config (``conf/calibrate.yaml``): a typo'd key or a
wrong type fails with the full key, as in ``ragcite``. The ``matcher``, ``scoring``,
``threshold`` and ``tracking`` groups are ragcite's own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from runner.schema import CacheConf, ScoringConf, register_configs


@dataclass
class PairMappingConf:
    """JMESPath expression per key of a labelled pair (docs/calibration.md); null = not mapped."""

    reference: Optional[str] = None
    citation: Optional[str] = None
    label: Optional[str] = None
    reference_source: Optional[str] = None
    citation_source: Optional[str] = None
    case_id: Optional[str] = None
    annotator: Optional[str] = None
    note: Optional[str] = None


@dataclass
class CalibrateConf:
    """The root config of ``ragcite-calibrate``."""

    matcher: Any = MISSING
    scoring: ScoringConf = MISSING
    tracking: Any = MISSING
    labels: Optional[str] = None
    mapping: PairMappingConf = field(default_factory=PairMappingConf)
    format: Optional[str] = None
    worst: int = 25
    cache: CacheConf = field(default_factory=CacheConf)
    output_root: str = "outputs"
    seed: int = 0
    progress: bool = True
    experiment: str = "ragcite-calibration"
    run_name: Optional[str] = None


def register_calibrate_configs() -> None:
    """Register ragcite's schemas and ``schema/calibrate`` in Hydra's ConfigStore."""
    register_configs()
    ConfigStore.instance().store(name="calibrate", node=CalibrateConf, group="schema")

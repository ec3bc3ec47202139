"""The typed schema of ``ragcite-calibrate``'s config (``conf/calibrate.yaml``): a typo'd key or a
wrong type fails with the full key, as in ``ragcite``. The ``matcher``, ``scoring``,
``threshold`` and ``tracking`` groups are ragcite's own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from runner.config.constraints import COUNT, Range, allows
from runner.config.schema import CacheConf, ScoringConf, register_configs


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
    worst: int = field(default=25, metadata=allows(Range(low=0, integer=True)))
    cache: CacheConf = field(default_factory=CacheConf)
    output_root: str = "outputs"
    seed: int = field(default=0, metadata=allows(COUNT))
    progress: bool = True
    experiment: str = "ragcite-calibration"
    run_name: Optional[str] = None


GROUPS_RESOLVER = "ragcite.groups"
"""``${ragcite.groups:matcher,scoring}`` in a help template: those groups and their options."""


def group_options(*groups: str) -> str:
    """The named config groups and their options, one ``group: a, b`` line each, as Hydra's
    ``$APP_CONFIG_GROUPS`` lists them (which lists every group of the shared config folder).

    Args:
        groups: The groups' names.
    """
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    return "\n".join(f"{g}: {', '.join(sorted(loader.get_group_options(g)))}"
                     for g in sorted(groups))


def register_calibrate_configs() -> None:
    """Register ragcite's schemas and ``schema/calibrate`` in Hydra's ConfigStore, and the
    help template's resolver."""
    register_configs()
    if not OmegaConf.has_resolver(GROUPS_RESOLVER):
        OmegaConf.register_new_resolver(GROUPS_RESOLVER, group_options)
    ConfigStore.instance().store(name="calibrate", node=CalibrateConf, group="schema")

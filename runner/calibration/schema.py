"""The typed ``calibrate`` section of the config (``ragcite mode=calibrate``,
``conf/mode/calibrate.yaml``): a typo'd key or a wrong type fails with the full key."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from runner.config.constraints import Range, allows


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
    """The labelled pairs a calibration reads, and how many of the worst pairs it lists."""

    labels: Optional[str] = None
    mapping: PairMappingConf = field(default_factory=PairMappingConf)
    format: Optional[str] = None
    worst: int = field(default=25, metadata=allows(Range(low=0, integer=True)))

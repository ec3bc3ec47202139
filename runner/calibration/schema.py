"""The typed ``calibrate`` section of the config (``ragcite mode=calibrate``,
``conf/mode/calibrate.yaml``): a typo'd key or a wrong type fails with the full key."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from runner.config.constraints import COUNT, allows
from runner.data.mapping import mapping_conf

OPTIONAL_KEYS = ("reference_source", "citation_source", "case_id", "annotator", "note")
PAIR_KEYS = ("reference", "citation", "label", *OPTIONAL_KEYS)
"""Every key of a labelled pair (runner/calibration/pairs.py), in the order it is written."""

PairMappingConf = mapping_conf("PairMappingConf", PAIR_KEYS, __name__)
"""JMESPath expression per key of a labelled pair (docs/calibration.md); null = not mapped."""


@dataclass
class CalibrateConf:
    """The labelled pairs a calibration reads, and how many of the worst pairs it lists."""

    labels: Optional[str] = None
    mapping: PairMappingConf = field(default_factory=PairMappingConf)  # type: ignore[valid-type]
    format: Optional[str] = None
    worst: int = field(default=25, metadata=allows(COUNT))

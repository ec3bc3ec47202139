"""Scoring: the declared metrics and labels, the batch scorer, bands and aggregation."""

from runner.scoring.aggregate import Aggregator, bootstrap_ci, micro_metrics
from runner.scoring.bands import DEFAULT_BANDS, band
from runner.scoring.case import ScoringOptions, error_case
from runner.scoring.metrics import METRIC_KEYS, METRICS, Metric, f1
from runner.scoring.sources import SourceNormalizer

__all__ = [
    "DEFAULT_BANDS",
    "METRICS",
    "METRIC_KEYS",
    "Aggregator",
    "Metric",
    "ScoringOptions",
    "SourceNormalizer",
    "band",
    "bootstrap_ci",
    "error_case",
    "f1",
    "micro_metrics",
]

"""Scoring: match predicate, pure metric math, labels, explanations, bands and aggregation."""

from runner.scoring.aggregate import Aggregator, aggregate, bootstrap_ci, micro_metrics
from runner.scoring.bands import BAND_TEXT, DEFAULT_BANDS, band
from runner.scoring.case import ScoringOptions, case_pairs, error_case, score_case
from runner.scoring.metrics import METRIC_KEYS, context_metrics, f1, source_metrics
from runner.scoring.sources import SourceNormalizer

__all__ = [
    "BAND_TEXT",
    "DEFAULT_BANDS",
    "METRIC_KEYS",
    "Aggregator",
    "ScoringOptions",
    "SourceNormalizer",
    "aggregate",
    "band",
    "bootstrap_ci",
    "case_pairs",
    "context_metrics",
    "error_case",
    "f1",
    "micro_metrics",
    "score_case",
    "source_metrics",
]

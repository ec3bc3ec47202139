"""Quality gates: minimum metric values and a maximum error rate, checked on a result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.config.plugins import build
from runner.errors import RagciteError
from runner.results import RunResult
from runner.scoring.metrics import LIMITS, METRIC_KEYS, Metric


def run_metrics(section: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The names of a run's metrics: the built-ins, then each metric of ``scoring.metrics``
    (``<key>: {_target_: <a Metric class>}``), built from its ``_target_``.

    Raises:
        RagciteError: A class that cannot be built, or that is not a named :class:`Metric`.
    """
    names = list(METRIC_KEYS)
    for key, node in (section or {}).items():
        metric = build(node, f"scoring.metrics.{key}")
        if not (isinstance(metric, Metric) and metric.name):
            raise RagciteError(f"scoring.metrics.{key}: {node.get('_target_')} is not a "
                               "runner.scoring.metrics.Metric with a name")
        names.append(metric.name)
    return tuple(names)


def check_gate_config(cfg: Mapping[str, Any]) -> None:
    """Check the ``gate`` section against the run's metrics, before any work.

    Raises:
        RagciteError: A gate of no metric (``gate.context_recal: no such gate; the gates:
            ...``), or a bound outside [0, 1].
    """
    names = (*run_metrics((cfg.get("scoring") or {}).get("metrics")), *LIMITS)
    for key, value in (cfg.get("gate") or {}).items():
        if key not in names:
            raise RagciteError(f"gate.{key}: no such gate; the gates: {', '.join(names)}")
        if value is not None and not 0 <= value <= 1:
            raise RagciteError(f"gate.{key}: must be a number in [0, 1], got {value!r}")


def check_gates(result: RunResult, gates: dict[str, Any]) -> list[str]:
    """The failed quality gates, each as a one-line reason (empty when all pass).

    Every declared metric of the result (``gate.<name>``) may have a minimum; ``max_error_rate``
    bounds the share of failed cases.
    """
    failures = [f"{key} {'undefined' if value is None else f'{value:.4f}'} < gate {minimum}"
                for key, value in result.metrics.items()
                if (minimum := gates.get(key)) is not None and (value is None or value < minimum)]
    max_rate = gates.get("max_error_rate")
    if max_rate is not None and result.error_rate > max_rate:
        failures.append(f"error rate {result.error_rate:.4f} ({result.n_errors} of "
                        f"{result.n_cases} cases) > gate max_error_rate {max_rate}")
    made_up, checked = result.fidelity.get("fabricated", 0), result.fidelity_checked
    if gates.get("max_fabricated") is not None and made_up > gates["max_fabricated"] * checked:
        failures.append(f"fabricated quotes {made_up / checked:.4f} ({made_up} of {checked} "
                        f"checked) > gate max_fabricated {gates['max_fabricated']}")
    return failures

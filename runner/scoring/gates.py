"""Quality gates: minimum metric values and a maximum error rate, checked on a result."""

from __future__ import annotations

from typing import Any

from runner.results import RunResult


def check_gates(result: RunResult, gates: dict[str, Any]) -> list[str]:
    """The failed quality gates, each as a one-line reason (empty when all pass).

    Every declared metric of the result (``gate.<name>``) may have a minimum; ``max_error_rate``
    bounds the share of failed cases.
    """
    failures = []
    for key, value in result.metrics.items():
        minimum = gates.get(key)
        if minimum is not None and (value is None or value < minimum):
            shown = "undefined" if value is None else f"{value:.4f}"
            failures.append(f"{key} {shown} < gate {minimum}")
    max_rate = gates.get("max_error_rate")
    if max_rate is not None and result.error_rate > max_rate:
        failures.append(f"error rate {result.error_rate:.4f} ({result.n_errors} of "
                        f"{result.n_cases} cases) > gate max_error_rate {max_rate}")
    return failures

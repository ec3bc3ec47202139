"""``hydra/sweeper=ragcite``: Hydra's basic sweeper, with the jobs that differ only in their
threshold launched as one job.

A threshold is a setting of scoring: one job computes its responses and similarities once and
decides any number of thresholds from them (``scoring.threshold=[0.3,0.5]``). So a sweep such as
``-m matcher=substring,ngram threshold=strict,lenient`` launches two jobs, one per matcher, each
with ``scoring.threshold=[strict,lenient]``, and every threshold still gets its own result
folder and tracked run. Grouping happens before launching, so it holds on every launcher (basic,
joblib, Ray, Submitit). Everything else (``params``, ``max_batch_size``, the batch check) is
Hydra's basic sweeper. The plugin lives in Hydra's ``hydra_plugins`` namespace, where Hydra
looks for plugin classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException

from runner.matchers.base import LEVELS
from runner.scoring.thresholds import THRESHOLD_KEYS


def _check(spec: str) -> None:
    """Refuse, before any job runs, a threshold that is neither a number nor a level."""
    if spec in LEVELS:
        return
    try:
        float(spec)
    except ValueError:
        raise HydraException(f"scoring.threshold: {spec!r} is neither a number nor a level "
                             f"({', '.join(LEVELS)})") from None


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _spec(job: Sequence[str]) -> tuple[Optional[str], list[str]]:
    """The threshold a job's overrides choose (the value over the level) and its other ones."""
    found: dict[str, str] = {}
    rest = []
    for override in job:
        key = _key(override)
        if key in THRESHOLD_KEYS and "=" in override:
            found[key] = override.split("=", 1)[1]
        else:
            rest.append(override)
    spec = found.get("scoring.threshold", found.get("threshold"))
    if spec is not None and spec.startswith("["):  # already a list: a job of its own
        return None, list(job)
    return spec, rest


def group_thresholds(jobs: Sequence[Sequence[str]]) -> list[list[str]]:
    """Merge the jobs whose overrides differ only in their threshold into one job each.

    Args:
        jobs: Each job's overrides, in launch order.

    Returns:
        The jobs to launch: a job that shares everything but its threshold with others carries
        ``scoring.threshold=[a,b,...]`` (in order, without repeats); any other job is as given.
    """
    groups: dict[tuple[str, ...], list[str]] = {}
    first: dict[tuple[str, ...], list[str]] = {}  # each group's first job, as given
    alone: dict[tuple[str, ...], list[str]] = {}
    order: list[tuple[str, tuple[str, ...]]] = []
    for job in jobs:
        spec, rest = _spec(job)
        key = tuple(rest)
        if spec is None:
            alone[tuple(job)] = list(job)
            order.append(("alone", tuple(job)))
            continue
        _check(spec)
        if key not in groups:
            groups[key] = []
            first[key] = list(job)
            order.append(("group", key))
        if spec not in groups[key]:
            groups[key].append(spec)
    out: list[list[str]] = []
    for kind, key in order:
        if kind == "alone":
            out.append(alone[key])
        elif len(groups[key]) == 1:
            out.append(first[key])
        else:
            out.append([*key, f"scoring.threshold=[{','.join(groups[key])}]"])
    return out


class RagciteSweeper(BasicSweeper):
    """Hydra's :class:`BasicSweeper` launching one job per group of thresholds."""

    @staticmethod
    def split_arguments(overrides: list[Override],
                        max_batch_size: Optional[int]) -> list[list[list[str]]]:
        """Hydra's batches of jobs, after :func:`group_thresholds` (recorded for the sweep's
        summary, which lists a job that never ran)."""
        from runner.sweep import SWEEPS

        (jobs,) = BasicSweeper.split_arguments(overrides, None)
        grouped = SWEEPS.planned = group_thresholds(jobs)
        if max_batch_size is None:
            return [grouped]
        return [grouped[i:i + max_batch_size] for i in range(0, len(grouped), max_batch_size)]

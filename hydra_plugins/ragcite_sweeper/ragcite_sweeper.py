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
from runner.scoring.thresholds import THRESHOLD_KEYS, is_number


def _spec(job: Sequence[str]) -> tuple[Optional[str], list[str]]:
    """The threshold a job's overrides choose (the value over the level) and its other ones;
    a threshold that is neither a number nor a level is refused before any job runs."""
    chosen = [o for o in job if "=" in o and o.split("=", 1)[0].lstrip("+~") in THRESHOLD_KEYS]
    found = {key.lstrip("+~"): value for key, value in (o.split("=", 1) for o in chosen)}
    rest = [o for o in job if o not in chosen]
    spec = found.get("scoring.threshold", found.get("threshold"))
    if spec is not None and spec.startswith("["):  # already a list: a job of its own
        return None, list(job)
    if spec is not None and spec not in LEVELS and not is_number(spec):
        raise HydraException(f"scoring.threshold: {spec!r} is neither a number nor a level "
                             f"({', '.join(LEVELS)})")
    return spec, rest


def group_thresholds(jobs: Sequence[Sequence[str]]) -> list[list[str]]:
    """Merge the jobs whose overrides differ only in their threshold into one job each.

    Args:
        jobs: Each job's overrides, in launch order.

    Returns:
        The jobs to launch: a job that shares everything but its threshold with others carries
        ``scoring.threshold=[a,b,...]`` (in order, without repeats); any other job is as given.
    """
    groups: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}  # → (first job, specs)
    for job in jobs:
        spec, rest = _spec(job)
        key = (str(len(groups)),) if spec is None else ("", *rest)  # a job alone: its own key
        _, specs = groups.setdefault(key, (list(job), []))
        if spec is not None and spec not in specs:
            specs.append(spec)
    return [first if len(specs) < 2 else [*key[1:], f"scoring.threshold=[{','.join(specs)}]"]
            for key, (first, specs) in groups.items()]


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

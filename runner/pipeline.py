"""One job, top to bottom: dataset → adapter → matcher → scoring → results files.

:func:`run_job` knows nothing of Hydra: it takes plain config data and a folder, so tests and
other front ends call it directly. A job decides every threshold of ``scoring.threshold`` from
one pass: the cases are loaded, answered and their similarities computed once, then each
threshold is decided and written as its own result (docs/results.md).
"""

from __future__ import annotations

import datetime as dt
import gc
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from tqdm import tqdm

from runner._gc import gc_paused
from runner.adapters.base import AdapterContext, ModelAdapter
from runner.adapters.responses import get_responses
from runner.api.cache import CacheStats, DiskCache
from runner.api.usage import usage_section
from runner.config.folders import check_folder
from runner.config.naming import system_name
from runner.config.plugins import build
from runner.data.citations import Tally, with_offsets
from runner.data.dataset import Dataset
from runner.data.models import Case, Response
from runner.errors import RagciteError
from runner.evaluate import count_pairs
from runner.matchers.base import (
    Checked,
    FallsBack,
    Matcher,
    OwnCache,
    for_workload,
    similarity_range,
    usage_of,
)
from runner.matchers.cached import cached
from runner.redact import env_secrets, protect, redact, scrub_files, secret_values, terminal
from runner.results import CONFIG_FILE, RunResult
from runner.results.writer import ResultWriter, write_config
from runner.scoring.aggregate import Aggregator
from runner.scoring.case import ScoringOptions
from runner.scoring.fidelity import Locator
from runner.scoring.gates import check_gates, run_metrics
from runner.scoring.metrics import COUNT_KEYS, summary_figures
from runner.scoring.parallel import resolve_workers, score_parallel
from runner.scoring.thresholds import Threshold, resolve_thresholds

log = logging.getLogger("ragcite")
TIMINGS = ("load_s", "model_s", "score_s")
"""A job's stages, timed in wall seconds (docs/results.md)."""


@dataclass
class Outcome:
    """One threshold's result of a job.

    Attributes:
        threshold: The threshold.
        folder: Its result folder.
        result: Its figures (without cases in memory).
        failures: Its failed quality gates, one line each.
    """

    threshold: Threshold
    folder: Path
    result: RunResult
    failures: list[str] = field(default_factory=list)


@dataclass
class _Run:
    """What the stages of one job share."""

    cfg: dict[str, Any]
    out: Path
    names: dict[str, str]
    started: dt.datetime
    adapter: ModelAdapter
    matcher: Matcher
    dataset: Dataset
    thresholds: list[Threshold]
    timings: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TIMINGS, 0.0))
    stats: CacheStats = field(default_factory=CacheStats)
    workers: int = 1
    n_cases: int = 0
    answered: int = 0
    dataset_cases: int = 0
    tally: Tally = field(default_factory=Tally)
    writer: ResultWriter = field(init=False)


def run_job(cfg: dict[str, Any], out: Path, names: dict[str, str] | None = None,
            report: Callable[[list[Path]], None] | None = None) -> list[Outcome]:
    """Run one job and write its results into `out`, ``job.json`` last.

    Args:
        cfg: The composed config as plain data (interpolations resolved).
        out: The job's folder.
        names: The chosen option of each config group (``dataset``, ``model``, ...).
        report: Called with the result folders once their results files are written, before
            ``job.json``: whatever it writes (the reports) is part of the job.

    Returns:
        One :class:`Outcome` per threshold, in order.

    Raises:
        RagciteError: Bad config or data (before any model call where it can be found).
    """
    started = dt.datetime.now(dt.timezone.utc)
    protect(secret_values(cfg) | env_secrets())  # kept out of logs, the cache and responses
    out.mkdir(parents=True, exist_ok=True)
    write_config(out / CONFIG_FILE, redact(cfg))
    # The parts are built and checked first: a missing API key or a bad setting fails with one
    # line before any data is loaded or any call is made.
    adapter: ModelAdapter = build(cfg["model"], "model", protocol=ModelAdapter)
    matcher: Matcher = build(cfg["matcher"], "matcher", protocol=Matcher)
    adapter.check()
    if isinstance(matcher, Checked):
        matcher.check()
    thresholds = resolve_thresholds(cfg["scoring"]["threshold"], matcher.levels,
                                    similarity_range(matcher))
    dataset = Dataset(cfg["dataset"])
    run = _Run(cfg, out, dict(names or {}), started, adapter, matcher, dataset, thresholds)
    with open_cache(cfg, matcher) as cache:
        adapter.bind(AdapterContext(dataset=dataset, cache_dir=cache.dir if cache else None))
        results = _score(run, cache)
    return _finish(run, results, report)


class _Batches:
    """The job's cases in batches (``scoring.batch_size``), each with its responses (answered
    from the job's `cache` first) and whether more follow.

    Once the caller has forked its scoring workers for a batch and given them their work,
    :meth:`load_next` loads and answers the next batch in the job's thread while they score,
    so both cores stay busy without a thread of its own. An error loading or answering is
    raised where its batch would be handed out, after the batches before it are scored and
    written, as when loading in turn. What the caller waits for a batch is its ``load_s``. A
    batch's cases are frozen for the collector as they are loaded (``gc.freeze``): no
    collection walks them, here or in the workers that inherit them; the job unfreezes them
    at its end.
    """

    def __init__(self, run: _Run, cache: DiskCache | None) -> None:
        self.run, self.cache, self.cases = run, cache, run.dataset.iter_cases()
        self.size = int(run.cfg["scoring"]["batch_size"])
        self.ahead: list[Case] = []  # one case ahead: is a batch the last?
        self.loaded: tuple[list[Case], list[Response]] | BaseException | None = None

    def _load(self) -> None:
        try:
            with gc_paused():  # allocation-heavy and cycle-free (runner._gc)
                cases = self.ahead + list(islice(self.cases, self.size - len(self.ahead)))
                self.ahead = list(islice(self.cases, 1))
                gc.freeze()  # before the collector runs again: no collection walks the cases
            self.loaded = cases, self._answer(cases) if cases else []
        except BaseException as exc:  # raised in turn, where the batch is handed out
            self.loaded = exc

    def _answer(self, cases: list[Case]) -> list[Response]:
        """The system's responses to `cases`, their quotes located by their offsets."""
        run, t0 = self.run, time.perf_counter()
        responses = get_responses(run.adapter, cases, run.dataset.digest, self.cache, run.stats,
                                  len(cases), False)
        responses = [with_offsets(r, lambda: run.dataset.texts, run.dataset.path,
                                  f"case {c.id!r}") for c, r in zip(cases, responses)]
        run.tally.add(responses)
        run.timings["model_s"] += time.perf_counter() - t0
        return responses

    def load_next(self) -> None:
        """Load the next batch now, if more follow (while this batch's workers score)."""
        if self.ahead and self.loaded is None:
            self._load()

    def __iter__(self) -> Iterator[tuple[list[Case], list[Response], bool]]:
        more = True
        while more:
            t0 = time.perf_counter()
            if self.loaded is None:  # the first batch, or none loaded beside the scoring
                self._load()
            self.run.timings["load_s"] += time.perf_counter() - t0
            loaded, self.loaded = self.loaded, None
            if isinstance(loaded, BaseException):
                raise loaded
            more = bool(self.ahead)
            if loaded and loaded[0]:
                self.run.n_cases += len(loaded[0])
                yield loaded[0], loaded[1], more


@contextmanager
def open_cache(cfg: dict[str, Any], matcher: Matcher) -> Iterator[DiskCache | None]:
    """The run's cache (`cache.*`: None when off), shared with calibrations, open while the
    block runs; a matcher that keeps its own store (:class:`OwnCache`) is bound to its folder."""
    settings = cfg.get("cache") or {}
    cache = None
    if settings.get("enabled", True):
        check_folder("cache.dir", settings["dir"])
        cache = DiskCache(settings["dir"])
        if settings.get("clear"):
            cache.clear()
    if isinstance(matcher, OwnCache):
        matcher.bind_cache(cache.dir if cache else None)
    with closing(cache) if cache is not None else nullcontext():  # closed after the block
        yield cache


def _options(run: _Run) -> ScoringOptions:
    """The job's scoring options (``scoring.*``), with its documents indexed once, before any
    scoring worker forks, when quote fidelity is on."""
    scoring = run.cfg["scoring"]
    options = ScoringOptions(run.thresholds[0].value, str(scoring["zero_division"]),
                             bool(scoring["require_same_source"]),
                             tuple(scoring["source_normalization"]), dict(scoring["bands"]),
                             run_metrics(scoring["metrics"]))
    if scoring["fidelity"] != "off":
        kb = (run.dataset.knowledge_base()
              if (run.dataset.cfg.get("knowledge_base") or {}).get("path") else [])
        options.fidelity = Locator(((d.source, d.text) for d in kb), options.normalizer)
    return options


def _score(run: _Run, cache: DiskCache | None) -> list[RunResult]:
    """Batch by batch: load, answer, compute the similarities once and decide every threshold;
    the tables are written as they come, so memory holds one batch and a few numbers a case."""
    cfg, scoring, timings = run.cfg, run.cfg["scoring"], run.timings
    options = _options(run)
    boot = scoring["bootstrap"]
    empty = Aggregator(options.zero_division, int(boot["resamples"]),
                       float(boot["confidence"]), int(cfg["seed"]), keep_cases=False,
                       bands=options.bands, metrics=options.metrics,
                       max_failed_listed=int(cfg["report"].get("max_failed_listed", 500)))
    aggs = [empty.empty() for _ in run.thresholds]
    scorer = cached(run.matcher, cache, run.stats)
    writer = run.writer = ResultWriter(run.out, run.thresholds, options.metrics, COUNT_KEYS)
    # On a terminal only (disable=None): a log file or CI output gets no half-drawn bar.
    bar = tqdm(desc="cases", unit="case", leave=False, file=terminal(),
               disable=None if cfg["progress"] else True)
    batches = _Batches(run, cache)
    shown = cfg["report"].get("max_cases", 0)  # the cases a report embeds (null: all)
    try:
        for cases, responses, more in batches:
            run.answered += sum(1 for r in responses if r.error is None)
            t0 = time.perf_counter()
            if writer.lines == 0:  # the first batch plans for the job
                run.workers = resolve_workers(scoring["workers"], run.matcher, len(cases))
                # The job's pairs: this batch's, at least twice as many when more follow.
                scorer = for_workload(scorer, count_pairs(cases, responses) * (2 if more else 1),
                                      run.workers)
            options.excerpts = None if shown is None else max(shown - writer.lines, 0)
            for chunk in score_parallel(cases, responses, scorer, options,
                                        [t.value for t in run.thresholds],
                                        min(run.workers, len(cases)), empty,
                                        chunk=min(int(scoring["batch_size"]), 2_500),
                                        forked=batches.load_next):
                writer.write(chunk.passages, chunk.cases)
                for agg, part in zip(aggs, chunk.aggregators):
                    agg.merge(part)
            timings["score_s"] += time.perf_counter() - t0
            bar.update(len(cases))
    finally:
        gc.unfreeze()  # the collector sees the batches (and what opening MLflow froze) again
        writer.close()
        bar.close()
    if run.n_cases == 0:  # found before any model call: the first batch was empty
        limit = " within dataset.limit=0" if run.dataset.limit == 0 else ""
        raise RagciteError(f"dataset.path: {run.dataset.path} holds no cases{limit}; nothing to "
                           f"score")
    return [agg.result() for agg in aggs]


def _finish(run: _Run, results: list[RunResult],
            report: Callable[[list[Path]], None] | None) -> list[Outcome]:
    """Describe each result, check its gates and write the rest of the files: the results,
    `report`'s, then ``job.json``."""
    hits = run.stats.hits  # what the run's cache served: the parts were never asked for it
    usage = usage_section({"model": run.adapter.usage(), "matcher": usage_of(run.matcher)},
                          run.cfg["prices"], {"model": hits.get("responses", 0),
                                              "matcher": hits.get("similarities", 0)})
    gates = {k: v for k, v in run.cfg["gate"].items() if v is not None}
    # The cases the dataset holds, for coverage: the records of its case file when a transform
    # may skip some (ExpertQA keeps one system's lines), else the cases read; at most its limit.
    n = run.n_cases
    if run.dataset.cfg.get("transform"):
        from runner.data.loading import resolve_path
        from runner.data.readers import iter_records

        n = sum(1 for _ in iter_records(resolve_path(run.dataset.path),
                                        run.dataset.cfg.get("format")))
    run.dataset_cases = n if run.dataset.limit is None else min(n, run.dataset.limit)
    outcomes = []
    for threshold, result, folder in zip(run.thresholds, results, run.writer.dirs):
        failures = check_gates(result, run.cfg["gate"])
        result.extra = describe(run, threshold, folder) | {"usage": usage, "gates": {
            "passed": not failures, "failures": failures, "config": gates}}
        outcomes.append(Outcome(threshold, folder, result, failures))
    for note in [*getattr(run.adapter, "notes", list)(), *filter(None, [run.tally.warning()])]:
        log.warning("ragcite: warning: %s", note)
    run.writer.finish(results, redact(run.cfg))
    scrub_files(run.out, secret_values(run.cfg) | env_secrets())
    if report is not None:
        report(run.writer.dirs)
    run.writer.mark_complete()
    log.info("wrote %s", run.out)
    return outcomes


def describe(run: _Run, threshold: Threshold, folder: Path) -> dict[str, Any]:
    """The sections of a result's ``metrics.json`` that say what was run."""
    from runner import __version__

    cfg, names, given = run.cfg, run.names, run.cfg["run_name"]
    system = system_name(cfg["model"], cfg["dataset"], names.get("model", "?"))
    # The run name leads with what differs between the runs of an experiment, as MLflow's runs
    # list cuts names at about 18 characters: threshold, matcher, system, dataset, then the
    # threshold's level (``t0.5_ngram_wrong_passages_demo_default``). A given ``run_name``
    # takes the place of the middle, and is the whole name when the job decides one threshold.
    middle = [str(given)] if given else [names.get("matcher", "?"), system,
                                         names.get("dataset", "?")]
    return {
        "threshold": threshold.to_dict(),
        "run": {"name": str(given) if given and len(run.thresholds) == 1 else "_".join(
                    [f"t{threshold.value:g}", *middle, *filter(None, [threshold.level])]),
                "ragcite_version": __version__, "started_at": run.started.isoformat(),
                "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                "output_dir": str(folder.resolve()), "job_dir": str(run.out.resolve())},
        "dataset": {"name": run.dataset.name, "path": str(run.dataset.path),
                    "digest": run.dataset.digest, "n_cases": run.n_cases},
        "coverage": {"answered": run.answered, "dataset_cases": run.dataset_cases},
        "dangling": run.tally.figure(),
        "model": {"name": names.get("model", type(run.adapter).__name__), "system": system,
                  "identity": redact(run.adapter.identity())},
        "matcher": {"name": names.get("matcher", type(run.matcher).__name__),
                    "identity": redact(run.matcher.identity()),
                    **({"fallback": run.matcher.fallback()}
                       if isinstance(run.matcher, FallsBack) else {})},
        "scoring": {"threshold": threshold.value, "threshold_level": threshold.level,
                    **{k: cfg["scoring"][k] for k in ("zero_division", "require_same_source",
                                                      "source_normalization", "bands")}},
        "execution": {"workers": run.workers,
                      "timings": {k: round(v, 4) for k, v in run.timings.items()},
                      "cache": {"enabled": cfg["cache"]["enabled"], **run.stats.to_dict()}},
    }


def summary_line(result: RunResult) -> str:
    """A one-line human summary of the headline figures, true of them.

    ``context R/P/F1 0.806/0.283/0.408  source R/P/F1 0.933/0.506/0.613  (means over 30
    scored cases, 0 failed; 25 of 34 ground-truth passages matched; the system answered 30 of
    the dataset's 30 cases)``: the six figures are macro means over the scored cases; the
    passage count is pooled over them; the coverage is ``metrics.json``'s ``coverage``; then
    the quotes in no document and the pairs a matcher handed to another, when there are any.
    """
    n = result.n_scored
    refs, hit = result.counts.get("references"), result.counts.get("references_matched")
    pooled = (f"; {hit} of {refs} ground-truth passage{'' if refs == 1 else 's'} matched"
              if n and refs is not None and hit is not None else "")
    cover = result.extra.get("coverage") or {}
    if cover.get("dataset_cases") is not None:
        total = int(cover["dataset_cases"])
        pooled += (f"; the system answered {cover['answered']} of the dataset's {total} "
                   f"case{'' if total == 1 else 's'}")
    made_up, checked = result.fidelity.get("fabricated", 0), result.fidelity_checked
    if made_up:  # quote fidelity (SPEC 6.1): said when some quote is found in no document
        pooled += (f"; {made_up} of {checked} checked quote{'' if checked == 1 else 's'} "
                   f"appear{'s' if made_up == 1 else ''} in no document")
    # A matcher that handed pairs to another (SPEC 6.1: locate, to ngram): said when some were.
    if (back := (result.extra.get("matcher") or {}).get("fallback") or {}).get("fell_back"):
        pooled += (f"; {back['fell_back']} of {back['pairs']} pair{'s' * (back['pairs'] != 1)} "
                   f"fell back to {back['to']}")
    return (f"{summary_figures(result.metrics)}  (means over {n} scored "
            f"case{'' if n == 1 else 's'}, {result.n_errors} failed{pooled})")

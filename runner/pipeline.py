"""dataset → adapter → matcher → scoring → results files, with batching and caching.

This module knows nothing of Hydra: :func:`run_experiment` takes plain config data and a
folder, so tests and other front ends can call it directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from tqdm import tqdm

from runner._gc import frozen_heap, gc_paused
from runner.adapters.base import AdapterContext, ModelAdapter
from runner.cache import CACHE_VERSION, CacheStats, DiskCache, digest, text_key
from runner.data.dataset import Dataset
from runner.data.errors import DataError
from runner.errors import RagciteError
from runner.data.models import Case, Response
from runner.matchers.base import Matcher, PairError, Similarity, TextPair, for_workload
from runner.memo import LINES, MEMO, PREPARED, SimilarityMemo
from runner.parallel import count_pairs, resolve_workers, score_parallel
from runner.redact import env_secrets, redact, scrub_files, secret_values
from runner.results import CASES_FILE, METRICS_FILE, RunResult, write_cases, write_metrics
from runner.scoring.aggregate import Aggregator
from runner.scoring.case import ScoringOptions
from runner.scoring.metrics import METRIC_KEYS
from runner.usage import usage_section

log = logging.getLogger("ragcite")


class CachedMatcher:
    """Wraps a matcher so each (matcher identity, pair) similarity is computed once, ever.

    The cache namespace leaves the threshold out, so every threshold of a sweep reads the
    similarities the first job computed. Failed pairs are not cached (a rerun retries them).
    """

    def __init__(self, inner: Matcher, cache: DiskCache | None, stats: CacheStats,
                 memo: SimilarityMemo | None = None) -> None:
        self.inner = inner
        self.threshold = inner.threshold
        self.cache = cache
        self.stats = stats
        self.memo = memo  # in memory, for the matchers the disk cache skips (runner.memo)
        self.namespace = "sim-" + digest({"v": CACHE_VERSION, "m": inner.identity()})[:32]

    def identity(self) -> dict[str, Any]:
        """The wrapped matcher's identity."""
        return self.inner.identity()

    @property
    def similarity_array(self) -> Callable[[Sequence[str], Any, Any], Any] | None:
        """The wrapped matcher's ``similarity_array`` (text ids in, array out) when it is not
        cached, else None (the batch scorer then calls :meth:`similarities`)."""
        fast = getattr(self.inner, "similarity_array", None)
        if not callable(fast) or (self.cache is not None
                                  and getattr(self.inner, "cacheable", True)):
            return None

        memo = self.memo

        def call(texts: Sequence[str], a: Any, b: Any) -> Any:
            if memo is None:
                self.stats.add("similarities", 0, len(a))
                return fast(texts, a, b)
            key = memo.key(self.namespace, texts, a, b)
            found = memo.get(key)
            if found is not None:
                self.stats.add("similarities", len(a), 0)
                return found
            values = fast(texts, a, b)
            memo.put(key, values)
            self.stats.add("similarities", 0, len(a))
            return values

        return call

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Cached similarities; only missing pairs reach the wrapped matcher.

        A matcher that declares ``cacheable = False`` (it computes faster than the cache can
        look up) is always called.
        """
        if self.cache is None or not getattr(self.inner, "cacheable", True):
            self.stats.add("similarities", 0, len(pairs))
            return self.inner.similarities(pairs)
        keys = [text_key(r, c) for r, c in pairs]
        with self.cache.lock(self.namespace):
            found = self.cache.get_many(self.namespace, keys)
            missing = [i for i, k in enumerate(keys) if k not in found]
            new: list[Similarity] = []
            if missing:
                new = self.inner.similarities([pairs[i] for i in missing])
                self.cache.put_many(self.namespace, [
                    (keys[i], v) for i, v in zip(missing, new) if not isinstance(v, PairError)])
        self.stats.add("similarities", len(pairs) - len(missing), len(missing))
        out: list[Similarity] = [found.get(k, 0.0) for k in keys]
        for i, v in zip(missing, new):
            out[i] = v
        return out


def get_responses(adapter: ModelAdapter, cases: Sequence[Case], dataset_digest: str,
                  cache: DiskCache | None, stats: CacheStats, batch_size: int,
                  progress: bool, kept: KeptResponses | None = None) -> list[Response]:
    """Responses for every case, from the cache when possible, else from the adapter in batches.

    Error responses are not cached, so a rerun retries the failed cases. With `kept` (a
    sweep's jobs in one process, sharing their loaded cases), the previous job's responses to
    the very same cases from the same adapter are taken as they are (counted as cache hits).
    """
    use_cache = cache is not None and getattr(adapter, "cacheable", True)
    ns = "resp-" + digest({"v": CACHE_VERSION, "a": adapter.identity(),
                           "d": dataset_digest})[:32]
    if kept is not None:
        again = kept.get(ns, cases)
        if again is not None:
            stats.add("responses", len(cases), 0)
            return again
    keys = [text_key(c.id, c.query) for c in cases] if use_cache else []
    found: dict[str, Any] = {}
    out: list[Response | None] = [None] * len(cases)
    lock = cache.lock(ns) if use_cache and cache is not None else _null()
    with lock:
        if use_cache and cache is not None:
            found = cache.get_many(ns, keys)
            for i, k in enumerate(keys):
                if k in found:
                    out[i] = Response.model_validate(found[k])
        missing = [i for i, r in enumerate(out) if r is None]
        bar = tqdm(total=len(missing), desc="model", unit="case", disable=not progress,
                   leave=False)
        for start in range(0, len(missing), batch_size):
            idx = missing[start:start + batch_size]
            batch = [cases[i] for i in idx]
            try:
                answers = asyncio.run(adapter.respond(batch))
                if len(answers) != len(batch):
                    raise RuntimeError(f"the adapter returned {len(answers)} responses for "
                                       f"{len(batch)} cases")
            except RagciteError:
                raise
            except Exception as exc:  # the whole batch failed: every case is an error
                log.warning("model adapter failed on a batch: %s: %s", type(exc).__name__, exc)
                answers = [Response(error=f"{type(exc).__name__}: {exc}") for _ in batch]
            for i, resp in zip(idx, answers):
                out[i] = resp
            if use_cache and cache is not None:
                cache.put_many(ns, [(keys[i], r.model_dump(mode="json"))
                                    for i, r in zip(idx, answers) if r.error is None])
            bar.update(len(idx))
        bar.close()
    stats.add("responses", len(cases) - len(missing), len(missing))
    responses = [r if r is not None else Response(error="no response") for r in out]
    if kept is not None:
        kept.keep(ns, cases, responses)
    return responses


class KeptResponses:
    """The responses the last job of this process got, for the next job of the same sweep.

    Kept only when none failed (a failed response is asked for again, as the cache does) and
    handed out only for the very same list of cases (:data:`LOADED`) and the same adapter
    identity and dataset (`ns`, the response cache's namespace).
    """

    def __init__(self) -> None:
        self._ns: str | None = None
        self._cases: Sequence[Case] | None = None
        self._responses: list[Response] | None = None

    def get(self, ns: str, cases: Sequence[Case]) -> list[Response] | None:
        """The kept responses to `cases` under `ns`, or None."""
        if self._responses is None or ns != self._ns or cases is not self._cases:
            return None
        return self._responses

    def keep(self, ns: str, cases: Sequence[Case], responses: list[Response]) -> None:
        """Keep `responses` to `cases` (nothing when one of them failed)."""
        self.clear()
        if not any(r.error is not None for r in responses):
            self._ns, self._cases, self._responses = ns, cases, responses

    def clear(self) -> None:
        """Drop the kept responses."""
        self._ns = self._cases = self._responses = None


RESPONSES = KeptResponses()
"""This process's kept responses (used by sweep jobs that reuse their loaded cases)."""


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class LoadedCases:
    """The cases the last job of this process loaded, for the next job of the same sweep.

    The jobs of a sweep on the basic launcher run one after another in one process, mostly on
    the same dataset. Keyed by the dataset's content digest and its loading config, so a changed
    file or setting loads again. One dataset is kept at a time; the sweep drops it at its end.
    """

    def __init__(self) -> None:
        self._key: str | None = None
        self._cases: list[Case] | None = None

    @staticmethod
    def key(dataset: Dataset) -> str:
        """The digest of the dataset's contents and its whole config."""
        return digest({"digest": dataset.digest, "cfg": dataset.cfg})

    def get(self, dataset: Dataset) -> list[Case] | None:
        """The kept cases of `dataset`, or None (then loading reports any problem)."""
        if self._cases is None:
            return None
        try:
            key = self.key(dataset)
        except (OSError, DataError):
            return None
        return self._cases if key == self._key else None

    def keep(self, dataset: Dataset, cases: list[Case]) -> None:
        """Keep `cases` (loaded from `dataset`) in place of any other."""
        self._key, self._cases = self.key(dataset), cases

    def clear(self) -> None:
        """Drop the kept cases."""
        self._key = self._cases = None


LOADED = LoadedCases()
"""This process's kept cases (used when :attr:`Experiment.reuse_cases` is set)."""


@dataclass
class Experiment:
    """Everything a job needs besides its config: where to write and what the parts are named."""

    output_dir: Path
    names: dict[str, str] = field(default_factory=dict)
    # Called once the cases are loaded, before any model call: the CLI waits there for the
    # tracker that opens its run in the background (runner.tracking.process).
    before_model: Callable[[], None] | None = None
    # Reuse the cases the previous job of this process loaded from the same dataset (LOADED),
    # and keep this job's for the next: set for the jobs a sweep runs in its own process.
    reuse_cases: bool = False
    # A job of a sweep, wherever it runs: its similarities are kept in memory (runner.memo)
    # for the sweep's next jobs in the same process. A single run keeps none (nothing follows).
    sweep_job: bool = False


def check_gates(result: RunResult, gates: dict[str, Any]) -> list[str]:
    """The failed quality gates, each as a one-line reason (empty when all pass)."""
    failures = []
    for key in METRIC_KEYS:
        minimum = gates.get(key)
        if minimum is None:
            continue
        value = result.metrics.get(key)
        if value is None or value < minimum:
            shown = "undefined" if value is None else f"{value:.4f}"
            failures.append(f"{key} {shown} < gate {minimum}")
    max_rate = gates.get("max_error_rate")
    if max_rate is not None and result.error_rate > max_rate:
        failures.append(f"error rate {result.error_rate:.4f} ({result.n_errors} of "
                        f"{result.n_cases} cases) > gate max_error_rate {max_rate}")
    return failures


def run_experiment(cfg: dict[str, Any], exp: Experiment) -> tuple[RunResult, list[str]]:
    """Run one job: load, respond, score, and write ``config.yaml``, ``cases.jsonl`` and
    ``metrics.json`` into ``exp.output_dir``.

    Args:
        cfg: The composed config as plain data (interpolations resolved).
        exp: The output folder and the chosen option names.

    Returns:
        The run result (without cases in memory) and the failed gates.

    Raises:
        RagciteError: Bad config or data.
    """
    import yaml

    out = exp.output_dir
    out.mkdir(parents=True, exist_ok=True)
    secrets = secret_values(cfg) | env_secrets()
    safe_cfg = redact(cfg)
    (out / "config.yaml").write_text(yaml.safe_dump(safe_cfg, sort_keys=False),
                                     encoding="utf-8")
    timings: dict[str, float] = {}
    started = dt.datetime.now(dt.timezone.utc)

    # The parts are built and checked first: a missing API key or a bad setting fails with
    # one line before any data is loaded or any call is made.
    adapter: ModelAdapter = instantiate(cfg["model"], _convert_="all")
    matcher: Matcher = instantiate(cfg["matcher"], _convert_="all")
    for part in (adapter, matcher):
        check = getattr(part, "check", None)  # optional hook of plug-ins that call servers
        if callable(check):
            check()

    t0 = time.perf_counter()
    dataset = Dataset(cfg["dataset"])
    # The loaded cases live until the end of the job and hold no reference cycle: frozen, the
    # cyclic collector stops walking them on every full collection (runner._gc). They are
    # frozen before the collector resumes (else its first collection walks all of them, 1 s at
    # 100,000 cases), and freed while still frozen (kept alive past the unfreeze, they would
    # make the next full collection walk all of them, 2 s). A sweep's kept cases (LOADED) do
    # outlive the job: the next job's collections may walk them once, still far less than
    # loading them again (3 s at 100,000 cases).
    with contextlib.ExitStack() as frozen:
        kept = LOADED.get(dataset) if exp.reuse_cases else None
        if kept is not None:
            log.info("reusing the %d cases of %s loaded by the previous job", len(kept),
                     dataset.path)
        with gc_paused():
            cases = kept if kept is not None else list(dataset.iter_cases())
            frozen.enter_context(frozen_heap())
        if exp.reuse_cases:
            LOADED.keep(dataset, cases)
        timings["load_s"] = time.perf_counter() - t0
        if exp.before_model is not None:
            t0 = time.perf_counter()
            exp.before_model()
            timings["tracking_wait_s"] = time.perf_counter() - t0  # the MLflow helper, if any
        outcome = _respond_score_write(cfg, exp, dataset, cases, adapter, matcher, timings,
                                       started, secrets)
        del cases
    return outcome


def _respond_score_write(cfg: dict[str, Any], exp: Experiment, dataset: Dataset,
                         cases: list[Case],
                         adapter: ModelAdapter, matcher: Matcher, timings: dict[str, float],
                         started: dt.datetime,
                         secrets: set[str]) -> tuple[RunResult, list[str]]:
    """The rest of :func:`run_experiment` once the cases are loaded."""
    from runner import __version__

    out = exp.output_dir
    progress = bool(cfg.get("progress", True))
    cache_cfg = cfg.get("cache") or {}
    cache = DiskCache(cache_cfg["dir"]) if cache_cfg.get("enabled", True) else None
    if cache is not None and cache_cfg.get("clear"):
        cache.clear()
    stats = CacheStats()

    t0 = time.perf_counter()
    adapter.bind(AdapterContext(dataset=dataset,
                                cache_dir=Path(cache_cfg["dir"]) if cache else None))
    scoring = cfg["scoring"]
    batch_size = int(scoring.get("batch_size", 10_000))
    # A sweep job in the sweep's process, on the cases the job before it loaded: its responses
    # too (cache.enabled=false: asked for again).
    kept = RESPONSES if cache is not None and exp.reuse_cases else None
    responses = get_responses(adapter, cases, dataset.digest, cache, stats, batch_size,
                              progress, kept)
    timings["model_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    bind_cache = getattr(matcher, "bind_cache", None)  # optional: matchers with own caches
    if callable(bind_cache):
        bind_cache(Path(cache_cfg["dir"]) if cache else None)
    # cache.enabled=false: nothing is reused.
    memo = MEMO if cache is not None and exp.sweep_job else None
    cached = CachedMatcher(matcher, cache, stats, memo)
    options = ScoringOptions(
        threshold=float(matcher.threshold),
        zero_division=scoring["zero_division"],
        require_same_source=bool(scoring["require_same_source"]),
        source_normalization=tuple(scoring["source_normalization"]),
        bands=dict(scoring["bands"]),
    )
    boot = scoring["bootstrap"]
    agg = Aggregator(options.zero_division, int(boot["resamples"]), float(boot["confidence"]),
                     int(cfg.get("seed", 0)), keep_cases=False)
    from runner.evaluate import score_batches

    bar = tqdm(total=len(cases), desc="score", unit="case", disable=not progress, leave=False)
    partial = out / (CASES_FILE + ".partial")

    def scored(items: Any) -> Any:
        for batch in score_batches(items, cached, options, batch_size=batch_size,
                                   on_batch=bar.update):
            agg.add_batch(batch)  # the batch's sums; its records are built for writing
            yield from batch

    workers = resolve_workers(scoring.get("workers"), matcher, len(cases))
    if workers > 1:  # a local matcher: cases scored in forked processes (runner.parallel)
        lines = LINES if memo is not None else None  # the previous job's lines, if the same
        here = False
        if lines is not None:
            # The previous job of this process scored these cases with this matcher: the
            # memo holds every similarity and line it needs, and reading them in this process
            # costs less than forking workers and sending every line back through a pipe.
            here = lines.begin(digest({
                "dataset": dataset.digest, "n": len(cases), "matcher": cached.namespace,
                "options": dataclasses.asdict(options) | {"threshold": None}}))
        start = reused = 0
        with partial.open("wb") as fh:
            for chunk in score_parallel(
                    cases, responses, matcher, options, 1 if here else workers, agg.empty(),
                    chunk=min(batch_size, 2_500), on_chunk=bar.update, memo=memo,
                    lines=lines, prepared=PREPARED if lines is not None else None):
                fh.write(b"".join(chunk.lines))
                agg.merge(chunk.aggregator)
                stats.add("similarities", chunk.similarities.hits,
                          chunk.similarities.computed)
                if memo is not None:
                    memo.update(chunk.computed)
                end = start + len(chunk.lines)
                if lines is not None:
                    lines.store(start, cases[start:end], responses[start:end],
                                chunk.decisions, chunk.lines)
                start, reused = end, reused + chunk.reused
        if lines is not None:  # cases.jsonl lines taken from the previous job / built
            lines.finish()
            stats.add("lines", reused, len(cases) - reused)
        if here:
            workers = 1
    else:
        cached.inner = for_workload(cached.inner, count_pairs(cases, responses))
        write_cases(partial, scored(zip(cases, responses)))
    bar.close()
    timings["score_s"] = time.perf_counter() - t0
    if cache is not None:
        cache.close()

    t0 = time.perf_counter()
    result = agg.result()
    timings["aggregate_s"] = time.perf_counter() - t0
    failures = check_gates(result, cfg.get("gate") or {})
    names = exp.names
    default_name = "_".join(names.get(k, "?") for k in ("dataset", "model", "matcher"))
    result.extra = {
        "run": {
            "name": cfg.get("run_name") or f"{default_name}_t{options.threshold:g}",
            "ragcite_version": __version__,
            "started_at": started.isoformat(),
            "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
            "output_dir": str(out.resolve()),
        },
        "dataset": {"name": dataset.name, "path": str(dataset.path), "digest": dataset.digest,
                    "n_cases": len(cases)},
        "model": {"name": names.get("model", type(adapter).__name__),
                  "identity": redact(adapter.identity())},
        "matcher": {"name": names.get("matcher", type(matcher).__name__),
                    "identity": redact(matcher.identity()), "threshold": options.threshold,
                    "threshold_level": names.get("threshold")},
        "scoring": {"zero_division": options.zero_division,
                    "require_same_source": options.require_same_source,
                    "source_normalization": list(options.source_normalization),
                    "workers": workers,
                    "bands": dict(options.bands)},
        "timings": {k: round(v, 4) for k, v in timings.items()},
        "cache": {"enabled": cache is not None, **stats.to_dict()},
        # API requests, tokens and estimated cost of this run (cached results cost nothing).
        "usage": usage_section({"model": adapter, "matcher": matcher}, cfg.get("prices")),
        "gates": {"passed": not failures, "failures": failures,
                  "config": {k: v for k, v in (cfg.get("gate") or {}).items()
                             if v is not None}},
    }
    partial.replace(out / CASES_FILE)
    write_metrics(out / METRICS_FILE, result)
    scrub_files(out, secrets)
    log.info("wrote %s", out / METRICS_FILE)
    return result, failures


def summary_line(result: RunResult) -> str:
    """A one-line human summary of the headline figures."""
    def f(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    m = result.metrics
    return (f"context R/P/F1 {f(m['context_recall'])}/{f(m['context_precision'])}/"
            f"{f(m['context_f1'])}  source R/P/F1 {f(m['source_recall'])}/"
            f"{f(m['source_precision'])}/{f(m['source_f1'])}  "
            f"({result.n_scored} scored, {result.n_errors} errors)")


def dumps(obj: Any) -> str:
    """Compact JSON for log lines."""
    return json.dumps(obj, ensure_ascii=False, default=str)

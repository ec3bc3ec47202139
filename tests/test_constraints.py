"""What a config key allows (runner/config/constraints.py) and the config check that applies it
(runner/config/check.py), in-process on the real composed config."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from runner.adapters.extractive import ExtractiveModel
from runner.config.check import check_config
from runner.config.constraints import CHECK, OneOf, Range
from runner.config.schema import register_configs
from runner.errors import RagciteError
from runner.matchers.llm import LlmMatcher


@pytest.mark.parametrize(("constraint", "value", "problem"), [
    (Range(low=1, integer=True), 1, None),
    (Range(low=1, integer=True), 0, "must be an integer >= 1, got 0"),
    (Range(low=1, integer=True), None, None),  # null is the schema's business
    (Range(0, 1), 0.0, None),
    (Range(0, 1), 1.0, None),
    (Range(0, 1), 1.5, "must be a number in [0, 1], got 1.5"),
    (Range(0, 1), float("nan"), "must be a number in [0, 1], got nan"),
    (Range(0, 1), True, "must be a number in [0, 1], got True"),
    (Range(0, 1, open_low=True, open_high=True), 0.0, "must be a number in (0, 1), got 0.0"),
    (Range(0, 1, open_low=True, open_high=True), 0.5, None),
    (Range(high=10, open_high=True), 10, "must be a number < 10, got 10"),
    (Range(low=0, open_low=True), 0, "must be a number > 0, got 0"),
    (OneOf(("a", "b"), "step"), "b", None),
    (OneOf(("a", "b"), "step"), ["a", "c", "d"], "unknown step 'c'; choose from: a, b"),
    (OneOf(("a", "b"), "unit"), "z", "unknown unit 'z'; choose from: a, b"),
])
def test_a_constraint_says_what_is_wrong(constraint: Range | OneOf, value: object,
                                         problem: str | None) -> None:
    assert constraint.problem(value) == problem


def test_the_shipped_config_and_every_option_pass(
        compose_cfg: Callable[..., DictConfig]) -> None:
    for overrides in [(), ("matcher=substring",), ("model=precomputed",), ("report=html",),
                      ("tracking=mlflow",), ("dataset=file", "dataset.path=x.jsonl"),
                      ("model=http", "model.url=http://127.0.0.1:1/")]:
        check_config(compose_cfg(*overrides))


@pytest.mark.parametrize(("overrides", "message"), [
    (("scoring.bands.green=0.3", "scoring.bands.medium=0.3"), None),  # equal bounds: allowed
    (("scoring.bands.green=0.3", "scoring.bands.medium=0.31"),
     "scoring.bands: green (0.3) must be >= medium (0.31)"),
    (("model.chunk_size=0",), "model.chunk_size: must be an integer >= 1, got 0"),
    (("model.chunk_overlap=2",), "model: chunk_overlap (2) must be < chunk_size (2)"),
    (("model.chunk_overlap=1",), None),
    (("+dataset.foo=1",), "dataset.foo: no such key; Dataset takes: name, path, format, mapping, "
                          "transform, limit, knowledge_base, systems, default_system"),
    (("+dataset.mapping.question=q",),
     "dataset.mapping.question: no such key; CaseMapping takes: id, query, references, "
     "expected_sources, citations, answer, documents, provider, raw, metadata"),
])
def test_a_composed_config_is_checked_with_located_lines(
        compose_cfg: Callable[..., DictConfig], overrides: tuple[str, ...],
        message: str | None) -> None:
    cfg = compose_cfg(*overrides)
    if message is None:
        check_config(cfg)
        return
    with pytest.raises(RagciteError) as exc:
        check_config(cfg)
    assert str(exc.value) == message


# --- every numeric setting declares its range ---------------------------------------------------


def _numeric_fields(schema: type, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(key, constraint or None) of every int or float field of a schema and its sections."""
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        kind = hints[f.name]
        if typing.get_origin(kind) is typing.Union:  # Optional[X]
            kind = next(a for a in typing.get_args(kind) if a is not type(None))
        if kind in (int, float):
            yield prefix + f.name, f.metadata.get(CHECK)
        elif dataclasses.is_dataclass(kind):
            yield from _numeric_fields(kind, f"{prefix}{f.name}.")


def _schemas() -> Iterator[tuple[str, type]]:
    register_configs()  # every schema, the calibrate section's within the root's
    stack: list[tuple[str, Any]] = [("schema", ConfigStore.instance().repo["schema"])]
    while stack:
        path, node = stack.pop()
        for name, child in node.items():
            if isinstance(child, dict):
                stack.append((f"{path}/{name}", child))
            else:
                yield f"{path}/{name}", OmegaConf.get_type(child.node)


def test_every_numeric_setting_declares_its_range() -> None:
    """A future int or float key cannot forget its range: every one of ragcite's schemas
    (matchers' and model adapters' included, derived from their classes; mode=calibrate's
    section within the root's) and every numeric option of ragcite-compare declares a Range."""
    found = {f"{where}:{key}": check for where, schema in _schemas()
             for key, check in _numeric_fields(schema)}
    assert not [key for key, check in found.items() if not isinstance(check, Range)]
    # The walk reaches every group: the root, a matcher, a model adapter, calibrate's section.
    for key in ("schema/config.yaml:seed", "schema/config.yaml:scoring.workers",
                "schema/matcher/embeddings.yaml:timeout", "schema/model/openai.yaml:temperature",
                "schema/model/http.yaml:backoff", "schema/tracking/mlflow.yaml:timeout_s",
                "schema/report/html.yaml:gzip_above_mb", "schema/config.yaml:calibrate.worst"):
        assert key in found, key
    # By hand from the schemas: the root 9 (calibrate.worst), dataset 1, scoring 6, mlflow 2,
    # html 5, ngram 2, locate 2 (ngram's), embeddings 8, local_embeddings 1, llm 6, extractive
    # 4, python 1, openai 9, http 5. The gates' range, [0, 1], is checked with their keys
    # against the run's metrics (runner.scoring.gates.check_gate_config; tests/bad_inputs
    # "gate above 1").
    assert len(found) == 61
    from runner.reports.compare import _parser

    options = {a.dest: a.type for a in _parser()._actions
               if a.type in (int, float) or isinstance(a.type, Range)}
    assert sorted(options) == ["confidence", "max_drop", "max_new_errors", "resamples", "seed",
                               "timeout", "top"]
    assert all(isinstance(kind, Range) for kind in options.values())


@pytest.mark.parametrize(("constraint", "value", "problem"), [
    (Range(low=0, integer=True), 2**63 - 1, None),
    (Range(low=0, integer=True), 2**63, f"must be an integer >= 0, got {2**63}"),
    (Range(low=0), float("inf"), "must be a number >= 0, got inf"),
    (Range(0, 120, unit="seconds"), 121, "must be a number of seconds in [0, 120], got 121"),
    (Range(0, 1_000_000, integer=True), -1, "must be an integer in [0, 1000000], got -1"),
])
def test_no_setting_holds_a_number_no_code_can_use(constraint: Range, value: object,
                                                   problem: str | None) -> None:
    assert constraint.problem(value) == problem


def test_a_plugin_built_in_python_is_checked_like_its_config() -> None:
    with pytest.raises(RagciteError) as exc:
        LlmMatcher(openai_api_key="k", timeout=0).check()
    assert str(exc.value) == "matcher.timeout: must be a number of seconds in (0, 86400], got 0"
    with pytest.raises(RagciteError) as exc:
        ExtractiveModel(min_score=float("nan")).check()
    assert str(exc.value) == "model.min_score: must be a number, got nan"

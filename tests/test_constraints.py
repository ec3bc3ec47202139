"""What a config key allows (runner/constraints.py) and the config check that applies it
(runner/config_check.py), in-process on the real composed config."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from omegaconf import DictConfig

from runner.config_check import check_config
from runner.constraints import OneOf, Range
from runner.errors import RagciteError


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
     "expected_sources, citations, answer, metadata"),
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

"""The config groups: every option composes and instantiates; Hydra rejects typos by full key."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, ValidationError

from runner.adapters.base import ModelAdapter
from runner.data.dataset import Dataset
from runner.matchers.base import Matcher
from runner.matchers.ngram import NgramMatcher
from runner.matchers.substring import SubstringMatcher
from tests.conftest import options
from tests.helpers import FIXTURES

GROUPS = ("dataset", "model", "matcher", "threshold", "scoring", "tracking", "report", "sweep")
# Options that need a value the user must give, supplied here.
REQUIRED = {
    ("dataset", "file"): [f"dataset.path={FIXTURES / 'seed_examples.jsonl'}"],
    **{("dataset", tool): [f"dataset.path={FIXTURES.parent / 'data' / tool / name}"]
       for tool, name in (("ragas", "samples.jsonl"), ("alce", "result.json"),
                          ("langchain", "outputs.jsonl"))},
    ("model", "python"): ["model.function=tests.test_config.echo_model"],
    ("model", "http"): ["model.url=http://127.0.0.1:9/rag"],
}
# Options that talk to a server: composed and instantiated with a dummy key, never called.
SERVER_OPTIONS = {("matcher", "embeddings"), ("matcher", "llm"), ("model", "openai"),
                  ("model", "http")}


def echo_model(case):  # pragma: no cover - only instantiated here
    """A python-adapter target: cites the first reference verbatim."""
    return {"answer": "", "citations": [r.model_dump() for r in case.references[:1]]}


def test_every_group_has_options() -> None:
    for group in GROUPS:
        assert options(group), group


@pytest.mark.parametrize("group,option", [(g, o) for g in GROUPS for o in options(g)])
def test_every_option_composes_and_instantiates(compose_cfg, group: str, option: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    if (group, option) in SERVER_OPTIONS:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    cfg = compose_cfg(f"{group}={option}", *REQUIRED.get((group, option), []))
    # Every interpolation resolves and every mandatory value is set.
    OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    if group == "matcher":
        matcher = instantiate(cfg.matcher)
        assert isinstance(matcher, Matcher)
        assert "threshold" not in cfg.matcher  # a setting of scoring, not of the matcher
    elif group == "model":
        assert isinstance(instantiate(cfg.model), ModelAdapter)
    elif group == "dataset":
        dataset = Dataset(cfg.dataset)
        assert dataset.name == option
        first = next(iter(dataset.iter_cases()))
        assert first.id


def test_defaults(compose_cfg) -> None:
    cfg = compose_cfg()
    assert cfg.dataset.name == "demo"
    assert cfg.model._target_ == "runner.adapters.extractive.ExtractiveModel"
    assert instantiate(cfg.matcher) == NgramMatcher()
    assert cfg.scoring.zero_division == "auto"


def _thresholds(cfg) -> list[tuple[float, str | None]]:  # type: ignore[no-untyped-def]
    from runner.scoring.thresholds import resolve_thresholds

    matcher = instantiate(cfg.matcher)
    spec = OmegaConf.to_container(cfg.scoring)["threshold"]  # type: ignore[index]
    return [(t.value, t.level) for t in resolve_thresholds(spec, matcher.levels,
                                                            matcher.similarity_range)]


@pytest.mark.parametrize("level,matcher,expected", [
    ("strict", "ngram", 0.75), ("default", "ngram", 0.5), ("lenient", "ngram", 0.3),
    ("strict", "substring", 1.0), ("lenient", "substring", 1.0),
])
def test_threshold_levels_per_matcher(compose_cfg, level: str, matcher: str,
                                      expected: float) -> None:
    cfg = compose_cfg(f"matcher={matcher}", f"threshold={level}")
    assert cfg.scoring.threshold == level
    assert _thresholds(cfg) == [(expected, level)]


def test_numeric_threshold_overrides_the_level(compose_cfg) -> None:
    cfg = compose_cfg("threshold=strict", "scoring.threshold=0.4")
    assert _thresholds(cfg) == [(0.4, None)]
    cfg = compose_cfg("scoring.threshold=[0.4,strict,lenient]")
    assert _thresholds(cfg) == [(0.4, None), (0.75, "strict"), (0.3, "lenient")]


def test_the_default_is_the_default_level(compose_cfg) -> None:
    cfg = compose_cfg()
    assert cfg.scoring.threshold == "default"
    assert _thresholds(cfg) == [(0.5, "default")]


def test_the_old_spelling_of_the_threshold_is_read_as_the_canonical_key() -> None:
    from runner.cli import canonical_args

    assert canonical_args(["-m", "matcher.threshold=0.3,0.5", "threshold=0.4", "threshold=strict",
                           "threshold=[0.2,0.4]", "matcher=ngram"]) == [
        "-m", "scoring.threshold=0.3,0.5", "scoring.threshold=0.4", "threshold=strict",
        "scoring.threshold=[0.2,0.4]", "matcher=ngram"]
    # NaN and infinities are numbers too (refused later as a threshold, with the key); -m may
    # come after an override (Hydra's parser wants it first).
    assert canonical_args(["threshold=nan", "-m", "threshold=-inf", "--multirun"]) == [
        "-m", "--multirun", "scoring.threshold=nan", "scoring.threshold=-inf"]


def test_typo_key_is_rejected_with_full_key(compose_cfg) -> None:
    with pytest.raises(ConfigCompositionException) as info:
        compose_cfg("matcher.nn=2")
    cause = info.value.__cause__
    assert isinstance(cause, (ConfigKeyError, ConfigAttributeError))
    assert "Key 'nn' not in 'NgramMatcherConf'" in str(cause)
    assert "full_key: matcher.nn" in str(cause)


def test_typo_in_scoring_is_rejected(compose_cfg) -> None:
    with pytest.raises(ConfigCompositionException) as info:
        compose_cfg("scoring.zero_divison=nan")
    assert "full_key: scoring.zero_divison" in str(info.value.__cause__)


def test_wrong_type_is_rejected_with_full_key(compose_cfg) -> None:
    with pytest.raises(ConfigCompositionException) as info:
        compose_cfg("matcher.n=abc")
    cause = info.value.__cause__
    assert isinstance(cause, ValidationError)
    assert "Value 'abc' of type 'str' could not be converted to Integer" in str(cause)
    assert "full_key: matcher.n" in str(cause)


def test_unknown_option_is_rejected(compose_cfg) -> None:
    with pytest.raises(ConfigCompositionException) as info:
        compose_cfg("matcher=fuzzy")
    assert "Could not find 'matcher/fuzzy'" in str(info.value)


def test_user_class_plugs_in_through_target() -> None:
    node = OmegaConf.create({"_target_": "runner.matchers.substring.SubstringMatcher",
                             "normalize": False})
    matcher = instantiate(node)
    assert isinstance(matcher, SubstringMatcher) and matcher.normalize is False


def test_yaml_files_hold_values_only() -> None:
    # Schemas live in code: every option YAML of a plug-in group starts from its schema.
    conf = Path(__file__).resolve().parent.parent / "conf"
    for group in ("dataset", "model", "matcher", "scoring", "tracking", "report"):
        for path in (conf / group).glob("*.yaml"):
            text = path.read_text(encoding="utf-8")
            assert "/schema/" in text, f"{path} does not start from a schema"


def test_a_plugin_option_is_typed_by_the_class_it_names() -> None:
    # No list of schemas is kept by hand: each option naming a `_target_` class starts from the
    # schema derived from that class (its settings, their types, defaults and ranges).
    import dataclasses

    import yaml
    from hydra.core.config_store import ConfigStore

    from runner.config.schema import register_configs

    register_configs()
    repo = ConfigStore.instance().repo["schema"]
    conf = Path(__file__).resolve().parent.parent / "conf"
    seen = {}
    for group in ("matcher", "model", "tracking", "report"):
        for path in sorted((conf / group).glob("*.yaml")):
            target = yaml.safe_load(path.read_text(encoding="utf-8"))["_target_"]
            node = repo[group][path.name].node
            assert node["_target_"] == target, path
            seen[f"{group}/{path.stem}"] = [f.name for f in dataclasses.fields(
                OmegaConf.get_type(node)) if f.name != "_target_"]
    assert len(seen) == 16  # matcher 6, model 5, tracking 2, report 3 (html, none, calibration)
    assert seen["matcher/ngram"] == ["n", "tokenizer", "threads", "kernel"]
    # locate: ngram's settings (its fallback), its knowledge base, and Hydra's _recursive_ off
    # (the sections' transforms are built by their loader, not by Hydra).
    assert seen["matcher/locate"] == ["n", "tokenizer", "threads", "kernel", "knowledge_base",
                                      "_recursive_"]
    assert seen["tracking/none"] == [] and seen["report/none"] == []
    assert seen["tracking/mlflow"] == ["tracking_uri", "artifact_location", "required",
                                       "timeout_s", "log_table", "table_rows", "ui_url", "tags"]

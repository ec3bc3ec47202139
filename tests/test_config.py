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
        assert isinstance(matcher.threshold, float)
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
    matcher = instantiate(cfg.matcher)
    # The default level gives each matcher its class default.
    assert matcher == NgramMatcher()
    assert cfg.scoring.zero_division == "auto"


@pytest.mark.parametrize("level,matcher,expected", [
    ("strict", "ngram", 0.75), ("default", "ngram", 0.5), ("lenient", "ngram", 0.3),
    ("strict", "substring", 1.0), ("lenient", "substring", 1.0),
])
def test_threshold_levels_per_matcher(compose_cfg, level: str, matcher: str,
                                      expected: float) -> None:
    cfg = compose_cfg(f"matcher={matcher}", f"threshold={level}")
    assert instantiate(cfg.matcher).threshold == expected


def test_numeric_threshold_overrides_the_level(compose_cfg) -> None:
    cfg = compose_cfg("threshold=strict", "matcher.threshold=0.4")
    assert instantiate(cfg.matcher).threshold == 0.4


def test_default_level_equals_class_defaults(compose_cfg) -> None:
    # A default lives in the class; threshold/default.yaml must agree with it.
    for name, cls in (("ngram", NgramMatcher), ("substring", SubstringMatcher)):
        cfg = compose_cfg(f"matcher={name}")
        assert cfg.matcher.threshold == cls().threshold


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


def test_user_class_plugs_in_through_target(compose_cfg) -> None:
    cfg = compose_cfg("matcher=ngram")
    node = OmegaConf.create({"_target_": "runner.matchers.substring.SubstringMatcher",
                             "threshold": cfg.matcher.threshold})
    matcher = instantiate(node)
    assert isinstance(matcher, SubstringMatcher) and matcher.threshold == 0.5


def test_yaml_files_hold_values_only() -> None:
    # Schemas live in code: every option YAML of a plug-in group starts from its schema.
    conf = Path(__file__).resolve().parent.parent / "conf"
    for group in ("dataset", "model", "matcher", "threshold", "scoring", "tracking", "report"):
        for path in (conf / group).glob("*.yaml"):
            text = path.read_text(encoding="utf-8")
            assert "/schema/" in text, f"{path} does not start from a schema"

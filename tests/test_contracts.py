"""The plug-in contracts: every option of conf/matcher and conf/model implements the whole
protocol the runner uses (runner.matchers.base.Matcher and the optional protocols it declares,
runner.adapters.base.ModelAdapter)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from hydra.utils import instantiate

from runner.adapters.base import ModelAdapter
from runner.matchers.base import (
    LEVELS,
    Checked,
    FastPath,
    Local,
    Matcher,
    Metered,
    OwnCache,
    for_workload,
    similarity_range,
)
from tests.conftest import options
from tests.test_config import REQUIRED, SERVER_OPTIONS

ADAPTER_MEMBERS = ("identity", "bind", "respond", "check", "usage")


def _build(compose_cfg: Any, group: str, option: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    if (group, option) in SERVER_OPTIONS:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    cfg = compose_cfg(f"{group}={option}", *REQUIRED.get((group, option), []))
    try:
        return instantiate(cfg[group], _convert_="all")
    except Exception as exc:  # an optional extra that is not installed
        if "pip install" in str(exc) or isinstance(exc.__cause__, ImportError):
            pytest.skip(f"{option}: {exc}")
        raise


@pytest.mark.parametrize("option", options("matcher"))
def test_every_matcher_implements_the_whole_protocol(compose_cfg, option: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    matcher = _build(compose_cfg, "matcher", option, monkeypatch)
    assert isinstance(matcher, Matcher)
    low, high = similarity_range(matcher)
    assert low < high
    assert tuple(matcher.levels) == LEVELS
    assert all(low <= v <= high for v in matcher.levels.values())
    assert matcher.levels["strict"] >= matcher.levels["default"] >= matcher.levels["lenient"]
    assert "threshold" not in matcher.identity()  # a matcher carries no threshold
    assert isinstance(for_workload(matcher, 10, 2), Matcher)
    try:  # a matcher with settings to refuse before any work (its ranges: when built)
        if isinstance(matcher, Checked):
            matcher.check()  # with a key set, nothing to refuse
    except Exception as exc:
        assert "pip install" in str(exc)  # an optional extra that is not installed
        assert option == "local_embeddings"
    # The API matchers count their usage and keep their own caches; the local ones do neither.
    assert isinstance(matcher, Metered) is isinstance(matcher, OwnCache) is (
        not isinstance(matcher, Local))
    if isinstance(matcher, Metered):
        assert isinstance(matcher.usage(), dict)
    if isinstance(matcher, FastPath):  # its fast path agrees with its pairs
        texts = ["the cat sat on the mat", "the cat sat"]
        fast = matcher.similarity_array(texts, np.array([0]), np.array([1]))
        slow = matcher.similarities([(texts[0], texts[1])])
        assert fast is None or fast.tolist() == slow


@pytest.mark.parametrize("option", options("model"))
def test_every_adapter_implements_the_whole_protocol(compose_cfg, option: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = _build(compose_cfg, "model", option, monkeypatch)
    assert isinstance(adapter, ModelAdapter)
    for name in ADAPTER_MEMBERS:
        assert callable(getattr(adapter, name)), name
    assert inspect.iscoroutinefunction(adapter.respond)
    assert isinstance(adapter.cacheable, bool)
    assert isinstance(adapter.identity(), dict)
    usage = adapter.usage()
    assert usage is None or isinstance(usage, dict)

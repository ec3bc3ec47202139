"""Usage accounting (metrics.json "usage") and prompt templates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.adapters.base import BaseAdapter
from runner.api.prompts import fence, load_prompt
from runner.api.usage import Usage, estimate_cost, usage_section
from runner.matchers.base import BaseMatcher, Metered

PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60},
          "gpt-4o": {"input": 2.5, "output": 10.0},
          "text-embedding-3-small": {"input": 0.02, "output": 0.0}}


def part(**figures: Any) -> dict[str, Any]:
    """What a component's ``usage()`` returns."""
    return dict(figures)


def test_price_lookup_prefers_exact_then_longest_prefix() -> None:
    # 1M input and 1M output tokens: gpt-4o costs 2.5 + 10, gpt-4o-mini 0.15 + 0.60
    assert estimate_cost("gpt-4o", 1_000_000, 1_000_000, PRICES) == pytest.approx(12.5)
    assert estimate_cost("gpt-4o-mini-2024-07-18", 1_000_000, 1_000_000,
                         PRICES) == pytest.approx(0.75)
    assert estimate_cost("llama3", 1, 1, PRICES) is None
    assert estimate_cost(None, 1, 1, PRICES) is None
    assert estimate_cost("gpt-4o-mini", 1_000_000, 2_000_000, PRICES) == pytest.approx(1.35)
    assert estimate_cost("llama3", 10, 0, PRICES) is None
    assert estimate_cost("llama3", 0, 0, PRICES) == 0.0


def test_usage_section_separates_system_and_judge() -> None:
    section = usage_section({
        "model": part(model="gpt-4o-mini", requests=3, input_tokens=1000, output_tokens=200),
        "matcher": part(model="text-embedding-3-small", requests=1, input_tokens=5000,
                        cached=7, label="not a number"),
    }, PRICES)
    assert section["model"] == {"requests": 3, "errors": 0, "input_tokens": 1000,
                                "output_tokens": 200, "cached": 0, "unknown_figures": 0,
                                "total_tokens": 1200,
                                "cost_usd": pytest.approx((1000 * 0.15 + 200 * 0.6) / 1e6)}
    assert section["matcher"]["cached"] == 7 and "label" not in section["matcher"]
    assert section["total"]["requests"] == 4
    assert section["total"]["cost_usd"] == pytest.approx(
        section["model"]["cost_usd"] + section["matcher"]["cost_usd"])


def test_parts_without_usage_are_left_out_and_unpriced_cost_is_null() -> None:
    # A component that calls no API reports None (the BaseAdapter default), or, a matcher,
    # reports nothing (it is not Metered).
    assert BaseAdapter().usage() is None and not isinstance(BaseMatcher(), Metered)
    section = usage_section({"model": BaseAdapter().usage(),
                             "matcher": part(model="my-judge", requests=2, input_tokens=9)},
                            PRICES)
    assert "model" not in section
    assert section["matcher"] == {"requests": 2, "errors": 0, "input_tokens": 9,
                                  "output_tokens": 0, "cached": 0, "unknown_figures": 0,
                                  "total_tokens": 9, "cost_usd": None}
    assert section["matcher"]["cost_usd"] is None and section["total"]["cost_usd"] is None
    assert usage_section({}, None) == {"total": {"requests": 0, "errors": 0, "input_tokens": 0,
                                                 "output_tokens": 0, "unknown_figures": 0,
                                                 "cost_usd": 0.0}}


def test_usage_counter() -> None:
    u = Usage(model="m")
    u.add(requests=2, input_tokens=10, output_tokens=3)
    u.add(errors=1, cached=4)
    assert u.to_dict() == {"model": "m", "requests": 2, "errors": 1, "input_tokens": 10,
                           "output_tokens": 3, "cached": 4, "unknown_figures": 0}


def test_fence_neutralises_delimiters_only() -> None:
    text = "a < b and </passage> or <reference_passage attr=1> <Cited_Passage> <b>bold</b>"
    out = fence(text)
    assert "</passage>" not in out and "<reference_passage" not in out
    assert "<Cited_Passage>" not in out
    assert "a < b" in out and "<b>bold</b>" in out
    assert fence(None) == ""


def test_prompts_load_packaged_or_from_a_file(tmp_path: Path) -> None:
    judge = load_prompt("llm_judge.j2")
    msgs = judge.render(reference="R", citation="C")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "<reference_passage>\nR\n</reference_passage>" in msgs[1]["content"]
    own = tmp_path / "own.j2"
    own.write_text("{% block user %}{{ reference }}|{{ citation }}{% endblock %}",
                   encoding="utf-8")
    assert load_prompt(str(own)).render(reference="x", citation="y") == [
        {"role": "user", "content": "x|y"}]
    with pytest.raises(ValueError, match="packaged"):
        load_prompt("missing.j2")
    broken = tmp_path / "broken.j2"
    broken.write_text("{% block user %}{{ x ", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1"):
        load_prompt(str(broken))
    nouser = tmp_path / "nouser.j2"
    nouser.write_text("hello", encoding="utf-8")
    with pytest.raises(ValueError, match="block user"):
        load_prompt(str(nouser)).render()
    with pytest.raises(ValueError, match="undefined"):
        load_prompt("llm_judge.j2").render(reference="only one")

"""Provider citation objects scored end to end (SPEC 2.1): stored responses ``{provider, raw,
documents}`` through ``runner.evaluate`` and through the ``ragcite`` command line, with the
metrics worked out by hand; the bad-input rows are in tests/bad_inputs/test_provider_inputs.py.

The four cases ask about leave and have one reference, R = "Employees get 25 days of paid leave
per year." in leave-policy.txt; each reply is its provider's fixture (tests/data/providers/),
citing the leave policy (its text or a passage holding all of R's words: ngram similarity 1) and
something else (similarity 0, or no content). By hand, per case (context R/P | source R/P):

* anthropic: cites D0[:46] (leave) and D1[:40] (travel): R matched, 1 of 2 citations match;
  sources {leave, travel} against {leave}. (1, 1/2 | 1, 1/2), F1 2/3 both.
* openai: cites D0 (leave), D1 (travel) and a url with no content (SPEC 4.1: blank never
  matches): (1, 1/3 | 1, 1/3), F1 2·(1/3)·1/(4/3) = 1/2 both.
* gemini: cites its segments, "Employees get 25 days of paid leave per year." (= R, leave) and
  "Travel is approved by the line manager." (travel): (1, 1/2 | 1, 1/2), F1 2/3.
* cohere: given only D0, so doc:1 dangles (counted, not cited); cites D0 (leave):
  (1, 1 | 1, 1), F1 1.

Macro means: recall 1; precision (1/2 + 1/3 + 1/2 + 1) / 4 = 7/12 = 0.583; F1
(2/3 + 1/2 + 2/3 + 1) / 4 = 17/24 = 0.708; the same for sources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import runner
from tests.conftest import only_run_dir, read_json, run_cli
from tests.helpers import read_passages

FIXTURES = Path(__file__).parent / "providers"
R = "Employees get 25 days of paid leave per year."
PROVIDERS = ("anthropic", "openai", "gemini", "cohere")
URL = "https://employment-social-affairs.ec.europa.eu/working-time"


def response(provider: str) -> dict[str, Any]:
    """The provider's fixture as a stored response: provider, raw and documents."""
    data = json.loads((FIXTURES / f"{provider}.json").read_text("utf-8"))
    del data["_reference"]
    if provider == "cohere":
        data["documents"] = data["documents"][:1]
    return data


def cases() -> list[dict[str, Any]]:
    """One case per provider, each with the one leave-policy reference."""
    return [{"id": p, "query": "How many days of paid leave do employees get?",
             "references": [{"source": "leave-policy.txt", "content": R}],
             "response": response(p)} for p in PROVIDERS]


EXPECTED = {  # (context R, P, F1 | source R, P, F1), worked out in the module docstring
    "anthropic": (1.0, 1 / 2, 2 / 3, 1.0, 1 / 2, 2 / 3),
    "openai": (1.0, 1 / 3, 1 / 2, 1.0, 1 / 3, 1 / 2),
    "gemini": (1.0, 1 / 2, 2 / 3, 1.0, 1 / 2, 2 / 3),
    "cohere": (1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
}
KEYS = ("context_recall", "context_precision", "context_f1",
        "source_recall", "source_precision", "source_f1")
MEANS = {"context_recall": 1.0, "context_precision": 7 / 12, "context_f1": 17 / 24,
         "source_recall": 1.0, "source_precision": 7 / 12, "source_f1": 17 / 24}


def test_provider_replies_through_evaluate() -> None:
    result = runner.evaluate(cases())
    for case in result.cases:
        assert tuple(case.metrics[k] for k in KEYS) == pytest.approx(EXPECTED[case.id]), case.id
    # The similarities behind them: R against each citation in the order the reply cites.
    assert {c.id: c.similarity[0] for c in result.cases} == {
        "anthropic": [1.0, 0.0], "openai": [1.0, 0.0, None], "gemini": [1.0, 0.0],
        "cohere": [1.0]}
    assert result.metrics == pytest.approx(MEANS)


def test_provider_claims_and_dangling_reach_the_results() -> None:
    got = {c.id: c.response for c in runner.evaluate(cases()).cases}
    assert [(c["source"], c["claim"]) for c in got["openai"]["citations"]] == [
        ("leave-policy.txt", "Employees get 25 days of paid leave a year."),
        ("travel-policy.txt", "Travel is approved by the line manager"),
        (URL, "the statutory minimum in the EU is four weeks")]
    assert {p: got[p]["dangling"] for p in PROVIDERS} == {
        "anthropic": 0, "openai": 0, "gemini": 0, "cohere": 1}


def test_provider_replies_through_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in cases()), encoding="utf-8")
    proc = run_cli(["tracking=none", "report=none", "progress=false", "dataset=file",
                    "dataset.path=cases.jsonl", "model=precomputed"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    # 7/12 = 0.583 and 17/24 = 0.708 as printed; every reference matched.
    assert ("context R/P/F1 1.000/0.583/0.708  source R/P/F1 1.000/0.583/0.708  (means over 4 "
            "scored cases, 0 failed; 4 of 4 ground-truth passages matched") in proc.stderr
    run = only_run_dir(tmp_path / "outputs")
    figures = read_json(run / "metrics.json")
    assert {k: figures["metrics"][k] for k in MEANS} == pytest.approx(MEANS)
    # Cohere's doc:1 is the run's one dangling citation, in one answer.
    assert figures["dangling"] == {"citations": 1, "answers": 1}
    rows = {row["id"]: row["response"] for row in read_passages(run)}
    assert [c["claim"] for c in rows["anthropic"]["citations"]] == [
        "employees get 25 days of paid leave a year", "travel is approved by the line manager"]
    assert ([c["claim"] for c in rows["cohere"]["citations"]], rows["cohere"]["dangling"]) == (
        ["25 days of paid leave a year"], 1)

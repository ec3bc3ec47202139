"""`runner.evaluate` (SPEC 8): the public API end to end, without Hydra."""

from __future__ import annotations

import doctest
import importlib
import json
import re

import pytest

import runner
from runner.data.models import Citation, Response
from runner.errors import RagciteError
from runner.evaluate import matcher_from_name
from runner.matchers import NgramMatcher, PairError, SubstringMatcher
from runner.scoring.metrics import METRIC_KEYS
from tests.conftest import REPO
from tests.helpers import (
    ENCRYPTION,
    PERSONAL_DEVICES,
    REMOTE_REQUEST,
    SEED_FILE,
    TRAINING,
    VPN,
    TableMatcher,
    case,
    seed_example_1,
    seed_example_3,
)

# `runner.evaluate` is the function; the module is reached through importlib.
evaluate_module = importlib.import_module("runner.evaluate")

SEED_EXPECTED = {
    # (context recall, precision, F1 | source recall, precision, F1), from the seed.
    "seed-1": (1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
    "seed-2": (0.0, 0.0, 0.0, 1.0, 1.0, 1.0),
    "seed-3": (1 / 3, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 2 / 3),
}


@pytest.mark.parametrize("matcher", ["ngram", "substring"])
def test_seed_examples_from_file(matcher: str) -> None:
    result = runner.evaluate(runner.load_cases(SEED_FILE), matcher=matcher)
    for c in result.cases:
        got = tuple(c.metrics[k] for k in METRIC_KEYS)
        assert got == pytest.approx(SEED_EXPECTED[c.id], rel=1e-15)
        # Recall and precision are exact fractions, not just close.
        assert c.metrics["context_recall"] == SEED_EXPECTED[c.id][0]
        assert c.metrics["source_precision"] == SEED_EXPECTED[c.id][4]
    # Rounded as the seed prints them: (0.33, 0.33 | 0.67, 0.67).
    third = result.cases[2].metrics
    assert [round(third[k], 2) for k in ("context_recall", "context_precision",  # type: ignore[arg-type]
                                         "source_recall", "source_precision")] == [
        0.33, 0.33, 0.67, 0.67]
    # Macro means over the three cases: context (1 + 0 + 1/3) / 3 = 4/9,
    # source (1 + 1 + 2/3) / 3 = 8/9.
    assert result.metrics["context_recall"] == pytest.approx(4 / 9, rel=1e-15)
    assert result.metrics["context_precision"] == pytest.approx(4 / 9, rel=1e-15)
    assert result.metrics["source_recall"] == pytest.approx(8 / 9, rel=1e-15)
    assert result.metrics["source_precision"] == pytest.approx(8 / 9, rel=1e-15)
    # Micro: refs (1 + 0 + 1) / (1 + 1 + 3) = 2/5; sources (1 + 1 + 2) / (1 + 1 + 3) = 4/5.
    assert result.micro["context_recall"] == 2 / 5
    assert result.micro["source_recall"] == 4 / 5
    assert (result.n_cases, result.n_scored, result.n_errors) == (3, 3, 0)
    assert result.cases[2].explanations["context_recall"] == (
        "Only the Data Security Policy.pdf passage matches its ground-truth reference (1 of 3). "
        "The Remote Work Policy.pdf citation uses a wrong passage, and Acceptable Use Policy.pdf "
        "is not cited at all.")


def test_matcher_instance_and_threshold() -> None:
    # Paraphrase similarity 6/14 = 3/7 ~ 0.43 (see test_ngram): below 0.5, above 0.4.
    cit = ("Employees must submit a remote work request at least five business days before the "
           "start date.")
    c = case([("A", REMOTE_REQUEST)], [("A", cit)])
    matcher = NgramMatcher()
    # No threshold: the matcher's default level, 0.5 for ngram.
    assert runner.evaluate([c], matcher=matcher).metrics["context_recall"] == 0.0
    assert runner.evaluate([c], matcher=matcher, threshold=0.4).metrics["context_recall"] == 1.0
    assert runner.evaluate([c], matcher=matcher, threshold=3 / 7).cases[0].matched == [[True]]
    # Levels are the matcher's own values: ngram lenient 0.3 matches, strict 0.75 does not.
    assert runner.evaluate([c], threshold="lenient").cases[0].matched == [[True]]
    assert runner.evaluate([c], threshold="strict").extra["threshold"] == {
        "value": 0.75, "level": "strict", "index": 0}


def test_chinese_and_japanese_quotes_match_with_the_default_matcher() -> None:
    # tests/matchers/test_ngram.py works these out: a truncated Chinese quote 6/6 trigrams, an
    # elided Japanese one 8/8, another Chinese sentence 1/10 of its trigrams.
    zh, ja = "城市的公共图书馆每天早上九点开门。", "市立図書館は午前九時から開いています。"
    cits = [("A", "公共图书馆每天早"), ("B", "市立図書館は. . .開いています"),
            ("A", "图书馆二楼设有儿童阅览区。")]
    c = case([("A", zh), ("B", ja)], cits)
    result = runner.evaluate([c])
    assert result.cases[0].matched == [[True, False, False], [False, True, False]]
    assert result.metrics["context_recall"] == 1.0
    # Before matcher.tokenizer (words): each sentence is one token, and nothing matches.
    words = runner.evaluate([c], matcher=NgramMatcher(tokenizer="words"))
    assert words.metrics["context_recall"] == 0.0


def test_several_thresholds_from_one_pass_equal_single_runs() -> None:
    cit = ("Employees must submit a remote work request at least five business days before the "
           "start date.")
    cases = [*runner.load_cases(SEED_FILE), case([("A", REMOTE_REQUEST)], [("A", cit)], id="p")]
    several = runner.evaluate(cases, thresholds=[0.3, "default", 0.9], bootstrap_resamples=50)
    assert list(several) == [0.3, 0.5, 0.9]  # by threshold value, in order
    assert [r.extra["threshold"]["value"] for r in several.values()] == [0.3, 0.5, 0.9]
    for t, result in several.items():
        alone = runner.evaluate(cases, threshold=t, bootstrap_resamples=50)
        assert result.cases == alone.cases
        assert (result.metrics, result.ci, result.micro, result.labels) == (
            alone.metrics, alone.ci, alone.micro, alone.labels)
    # The paraphrase (3/7) matches at 0.3 only.
    assert [r.cases[3].matched for r in several.values()] == [[[True]], [[False]], [[False]]]
    frame = several.to_pandas()
    assert frame["threshold"].tolist() == [0.3] * 4 + [0.5] * 4 + [0.9] * 4
    assert frame["references_matched"].tolist()[3::4] == [1, 0, 0]


@pytest.mark.parametrize(("threshold", "message"), [
    (1.5, "scoring.threshold: 1.5 is outside [0, 1], the similarities this matcher gives"),
    (float("nan"), "scoring.threshold: nan is not a number; give one in [0, 1], the "
                   "similarities this matcher gives"),
    ("loose", "scoring.threshold: 'loose' is neither a number nor a level (strict, default, "
              "lenient)"),
])
def test_bad_thresholds_are_refused(threshold: object, message: str) -> None:
    with pytest.raises(RagciteError) as exc:
        runner.evaluate([seed_example_1()], threshold=threshold)  # type: ignore[arg-type]
    assert str(exc.value) == message


def test_matcher_from_name() -> None:
    assert isinstance(matcher_from_name("ngram"), NgramMatcher)
    assert matcher_from_name("ngram", n=2) == NgramMatcher(n=2)
    assert isinstance(matcher_from_name("substring"), SubstringMatcher)
    with pytest.raises(ValueError) as exc:
        matcher_from_name("fuzzy")
    assert str(exc.value) == ("unknown matcher 'fuzzy': expected a module runner.matchers.fuzzy "
                              "with a class FuzzyMatcher")
    # The module exists but has no TextMatcher class.
    with pytest.raises(ValueError, match="unknown matcher 'text'"):
        matcher_from_name("text")
    # `base` holds the abstract BaseMatcher, which scores nothing.
    with pytest.raises(ValueError, match="unknown matcher 'base'"):
        matcher_from_name("base")


def test_responses_mapping_replaces_stored_responses() -> None:
    c1, c3 = seed_example_1(), seed_example_3()
    # Case 1 gets a response citing nothing; case 3 has no entry -> an error case.
    result = runner.evaluate([c1, c3], responses={"seed-1": Response()})
    first, third = result.cases
    # No citations, 1 reference: recall 0/1; precision 0.0 (auto: something was expected).
    assert (first.metrics["context_recall"], first.metrics["context_precision"]) == (0.0, 0.0)
    assert third.error == "no response for this case"
    assert (result.n_scored, result.n_errors) == (1, 1)


def test_a_case_without_response_among_answered_ones_is_an_error_case() -> None:
    result = runner.evaluate([seed_example_1(), case([("A", "x")], None)])
    assert result.cases[1].error == "no response for this case"
    assert (result.n_scored, result.n_errors) == (1, 1)
    assert result.metrics == dict.fromkeys(METRIC_KEYS, 1.0)


NO_RESPONSE = ("nothing to score: no case has a 'response' (2 cases); store one in each case, "
               "'response': {'answer': ..., 'citations': [{'source': ..., 'content': ...}]}, "
               "or pass responses={case id: response}")


@pytest.mark.parametrize("stream", [False, True])
def test_cases_without_any_response_are_refused_not_six_nones(stream: bool) -> None:
    cases = [case([("A", "x")], None, id="a"), case([("A", "y")], None, id="b")]
    with pytest.raises(RagciteError) as err:
        runner.evaluate(iter(cases) if stream else cases)
    assert str(err.value) == NO_RESPONSE


def test_responses_that_match_no_case_id_are_refused() -> None:
    with pytest.raises(RagciteError) as err:
        runner.evaluate([seed_example_1()], responses={"seed-one": Response()})
    assert str(err.value) == (
        "nothing to score: no case id is a key of responses= (1 case, the first 'seed-1'); "
        "key it by case id, e.g. responses={'seed-1': {'answer': ..., 'citations': [...]}}")


def seed_3_dict() -> dict[str, object]:
    """Seed example 3 as a plain dict in the canonical shape (no id, no expected_sources)."""
    return {
        "query": "What security rules apply when working remotely?",
        "references": [{"source": "Data Security Policy.pdf", "content": VPN},
                       {"source": "Remote Work Policy.pdf", "content": ENCRYPTION},
                       {"source": "Acceptable Use Policy.pdf", "content": PERSONAL_DEVICES}],
        "response": {"answer": "Use the VPN.", "citations": [
            {"source": "Data Security Policy.pdf", "content": VPN},
            {"source": "Remote Work Policy.pdf", "content": REMOTE_REQUEST},
            {"source": "IT Compliance Handbook.pdf", "content": TRAINING}]},
    }


@pytest.mark.parametrize("stream", [False, True])
def test_plain_dicts_score_as_cases(stream: bool) -> None:
    items = [seed_example_1(), seed_3_dict()]
    result = runner.evaluate((i for i in items) if stream else items)
    # A dict without id gets its 1-based position; expected_sources default to the references'.
    assert [c.id for c in result.cases] == ["seed-1", "2"]
    assert tuple(result.cases[1].metrics[k] for k in METRIC_KEYS) == pytest.approx(
        SEED_EXPECTED["seed-3"], rel=1e-15)
    assert result.cases[1].labels == {
        "citations": ["supported", "wrong_passage", "unexpected_source"],
        "references": ["cited", "passage_missed", "source_missed"]}
    # Macro context recall (1 + 1/3) / 2 = 2/3; source recall (1 + 2/3) / 2 = 5/6.
    assert result.metrics["context_recall"] == pytest.approx(2 / 3, rel=1e-15)
    assert result.metrics["source_recall"] == pytest.approx(5 / 6, rel=1e-15)


def test_responses_as_dicts_keyed_by_integer_ids() -> None:
    # Integer case ids become text; the responses' integer keys do too.
    cases = [{"id": 7, "query": "q", "references": [{"source": "A", "content": VPN}]}]
    result = runner.evaluate(cases, responses={7: {"citations": [
        {"source": "A", "content": VPN}, {"source": "B", "content": TRAINING}]}})
    assert result.cases[0].id == "7"
    # 1 of 1 reference matched, 1 of 2 citations: (1, 1/2 | 1, 1/2).
    assert [result.cases[0].metrics[k] for k in ("context_recall", "context_precision",
                                                  "source_recall", "source_precision")] == [
        1.0, 0.5, 1.0, 0.5]


GOOD = {"id": "g", "query": "q", "references": [{"source": "A", "content": "x"}],
        "response": {"citations": [{"source": "A", "content": "x"}]}}


@pytest.mark.parametrize(("bad", "message"), [
    ({"id": "b", "query": "q", "references": [{"content": "x"}]},
     "cases[3].references[0].source: required field is missing"),
    ({"id": "b", "query": 3},
     "cases[3].query: Input should be a valid string (got 3)"),
    ({"id": "b", "query": "q", "response": {"citations": [{"source": "A", "content": None}]}},
     "cases[3].response.citations[0].content: Input should be a valid string (got None)"),
    ({"id": "b", "query": "q", "answer": "a"},
     "cases[3].answer: unknown field (put extra data under 'metadata', or use a mapping)"),
    ("b", "cases[3]: expected a runner.Case or a dict ({'id', 'query', 'references', "
          "'response', ...}), got str"),
])
@pytest.mark.parametrize("stream", [False, True])
def test_a_bad_dict_is_refused_with_its_place(bad: object, message: str, stream: bool) -> None:
    items = [GOOD, {**GOOD, "id": "h"}, seed_example_1(), bad]
    with pytest.raises(RagciteError) as err:
        runner.evaluate(iter(items) if stream else items)
    assert str(err.value) == message


def test_responses_as_the_records_of_a_responses_file() -> None:
    # The demo's stored responses file, read as it is: [{"id", "answer", "citations"}, ...].
    path = REPO / "data" / "demo" / "responses" / "mostly_right.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    cases = runner.load_cases(REPO / "data" / "demo" / "cases.jsonl")
    by_list = runner.evaluate(cases, responses=records, bootstrap_resamples=0)
    # The same records keyed by id (each keeps its matching "id") score the same.
    by_id = runner.evaluate(cases, responses={r["id"]: r for r in records},
                            bootstrap_resamples=0)
    # mostly_right's context recall, worked out in tests/data/test_demo_dataset.py: 167/180.
    assert by_list.metrics["context_recall"] == pytest.approx(167 / 180, rel=1e-12)
    assert by_list.metrics == by_id.metrics


@pytest.mark.parametrize(("responses", "message"), [
    ([{"answer": "a"}], "responses[0]: a record of a responses list needs the case 'id' "
                        "({'id', 'answer', 'citations'}), or pass a dict {case id: response}"),
    ({"g": {"id": "h", "citations": []}},
     "responses['g'].id: 'h' is not the case id it is given for ('g')"),
    ({"g": {"citations": [{"content": "x"}]}},
     "responses['g'].citations[0].source: required field is missing"),
    ({"g": ["x"]}, "responses['g']: expected a runner.Response or a dict "
                   "({'answer', 'citations'}), got list"),
])
def test_a_bad_response_dict_is_refused_with_its_key(responses: dict[str, object],
                                                     message: str) -> None:
    with pytest.raises(RagciteError) as err:
        runner.evaluate([GOOD], responses=responses)  # type: ignore[arg-type]
    assert str(err.value) == message


def test_failed_response_and_pair_error_are_excluded() -> None:
    good = case([("A", VPN)], [("A", VPN)], id="good")
    failed = case([("A", VPN)], [("A", VPN)], id="failed", error="rate limited")
    broken = case([("A", VPN)], [("A", "unlucky")], id="broken")
    matcher = TableMatcher(table={(VPN, VPN): 1.0, (VPN, "unlucky"): PairError("HTTP 503")})
    result = runner.evaluate([good, failed, broken], matcher=matcher)
    assert [c.error for c in result.cases] == [
        None, "rate limited", "matcher failed on reference 0 / citation 0: HTTP 503"]
    assert (result.n_cases, result.n_scored, result.n_errors) == (3, 1, 2)
    for c in result.cases[1:]:
        assert c.metrics == dict.fromkeys(METRIC_KEYS)
    # Only the good case counts: every figure 1/1.
    assert result.metrics == dict.fromkeys(METRIC_KEYS, 1.0)
    assert result.micro == dict.fromkeys(METRIC_KEYS, 1.0)
    assert result.labels["citation_supported"] == 1


@pytest.mark.parametrize(("policy", "expected"), [
    ("auto", 1.0), ("nan", None), ("zero", 0.0), ("one", 1.0)])
def test_zero_division_option(policy: str, expected: float | None) -> None:
    result = runner.evaluate([case([], [])], zero_division=policy)
    assert result.cases[0].metrics == dict.fromkeys(METRIC_KEYS, expected)
    assert result.metrics == dict.fromkeys(METRIC_KEYS, expected)


def test_require_same_source_option() -> None:
    c = case([("A", VPN)], [("B", VPN)])
    assert runner.evaluate([c]).metrics["context_recall"] == 1.0
    assert runner.evaluate([c], require_same_source=True).metrics["context_recall"] == 0.0


def test_bands_option() -> None:
    c = seed_example_3()
    assert runner.evaluate([c]).cases[0].bands["source_recall"] == "medium"  # 2/3 < 0.75
    banded = runner.evaluate([c], bands={"green": 0.6, "medium": 0.3})
    assert banded.cases[0].bands["source_recall"] == "green"  # 2/3 >= 0.6
    assert banded.cases[0].bands["context_recall"] == "medium"  # 1/3 >= 0.3


def test_bootstrap_options_are_deterministic() -> None:
    cases = runner.load_cases(SEED_FILE)
    a = runner.evaluate(cases, bootstrap_resamples=250, confidence=0.8, seed=3)
    b = runner.evaluate(cases, bootstrap_resamples=250, confidence=0.8, seed=3)
    assert a.ci == b.ci
    assert a.bootstrap == {"resamples": 250, "confidence": 0.8, "seed": 3,
                           "method": "percentile"}


def test_distinct_pairs_are_scored_once_per_batch() -> None:
    # Two cases quote the same pair; an empty reference needs no similarity at all.
    c1 = case([("A", "alpha"), ("A", "")], [("A", "alpha")], id="1")
    c2 = case([("A", "alpha")], [("A", "alpha"), ("A", "beta")], id="2")
    matcher = TableMatcher(default=1.0)
    runner.evaluate([c1, c2], matcher=matcher)
    assert matcher.calls == [[("alpha", "alpha"), ("alpha", "beta")]]
    # batch_size=1: one call per case.
    matcher = TableMatcher(default=1.0)
    runner.evaluate([c1, c2], matcher=matcher, batch_size=1)
    assert matcher.calls == [[("alpha", "alpha")], [("alpha", "alpha"), ("alpha", "beta")]]


def test_batch_size_does_not_change_results() -> None:
    cases = runner.load_cases(SEED_FILE)
    whole = runner.evaluate(cases, batch_size=10_000)
    single = runner.evaluate(cases, batch_size=1)
    assert whole.metrics == single.metrics
    assert whole.cases == single.cases


def test_batches_of_batch_size_in_order() -> None:
    cases = [case([("A", t)], [("A", t)], id=t) for t in ("alpha", "beta", "gamma")]
    matcher = TableMatcher(default=1.0)
    result = runner.evaluate(cases, matcher=matcher, batch_size=2)
    # Batches of 2 and 1 cases, one matcher call each, in order.
    assert matcher.calls == [[("alpha", "alpha"), ("beta", "beta")], [("gamma", "gamma")]]
    assert [c.id for c in result.cases] == ["alpha", "beta", "gamma"]


def test_accepts_a_generator_of_cases() -> None:
    result = runner.evaluate(runner.iter_cases(SEED_FILE))
    assert result.n_cases == 3


def test_duplicate_citations_through_evaluate() -> None:
    c = case([("A", VPN)], [("A", VPN), ("A", VPN)])
    result = runner.evaluate([c])
    # Both copies match: precision 2/2; counts pool both citations.
    assert result.cases[0].metrics["context_precision"] == 1.0
    assert result.counts["citations"] == 2
    assert result.labels["citation_supported"] == 2


def test_public_api() -> None:
    assert runner.evaluate is evaluate_module.evaluate
    assert runner.Citation is Citation
    for name in runner.__all__:
        assert hasattr(runner, name)


def test_docstring_example() -> None:
    failures, tests = doctest.testmod(evaluate_module, verbose=False)
    assert (failures, tests > 0) == (0, True)


def test_a_run_result_pickles_and_keeps_its_explanations() -> None:
    # Scored cases hold their source normaliser (for explanations written on first read); the
    # whole result still pickles, and a copy writes the same sentences.
    import pickle

    result = runner.evaluate(runner.load_cases(SEED_FILE))
    copy = pickle.loads(pickle.dumps(result))
    assert [c.to_dict() for c in copy.cases] == [c.to_dict() for c in result.cases]
    assert copy.cases[1].explanations == result.cases[1].explanations


def test_the_readme_case_built_in_code_scores() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
                if "cases = [{" in b]
    scope: dict[str, object] = {"runner": runner}
    exec(block, scope)  # the README's example as written: a dict case with its response
    cases = scope["cases"]
    assert runner.evaluate(cases).metrics["context_recall"] == 1.0  # type: ignore[arg-type]
    # "Employees shall submit ..." is a truncated quote of the reference: (1, 1 | 1, 1).
    assert runner.evaluate(cases).cases[0].labels == {"citations": ["supported"],
                                                      "references": ["cited"]}


def test_the_readme_api_example_runs(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)[0]
    monkeypatch.chdir(REPO)  # the example's paths are relative to a checkout
    exec(block, {})
    first, second = capsys.readouterr().out.splitlines()
    # mostly_right at 0.5: context F1 82/90 (tests/data/test_demo_dataset.py).
    assert first.split()[0] == f"{82 / 90:.16g}"
    assert second.startswith("1.0 The only ground-truth passage, from Remote Work Policy.pdf")

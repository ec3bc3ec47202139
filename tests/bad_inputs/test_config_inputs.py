"""Bad config: Hydra's composition errors, keys outside the schema, settings out of range, and
runs that could not score anything. Every row is one line the user sees and its exit status:
2 for a config error (never Hydra's block), 3 when no case could be scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bad_inputs.table import BASE_ARGS, Row, ids, run_row, write_files
from tests.conftest import run_cli


def _jsonl(*records: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


CASES = _jsonl(
    {"id": "a", "query": "q1", "references": [{"source": "D", "content": "alpha beta gamma"}]},
    {"id": "b", "query": "q2", "references": [{"source": "E", "content": "one two three"}]},
)
"""Two cases without stored responses."""
ANSWER_A = {"id": "a", "answer": "A", "citations": [{"source": "D", "content": "alpha beta gamma"}]}
FILES = {
    "cases.jsonl": CASES,
    "empty.jsonl": "",
    "stray.jsonl": _jsonl({**ANSWER_A, "id": "x"}),  # matches no case
    "half.jsonl": _jsonl(ANSWER_A, {**ANSWER_A, "id": "zz"}),  # answers a; zz matches none
    "no_text.jsonl": _jsonl({"source": "D"}),  # a knowledge base record without its text
}
ON_FILE = ["dataset=file", "dataset.path=cases.jsonl", "model=precomputed"]
E = "ragcite: error: "
ROOT_KEYS = ("dataset, model, matcher, scoring, tracking, report, gate, cache, output_root, seed, "
             "progress, experiment, run_name, calibrate, prices")
GATES = ("context_recall, context_precision, context_f1, source_recall, source_precision, "
         "source_f1, max_error_rate, max_fabricated")
NGRAM_KEYS = "n, tokenizer, threads, kernel"
STEPS = "nfc, strip, collapse_whitespace, casefold, basename"
MATCHERS = "embeddings, llm, local_embeddings, locate, ngram, substring"
GRAMMAR = "https://hydra.cc/docs/advanced/override_grammar/basic/"

ROWS = [
    # --- keys the schema does not have ---------------------------------------------------
    Row("typo'd matcher key", ["matcher.nn=2"], 2,
        f"{E}matcher.nn: no such key; NgramMatcher takes: {NGRAM_KEYS}"),
    Row("unknown root key", ["foo=1"], 2, f"{E}foo: no such key; the config takes: {ROOT_KEYS}"),
    Row("unknown root key added with +", ["+foo=1"], 2,
        f"{E}foo: no such key; the config takes: {ROOT_KEYS}"),
    Row("unknown matcher key added with +", ["+matcher.foo=1"], 2,
        f"{E}matcher.foo: no such key; NgramMatcher takes: {NGRAM_KEYS}"),
    Row("gate on an unknown metric added with +", ["+gate.context_recal=0.9"], 2,
        f"{E}gate.context_recal: no such gate; the gates: {GATES}"),
    Row("gate on an unknown metric", ["gate.context_recal=0.9"], 2,
        f"{E}gate.context_recal: no such gate; the gates: {GATES}"),
    Row("unknown bands key", ["scoring.bands.amber=0.5"], 2,
        f"{E}scoring.bands.amber: no such key; Bands takes: green, medium"),
    # --- unknown options -------------------------------------------------------------------
    Row("unknown matcher option", ["matcher=nope"], 2,
        f"{E}matcher=nope: no such option; choose one of: {MATCHERS}"),
    Row("unknown model option", ["model=nope"], 2,
        f"{E}model=nope: no such option; choose one of: extractive, http, openai, precomputed, "
        "python"),
    Row("unknown threshold level", ["threshold=loose"], 2,
        f"{E}threshold=loose: no such option; choose one of: default, lenient, strict or a "
        "number"),
    Row("a number as a group's option", ["matcher=1"], 2,
        f"{E}a config group's option must be a name (group=option), got a number; see "
        "`ragcite --help` for the groups and their options"),
    # --- wrong types -----------------------------------------------------------------------
    Row("batch size not an integer", ["scoring.batch_size=abc"], 2,
        f"{E}scoring.batch_size: must be an integer, got 'abc'"),
    Row("band not a number", ["scoring.bands.green=high"], 2,
        f"{E}scoring.bands.green: must be a number, got 'high'"),
    Row("flag not a boolean", ["scoring.require_same_source=maybe"], 2,
        f"{E}scoring.require_same_source: must be true or false, got 'maybe'"),
    Row("unknown zero-division policy", ["scoring.zero_division=never"], 2,
        f"{E}scoring.zero_division: must be one of: auto, nan, zero, one; got 'never'"),
    Row("null for a required number", ["scoring.batch_size=null"], 2,
        f"{E}scoring.batch_size: must be set, not null"),
    Row("a number where a list goes", ["scoring.source_normalization=3"], 2,
        f"{E}scoring.source_normalization: must be a list ([a,b]), got int"),
    # --- missing values, bad _target_, bad syntax -------------------------------------------
    Row("http model without url", ["model=http"], 2,
        f"{E}model.url: required and not set; give it as model.url=..."),
    Row("file dataset without path", ["dataset=file"], 2,
        f"{E}dataset.path: required and not set; give it as dataset.path=..."),
    Row("model _target_ not importable", ["model._target_=nope.Nope"], 2,
        f"{E}model._target_: cannot import nope.Nope: No module named 'nope'"),
    Row("matcher _target_ not in its module", ["matcher._target_=runner.Nope"], 2,
        f"{E}matcher._target_: cannot import runner.Nope: module 'runner' has no attribute "
        "'Nope'"),
    Row("bad override syntax", ["matcher.n=["], 2,
        f"{E}matcher.n=[: not a valid override (no viable alternative at input '['); write "
        f"key=value, see {GRAMMAR}"),
    Row("adding a key that is already set", ["+matcher.n=2"], 2,
        f"{E}matcher.n: already set; override it without '+' (matcher.n=...)"),
    Row("deleting a key that does not exist", ["~matcher.foo"], 2,
        f"{E}matcher.foo: no such key to delete"),
    Row("several values without -m", ["matcher=substring,ngram"], 2,
        f"{E}matcher=substring,ngram: several values; sweep them with -m, or write a list as "
        "[a,b] or a string as 'a,b'"),
    Row("bad override syntax with a secret value", ["model=openai", "model.api_key=[sk-abc123"],
        2, f"{E}model.api_key=***: not a valid override; see {GRAMMAR}"),
    # --- in a sweep --------------------------------------------------------------------------
    Row("sweep: typo'd key", ["-m", "matcher.nn=1,2"], 2,
        f"{E}matcher.nn: no such key; NgramMatcher takes: {NGRAM_KEYS}"),
    Row("sweep: unknown option", ["-m", "matcher=nope,ngram"], 2,
        f"{E}matcher=nope: no such option; choose one of: {MATCHERS}"),
    Row("sweep: a key one of its options lacks", ["-m", "matcher=ngram,substring", "matcher.n=2"],
        2, f"{E}matcher.n: no such key; SubstringMatcher takes: normalize"),
    Row("sweep: setting out of range", ["-m", "scoring.batch_size=0"], 2,
        f"{E}scoring.batch_size: must be an integer >= 1, got 0"),
    # --- settings out of range, refused before any work --------------------------------------
    Row("threshold NaN", ["threshold=nan"], 2,
        f"{E}scoring.threshold: nan is not a number; give one in [0, 1], the similarities this "
        "matcher gives"),
    Row("threshold below the range", ["threshold=-0.1"], 2,
        f"{E}scoring.threshold: -0.1 is outside [0, 1], the similarities this matcher gives"),
    Row("ngram length 0", ["matcher.n=0"], 2, f"{E}matcher.n: must be an integer >= 1, got 0"),
    Row("negative threads", ["matcher.threads=-1"], 2,
        f"{E}matcher.threads: must be an integer >= 0, got -1"),
    Row("unknown kernel", ["matcher.kernel=gpu"], 2,
        f"{E}matcher.kernel: unknown kernel 'gpu'; choose from: auto, numpy, numba"),
    Row("unknown tokenizer", ["matcher.tokenizer=maybe"], 2,
        f"{E}matcher.tokenizer: unknown tokenizer 'maybe'; choose from: auto, words, chars"),
    Row("locate: its knowledge base is no file", ["matcher=locate",
                                                   "matcher.knowledge_base=[{path:kb.jsonl}]"],
        2, f"{E}matcher: cannot build runner.matchers.locate.LocateMatcher: kb.jsonl: file not "
        "found"),
    Row("locate: a knowledge base record without text",
        ["matcher=locate", "matcher.knowledge_base=[{path:no_text.jsonl}]"], 2,
        f"{E}matcher: cannot build runner.matchers.locate.LocateMatcher: no_text.jsonl, line 1, "
        "field 'text': required field is missing", FILES),
    Row("unknown fidelity setting", ["scoring.fidelity=sometimes"], 2,
        f"{E}scoring.fidelity: unknown value 'sometimes'; choose from: auto, off"),
    Row("negative limit", ["dataset.limit=-1"], 2,
        f"{E}dataset.limit: must be an integer >= 1, got -1"),
    Row("limit 0: an empty dataset", ["dataset.limit=0"], 2,
        f"{E}dataset.limit: must be an integer >= 1, got 0"),
    Row("batch size 0", ["scoring.batch_size=0"], 2,
        f"{E}scoring.batch_size: must be an integer >= 1, got 0"),
    Row("confidence 1", ["scoring.bootstrap.confidence=1"], 2,
        f"{E}scoring.bootstrap.confidence: must be a number in (0, 1), got 1.0"),
    Row("confidence 0", ["scoring.bootstrap.confidence=0"], 2,
        f"{E}scoring.bootstrap.confidence: must be a number in (0, 1), got 0.0"),
    Row("negative resamples", ["scoring.bootstrap.resamples=-1"], 2,
        f"{E}scoring.bootstrap.resamples: must be an integer in [0, 1000000], got -1"),
    Row("inverted bands", ["scoring.bands.green=0.2"], 2,
        f"{E}scoring.bands: green (0.2) must be >= medium (0.25)"),
    Row("band above 1", ["scoring.bands.medium=1.5"], 2,
        f"{E}scoring.bands.medium: must be a number in [0, 1], got 1.5"),
    Row("top_k 0", ["model.top_k=0"], 2, f"{E}model.top_k: must be an integer >= 1, got 0"),
    Row("unknown chunk unit", ["model.chunk_unit=line"], 2,
        f"{E}model.chunk_unit: unknown unit 'line'; choose from: sentence, paragraph, word, "
        "document"),
    Row("chunks overlapping a whole chunk", ["model.chunk_overlap=2"], 2,
        f"{E}model: chunk_overlap (2) must be < chunk_size (2)"),
    Row("report page size 0", ["report=html", "report.page_size=0"], 2,
        f"{E}report.page_size: must be an integer >= 1, got 0"),
    Row("unknown report embedding", ["report=html", "report.embed=zip"], 2,
        f"{E}report.embed: unknown mode 'zip'; choose from: auto, json, gzip"),
    Row("unknown source-normalisation step", ["scoring.source_normalization=[nfc,lower]"], 2,
        f"{E}scoring.source_normalization: unknown step 'lower'; choose from: {STEPS}"),
    Row("gate above 1", ["gate.context_recall=1.5"], 2,
        f"{E}gate.context_recall: must be a number in [0, 1], got 1.5"),
    Row("empty cases file", ["dataset=file", "dataset.path=empty.jsonl", "model=precomputed"], 2,
        f"{E}dataset.path: empty.jsonl holds no cases; nothing to score", FILES),
    Row("a key of another option", ["report=none", "report.page_size=10"], 2,
        f"{E}report.page_size: no such key; NoReports takes no keys"),
    Row("out of range with a live model: refused before any call",
        ["model=http", "model.url=http://127.0.0.1:9/never", "scoring.batch_size=0"], 2,
        f"{E}scoring.batch_size: must be an integer >= 1, got 0"),
    # --- nothing scored (3), some failed (0) ---------------------------------------------------
    Row("no stored responses", ON_FILE, 3,
        f"{E}no case could be scored: all 2 failed; the first: a: no stored response for case "
        "'a' in the stored responses", FILES),
    Row("responses whose ids match no case", [*ON_FILE, "model.responses=stray.jsonl"], 3,
        f"{E}no case could be scored: all 2 failed; the first: a: no stored response for case "
        "'a' in model.responses stray.jsonl", FILES),
    Row("some cases failed", [*ON_FILE, "model.responses=half.jsonl"], 0,
        "ragcite: 1 of 2 cases failed and were not scored (metrics.json: failed); the first: b: "
        "no stored response for case 'b' in model.responses half.jsonl", FILES),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)


def test_some_failed_names_stray_responses_and_counts_in_the_last_line(tmp_path: Path) -> None:
    row = next(r for r in ROWS if r.name == "some cases failed")
    proc = run_row(row, tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == row.line
    assert ("ragcite: warning: model.responses half.jsonl: 1 of 2 responses match no case: "
            "'zz'") in lines


def test_a_secret_in_a_bad_override_is_never_echoed(tmp_path: Path) -> None:
    row = next(r for r in ROWS if r.name == "bad override syntax with a secret value")
    proc = run_row(row, tmp_path)
    assert "sk-abc123" not in proc.stderr + proc.stdout


def test_a_sweep_whose_job_scored_nothing_exits_3(tmp_path: Path) -> None:
    # Like a single run, but after the sweep's launch lines and the job's summary; the sweep's
    # own closing line comes last.
    row = Row("sweep: a job that scored nothing", ["-m", *ON_FILE], 3,
              f"{E}no case could be scored: all 2 failed; the first: a: no stored response for "
              "case 'a' in the stored responses", FILES)
    write_files(tmp_path, row.files)
    proc = run_cli([*BASE_ARGS, *row.args], tmp_path, timeout=120)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith(E)] == [row.line]
    assert lines[-2] == row.line and "sweep: 1 result of 1 job" in lines[-1]
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr


@pytest.mark.parametrize(("args", "first"), [
    (["--help"], "ragcite: does your RAG system cite the right documents and the right "
                 "passages?"),
    (["--cfg", "job", "scoring.batch_size=7"], "dataset:"),
    (["--info", "defaults"], ""),
])
def test_help_cfg_and_info_still_work(args: list[str], first: str, tmp_path: Path) -> None:
    proc = run_cli(args, tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == first
    if args[0] == "--cfg":
        assert "  batch_size: 7" in proc.stdout.splitlines()
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "outputs").exists()

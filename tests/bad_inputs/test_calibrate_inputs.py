"""Rows for ``ragcite-calibrate``, ``ragcite mode=calibrate``: the same app, so a config error,
whether Hydra's composition or the schema check, is one ``ragcite: error:`` line with exit
status 2. Each row runs ``python -m runner.calibration.app`` with tracking off."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runner.errors import EXIT_INTERRUPTED
from tests.bad_inputs.table import Row, check, ids, write_files
from tests.calibration.conftest import FIXTURE
from tests.conftest import run_cli
from tests.helpers import wait_until
from tests.openai_server import HELD, FakeOpenAI, Scripted

MODULE = "runner.calibration.app"
BASE = ("tracking=none", "progress=false")
SECRET = "sk-calib0123456789abcdef"
LABELS = ('{"reference": "a b c", "citation": "a b c", "label": true}\n'
          '{"reference": "a", "citation": "b", "label": "yes"}\n')
GRAMMAR = "see https://hydra.cc/docs/advanced/override_grammar/basic/"

ROWS = [
    Row("no such matcher", ["matcher=nope"], 2,
        "ragcite: error: matcher=nope: no such option; choose one of: embeddings, llm, "
        "local_embeddings, locate, ngram, substring"),
    Row("no such matcher in a sweep", ["-m", "matcher=ngram,nope"], 2,
        "ragcite: error: matcher=nope: no such option; choose one of: embeddings, llm, "
        "local_embeddings, locate, ngram, substring"),
    Row("a matcher key that does not exist", ["matcher.foo=1"], 2,
        "ragcite: error: matcher.foo: no such key; NgramMatcher takes: n, tokenizer, threads, "
        "kernel"),
    Row("a root key that does not exist", ["nokey=1"], 2,
        "ragcite: error: nokey: no such key; the config takes: dataset, model, matcher, "
        "scoring, tracking, report, gate, cache, output_root, seed, progress, experiment, "
        "run_name, calibrate, prices"),
    Row("a calibrate key that does not exist", ["calibrate.nokey=1"], 2,
        "ragcite: error: calibrate.nokey: no such key; the config takes: labels, mapping, "
        "format, worst"),
    Row("labels given empty", ["calibrate.labels="], 2,
        "ragcite: error: calibrate.labels: give the labelled pairs, e.g. "
        "calibrate.labels=labels.jsonl (docs/calibration.md)"),
    Row("worst is not a number", ["calibrate.worst=abc"], 2,
        "ragcite: error: calibrate.worst: must be an integer, got 'abc'"),
    Row("worst below zero", ["calibrate.worst=-1"], 2,
        "ragcite: error: calibrate.worst: must be an integer >= 0, got -1"),
    Row("a matcher's integer below its range", ["matcher.n=0"], 2,
        "ragcite: error: matcher.n: must be an integer >= 1, got 0"),
    Row("bootstrap resamples below zero", ["scoring.bootstrap.resamples=-1"], 2,
        "ragcite: error: scoring.bootstrap.resamples: must be an integer in [0, 1000000], got -1"),
    Row("no such threshold level", ["threshold=nope"], 2,
        "ragcite: error: threshold=nope: no such option; choose one of: default, lenient, "
        "strict or a number"),
    Row("a threshold number outside the matcher's range", ["threshold=1.5"], 2,
        "ragcite: error: scoring.threshold: 1.5 is outside [0, 1], the similarities this "
        "matcher gives"),
    Row("a key added that is already set", ["+matcher.n=2"], 2,
        "ragcite: error: matcher.n: already set; override it without '+' (matcher.n=...)"),
    Row("a bad label in the labels file", ["calibrate.labels=l.jsonl"], 2,
        "ragcite: error: l.jsonl, line 2, field 'label': Input should be a valid boolean "
        "(got 'yes')", files={"l.jsonl": LABELS}),
    Row("a mapping expression that fails on a record",
        ["calibrate.labels=l.jsonl", 'calibrate.mapping.label="abs(reference)"'], 2,
        "ragcite: error: l.jsonl, line 1, field 'mapping.label': expression 'abs(reference)' "
        "failed: In function abs(), invalid type for value: a b c, expected one of: "
        "['number'], received: \"string\"", files={"l.jsonl": LABELS}),
    Row("a secret in an override that does not parse",
        ["matcher=embeddings", f"matcher.api_key=[{SECRET}"], 2,
        f"ragcite: error: matcher.api_key=***: not a valid override; {GRAMMAR}"),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    write_files(tmp_path, row.files)
    proc = run_cli([*BASE, *row.args], tmp_path, env=dict(row.env), module=MODULE,
                   timeout=120)
    check(row, proc, tmp_path)
    assert SECRET not in proc.stdout + proc.stderr
    assert not list(tmp_path.glob("**/calibration.json"))  # stopped before any work


def test_help_is_ragcites_with_the_mode_group(tmp_path: Path) -> None:
    proc = run_cli(["--help"], tmp_path, module=MODULE, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    groups = text[text.index("== Config groups ==\n"):text.index("== Config ==\n")]
    assert "mode: calibrate, run" in groups.splitlines()
    assert "calibrate:\n  labels: pkg://runner.datasets/calibration/pairs.jsonl" in text


def test_sigterm_stops_a_calibration_with_one_line(tmp_path: Path) -> None:
    # The embeddings matcher's first request is held by the suite's server (its reply never
    # comes); SIGTERM then stops the calibration as Ctrl-C does: "ragcite: interrupted", exit
    # 130, no traceback.
    with FakeOpenAI() as server:
        server.script("/v1/embeddings", Scripted(delay=HELD))
        args = [sys.executable, "-m", MODULE, *BASE, "calibrate.labels=" + str(FIXTURE),
                "matcher=embeddings", f"matcher.base_url={server.v1}", "matcher.max_retries=0"]
        env = {**os.environ, "OPENAI_API_KEY": SECRET, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(args, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: server.count("/v1/embeddings") > 0, "the embeddings request", proc)
            assert server.count("/v1/embeddings") == 1
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert [line for line in err.splitlines() if line.strip()][-1] == "ragcite: interrupted", err
    assert "Traceback" not in err and SECRET not in err
    assert not list(tmp_path.glob("**/calibration.json"))

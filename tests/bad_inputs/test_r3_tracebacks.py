"""Rows for inputs that ended in a traceback, a hang or silence (issue 23, item 5): every numeric
setting of the three commands out of its declared range, nesting too deep for a recursive
reader, special files given as data, ``ragcite-compare --out`` on what is no file to write.

Every row's folder holds a FIFO (``pipe.jsonl``), a folder (``folder``), a file (``file``) and a
link to ``/dev/null`` (``null``) before its command runs: a row that read the FIFO would hang, so
each has a timeout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, check, ids, run_row, write_files
from tests.conftest import run_cli

E = "ragcite: error: "
BIG = str(10**20)  # beyond 64 bits: a slice or an array of that size ends in a traceback
JOB = ("the files written before it are kept, and a job folder without job.json (a sweep "
       "without sweep.json) is incomplete")
NESTED = "nested too deeply (JMESPath parses each level as a Python call)"
PARENS = "(" * 1000 + "query" + ")" * 1000
SHOWN = "(" * 40 + "…" + ")" * 40  # an expression cut in the middle in a message
PIPES = "|".join(["text"] * 1000)  # parses in a loop, evaluates by recursion
KB = "dataset.knowledge_base"


def _special_files(tmp: Path) -> None:
    os.mkfifo(tmp / "pipe.jsonl")
    # /dev/null through a link of the row's own: a command that wrongly replaced its --out
    # would replace the link, never the machine's /dev/null.
    (tmp / "null").symlink_to("/dev/null")
    (tmp / "folder").mkdir()
    (tmp / "file").write_text("x", encoding="utf-8")


RAGCITE = [
    # A python model's function is imported before any case is answered: every case failed
    # (exit 3) with Hydra's three-line message before.
    Row("a python model's function that cannot be imported",
        ["model=python", "model.function=nope.nope"], 2,
        f"{E}model.function: cannot import 'nope.nope': No module named 'nope'"),
    Row("a python model's function that is not callable",
        ["model=python", "model.function=json.__doc__"], 2,
        f"{E}model.function: 'json.__doc__' is not callable"),
    # Two of Hydra's modes at once: a traceback before.
    Row("-m with --cfg job", ["-m", "--cfg", "job"], 2,
        f"{E}-m (--multirun) cannot go with --cfg, --info or --shell-completion: give one"),
    # (a) every numeric setting has its range: tracebacks, silence and a hang before.
    Row("a negative seed", ["seed=-1"], 2, f"{E}seed: must be an integer >= 0, got -1"),
    Row("a batch size beyond 64 bits", [f"scoring.batch_size={BIG}"], 2,
        f"{E}scoring.batch_size: must be an integer >= 1, got {BIG}"),
    Row("a limit beyond 64 bits", [f"dataset.limit={BIG}"], 2,
        f"{E}dataset.limit: must be an integer >= 1, got {BIG}"),
    Row("a million and one resamples", ["scoring.bootstrap.resamples=1000001"], 2,
        f"{E}scoring.bootstrap.resamples: must be an integer in [0, 1000000], got 1000001"),
    Row("report cases beyond 64 bits", ["report=html", f"report.max_cases={BIG}"], 2,
        f"{E}report.max_cases: must be an integer >= 0, got {BIG}"),
    Row("negative workers", ["scoring.workers=-3"], 2,
        f"{E}scoring.workers: must be an integer >= 0, got -3"),
    Row("report text cut to nothing", ["report=html", "report.max_text_chars=0"], 2,
        f"{E}report.max_text_chars: must be an integer >= 1, got 0"),
    Row("a negative gzip size", ["report=html", "report.gzip_above_mb=-1"], 2,
        f"{E}report.gzip_above_mb: must be a number >= 0, got -1.0"),
    Row("negative failed cases listed", ["report=html", "report.max_failed_listed=-1"], 2,
        f"{E}report.max_failed_listed: must be an integer >= 0, got -1"),
    Row("a tracking timeout of zero", ["tracking=mlflow", "tracking.timeout_s=0"], 2,
        f"{E}tracking.timeout_s: must be a number of seconds in (0, 86400], got 0.0"),
    Row("negative table rows", ["tracking=mlflow", "tracking.table_rows=-1"], 2,
        f"{E}tracking.table_rows: must be an integer >= 0, got -1"),
    Row("a BM25 floor that is no number", ["model.min_score=nan"], 2,
        f"{E}model.min_score: must be a number, got nan"),
    Row("a temperature out of range", ["model=openai", "model.temperature=5"], 2,
        f"{E}model.temperature: must be a number in [0, 2], got 5.0"),
    Row("an openai passage overlap as long as the passage",
        ["model=openai", "model.chunk_overlap=2"], 2,
        f"{E}model: chunk_overlap (2) must be < chunk_size (2)"),
    Row("no log-probabilities asked for", ["matcher=llm", "matcher.top_logprobs=0"], 2,
        f"{E}matcher.top_logprobs: must be an integer in [1, 20], got 0"),
    Row("a timeout too long to wait", ["matcher=embeddings", "matcher.timeout=1e300"], 2,
        f"{E}matcher.timeout: must be a number of seconds in (0, 86400], got 1e+300"),
    Row("a negative backoff", ["model=http", "model.url=http://127.0.0.1:9/",
                               "model.backoff=-1"], 2,
        f"{E}model.backoff: must be a number of seconds in [0, 8], got -1.0"),
    Row("an infinite price", ["+prices.m.output=inf"], 2,
        f"{E}prices.m.output: must be a number >= 0, got inf"),
    Row("no concurrency for a python model", ["model=python", "model.function=os.getcwd",
                                              "model.concurrency=0"], 2,
        f"{E}model.concurrency: must be an integer >= 1, got 0"),
    Row("an output root that cannot be made", ["output_root=/proc/x"], 2,
        f"{E}output_root: cannot create /proc/x: No such file or directory; give a folder that "
        "can be written"),
    Row("a cache folder that cannot be made", ["cache.dir=/proc/x"], 2,
        f"{E}cache.dir: cannot create /proc/x: No such file or directory; give a folder that "
        "can be written"),
    # (b) nesting deeper than a recursive reader goes.
    Row("a mapping nested 1000 parentheses deep", [f'dataset.mapping.query="{PARENS}"'], 2,
        f"{E}pkg://runner.datasets/demo/cases.jsonl (mapping), field 'query': invalid JMESPath "
        f"expression '{SHOWN}': {NESTED}"),
    Row("a mapping evaluated 1000 levels deep", [f'{KB}.mapping.text="{PIPES}"'], 2,
        f"{E}pkg://runner.datasets/demo/knowledge_base.jsonl, line 1, field 'mapping.text': "
        f"expression '{PIPES[:40]}…{PIPES[-40:]}' failed: maximum recursion depth exceeded"),
    Row("a reply expression nested 1000 deep", ["model=http", "model.url=http://127.0.0.1:9/",
                                                f'model.citations="{PARENS}"'], 2,
        f"{E}model.citations: invalid JMESPath '{SHOWN}': {NESTED}"),
    Row("an override nested 1000 lists deep", ["seed=" + "[" * 1000 + "1" + "]" * 1000], 2,
        f"{E}seed: nested too deeply for Hydra to read (1000 levels of lists or dicts)"),
    # (d) special files as data: one line, never a read that blocks or never ends.
    Row("a FIFO as the dataset", ["dataset=file", "dataset.path=pipe.jsonl",
                                  "model=precomputed"], 2,
        f"{E}pipe.jsonl: is a FIFO, not a regular file"),
    Row("/dev/zero as the dataset", ["dataset=file", "dataset.path=/dev/zero",
                                     "dataset.format=jsonl", "model=precomputed"], 2,
        f"{E}/dev/zero: is a character device, not a regular file"),
    Row("a FIFO as the knowledge base", [f"{KB}.path=pipe.jsonl"], 2,
        f"{E}pipe.jsonl: is a FIFO, not a regular file"),
    Row("/dev/zero as stored responses", ["model=precomputed", "dataset.systems.mostly_right."
                                          "path=/dev/zero", "dataset.systems.mostly_right."
                                          "format=jsonl"], 2,
        f"{E}/dev/zero: is a character device, not a regular file"),
    Row("a /proc file that cannot be read", ["dataset=file", "dataset.path=/proc/self/mem",
                                             "dataset.format=jsonl", "model=precomputed"], 2,
        f"{E}/proc/self/mem: cannot be read (Input/output error)"),
    Row("a FIFO as the judge's prompt", ["matcher=llm", "matcher.openai_api_key=k",
                                         "matcher.prompt=pipe.jsonl"], 2,
        f"{E}matcher.prompt: pipe.jsonl: is a FIFO, not a regular file"),
    Row("a /proc file as the judge's prompt", ["matcher=llm", "matcher.openai_api_key=k",
                                               "matcher.prompt=/proc/self/mem"], 2,
        f"{E}matcher.prompt: /proc/self/mem: cannot be read (Input/output error)"),
]

CALIBRATE = [
    Row("calibrate: a negative seed", ["calibrate.labels=l.jsonl", "seed=-1"], 2,
        f"{E}seed: must be an integer >= 0, got -1"),
    Row("calibrate: resamples beyond 64 bits", ["calibrate.labels=l.jsonl",
                                                f"scoring.bootstrap.resamples={BIG}"], 2,
        f"{E}scoring.bootstrap.resamples: must be an integer in [0, 1000000], got {BIG}"),
    Row("calibrate: a mapping nested 1000 parentheses deep",
        ["calibrate.labels=l.jsonl", f'calibrate.mapping.label="{PARENS}"'], 2,
        f"{E}l.jsonl (mapping), field 'label': invalid JMESPath expression "
        f"'{SHOWN}': {NESTED}"),
    Row("calibrate: a FIFO as the labels", ["calibrate.labels=pipe.jsonl"], 2,
        f"{E}pipe.jsonl: is a FIFO, not a regular file"),
    Row("calibrate: an output root under a file",
        ["calibrate.labels=l.jsonl", "output_root=file/x"], 2,
        f"{E}output_root: file/x is under file, which is a file; give a folder (created when "
        "missing)"),
]
LABELS = {"l.jsonl": '{"reference": "a b c", "citation": "a b c", "label": true}\n'}

C = "ragcite: error: "
COMPARE = [
    Row("compare: a negative seed", ["--seed", "-1"], 2,
        f"{C}argument --seed: must be an integer >= 0, got -1"),
    Row("compare: a negative top", ["--top", "-1"], 2,
        f"{C}argument --top: must be an integer >= 0, got -1"),
    Row("compare: negative new errors", ["--max-new-errors", "-1"], 2,
        f"{C}argument --max-new-errors: must be an integer >= 0, got -1"),
    Row("compare: resamples beyond 64 bits", ["--resamples", BIG], 2,
        f"{C}argument --resamples: must be an integer in [1, 1000000], got {BIG}"),
    Row("compare: an infinite drop", ["--max-drop", "inf"], 2,
        f"{C}argument --max-drop: must be a number in [0, 1], got inf"),
    # (e) the report and summary go to a file: never over a folder, a FIFO or a device.
    Row("compare: --out a folder", ["--out", "folder"], 2,
        f"{C}argument --out: folder is a folder; give the path of a file to write"),
    Row("compare: --out under a file", ["--out", "file/compare.html"], 2,
        f"{C}argument --out: file is a file; give the path of a file to write"),
    Row("compare: --out a device", ["--out", "null"], 2,
        f"{C}argument --out: null is not a regular file; give the path of a file to write"),
    Row("compare: --json a FIFO", ["--json", "pipe.jsonl"], 2,
        f"{C}argument --json: pipe.jsonl is not a regular file; give the path of a file to "
        "write"),
]


@pytest.mark.parametrize("row", RAGCITE, ids=ids(RAGCITE))
def test_row(row: Row, tmp_path: Path) -> None:
    _special_files(tmp_path)
    run_row(row, tmp_path, timeout=60)


@pytest.mark.parametrize("row", CALIBRATE, ids=ids(CALIBRATE))
def test_calibrate_row(row: Row, tmp_path: Path) -> None:
    _special_files(tmp_path)
    write_files(tmp_path, LABELS)
    proc = run_cli(["tracking=none", "progress=false", *row.args], tmp_path, timeout=60,
                   module="runner.calibration.app")
    check(row, proc, tmp_path)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run of the demo (job.json written)."""
    root = tmp_path_factory.mktemp("finished")
    proc = run_cli(["tracking=none", "report=none", "progress=false", "model=precomputed"], root)
    assert proc.returncode == 0, proc.stderr
    return next((root / "outputs" / "runs").iterdir())


def check_compare(row: Row, proc: subprocess.CompletedProcess[str], tmp: Path) -> None:
    """A ``ragcite-compare`` row: its status, and its line the only error, with no traceback
    and nothing before it but argparse's one usage line."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    context = f"\n--- stderr of {row.name} ---\n{proc.stderr}"
    assert proc.returncode == row.status, context
    assert "Traceback" not in proc.stderr, context
    assert lines[-1] == row.line.replace("{tmp}", str(tmp)), context
    assert [line for line in lines if "error" in line] == lines[-1:], context
    assert lines[:-1] in ([], ["usage: ragcite-compare [options] a b"]), context


@pytest.mark.parametrize("row", COMPARE, ids=ids(COMPARE))
def test_compare_row(row: Row, finished_run: Path, tmp_path: Path) -> None:
    _special_files(tmp_path)
    run = shutil.copytree(finished_run, tmp_path / "run")
    proc = run_cli([str(run), str(run), *row.args], tmp_path, timeout=60,
                   module="runner.reports.compare")
    check_compare(row, proc, tmp_path)
    assert not (tmp_path / "outputs").exists()  # refused before any work


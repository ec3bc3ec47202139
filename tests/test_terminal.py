"""No data drives the terminal (issue 23, item 4): the characters that retitle, clear or rewrite
a terminal (ESC sequences, CR, BEL, DEL, C1 controls, bidi overrides) reach stdout, stderr and
``ragcite.log`` escaped, whether a case id, an error, a path or a server's reply carries them.

The escaping is done once, where all output passes (runner/redact.py::guard_output): the stream
wrapper and the log-record factory.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runner.redact import printable

ESC = "\x1b]0;pwned\x07\x1b[2J\rFORGED\u202e"
"""A title change (OSC ... BEL), a screen clear (CSI 2J), a carriage return, a bidi override."""
SHOWN = r"\x1b]0;pwned\x07\x1b[2J\rFORGED\u202e"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run_bytes(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run Python with `args`; its output decoded as it is (a text-mode pipe would turn a raw
    carriage return into a line break)."""
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, check=False)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(),
                                       proc.stderr.decode())


def test_printable_escapes_what_drives_a_terminal_as_python_writes_it() -> None:
    assert printable(ESC) == SHOWN
    assert printable("a\tb\nc\x00\x7f\x85\x9b\u2066\u2069 é ✓") == \
        "a\tb\nc\\x00\\x7f\\x85\\x9b\\u2066\\u2069 é ✓"
    assert printable("a\tb\nc\r", one_line=True) == r"a\tb\nc\r"
    assert printable(SHOWN) == SHOWN  # escaping twice changes nothing


def test_the_guard_escapes_prints_log_values_warnings_and_tracebacks(tmp_path: Path) -> None:
    code = (
        "import logging, sys, warnings\n"
        "from runner.redact import guard_output, terminal\n"
        "guard_output([])\n"
        "logging.basicConfig(filename='job.log', level=logging.INFO, format='%(message)s')\n"
        "logging.getLogger().addHandler(logging.StreamHandler(sys.stderr))\n"
        "log = logging.getLogger('ragcite')\n"
        f"print('id:', {ESC!r})\n"
        f"log.warning('first: %s: %s', {ESC!r}, ValueError('bad\\nragcite: all passed'))\n"
        "log.info('two lines\\n\\tof our own')\n"
        f"warnings.warn({ESC!r})\n"
        "terminal().write('bar\\r')\n"
        "try:\n"
        f"    raise ValueError({ESC!r})\n"
        "except ValueError:\n"
        "    log.exception('job 0 failed')\n")
    proc = run_bytes(["-c", code], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"id: {SHOWN}\n"
    # Each value logged is one line; the message's own line break and tab stay; the progress
    # bar's carriage return (written to terminal()) is the only raw control character.
    assert proc.stderr.split("\n") == [
        rf"first: {SHOWN}: bad\nragcite: all passed", "two lines", "\tof our own",
        f"<string>:10: UserWarning: {SHOWN}", "bar\rjob 0 failed",
        "Traceback (most recent call last):", '  File "<string>", line 13, in <module>',
        f"ValueError: {SHOWN}", ""]
    log = (tmp_path / "job.log").read_text(encoding="utf-8")
    assert log.split("\n") == [
        rf"first: {SHOWN}: bad\nragcite: all passed", "two lines", "\tof our own",
        "job 0 failed", "Traceback (most recent call last):",
        '  File "<string>", line 13, in <module>', f"ValueError: {SHOWN}", ""]
    assert not RAW.search(proc.stdout + proc.stderr.replace("bar\r", "") + log)


@pytest.mark.slow
def test_a_dataset_with_terminal_controls_prints_them_escaped(tmp_path: Path) -> None:
    refs = [{"source": "Policy.pdf", "content": "five business days"}]
    cases = [
        {"id": f"c1{ESC}", "query": f"q{ESC}", "references": refs,
         "response": {"answer": "a", "error": f"boom{ESC}\nragcite: all gates passed"}},
        {"id": "c2", "query": f"q{ESC}", "references": refs,
         "response": {"answer": "a", "citations": [{"source": f"Policy{ESC}.pdf",
                                                    "content": "five business days"}]}},
    ]
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    proc = run_bytes(["-m", "runner.cli", "dataset=file", f"dataset.path={data}",
                      "model=precomputed", "tracking=none", "report=html", "progress=false",
                      f"output_root={tmp_path / 'out'}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    (log,) = (tmp_path / "out").rglob("ragcite.log")
    line = (f"ragcite: 1 of 2 cases failed and were not scored (metrics.json: failed); the "
            f"first: c1{SHOWN}: boom{SHOWN}\\nragcite: all gates passed")
    assert line in proc.stderr.splitlines()
    assert log.read_text(encoding="utf-8").splitlines()[-1].endswith(f"[WARNING] - {line}")
    for text in (proc.stdout, proc.stderr, log.read_text(encoding="utf-8")):
        assert not RAW.search(text), repr(text)

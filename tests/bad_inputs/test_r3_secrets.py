"""Rows of issue 23, items 2 and 4: a URL's password, query and fragment are secrets, and the
characters that drive a terminal (ESC, CR, BEL, bidi overrides) from data, a command line or a
server are shown escaped.

The rows run through the secrets harness (tests/bad_inputs/test_secrets.py): each row's line is
looked for on stderr, stdout or among Hydra's lines, and its secrets in no output stream and no
file of its folder. ``{host}`` is the row's RAG service on 127.0.0.1 (host and port), ``{tmp}``
its folder. Every row also checks that no raw control character but tab and line break reached
stdout, stderr or a ``ragcite.log`` (the text-mode pipe shows a raw carriage return as a line
break, which the row's one-line check then catches; tests/test_terminal.py reads raw bytes).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, ids
from tests.bad_inputs.test_secrets import CASES, KB, SecretRow, run_secret_row
from tests.openai_server import FakeOpenAI, Scripted

ESC = "\x1b]0;pwned\x07\x1b[2J\rFORGED\u202e"
"""A title change (OSC ... BEL), a screen clear (CSI 2J), a carriage return, a bidi override."""
SHOWN = r"\x1b]0;pwned\x07\x1b[2J\rFORGED\u202e"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
CLOSED = "127.0.0.1:9"  # nothing listens on the discard port
FILE = ["dataset=file", f"dataset.path={CASES}", f"dataset.knowledge_base.path={KB}"]
RAG = [*FILE, "model=http", 'model.citations="refs[].{source: doc, content: quote}"',
       "model.answer=text", "model.max_retries=0"]


def case(case_id: str, **response: object) -> dict[str, object]:
    """One case whose stored response is `response`."""
    return {"id": case_id, "query": f"q {ESC}",
            "references": [{"source": "Policy.pdf", "content": "five business days"}],
            "response": response}


def jsonl(*records: dict[str, object]) -> str:
    """JSON Lines: control characters in strings are JSON escapes (``\\u001b``)."""
    return "".join(json.dumps(r) + "\n" for r in records)


def refuse_with_escapes(server: FakeOpenAI) -> None:
    """Every request is refused with a reply carrying terminal controls (raw, not as JSON's
    escapes; the line shows the carriage return as a space, as it does any run of spaces)."""
    server.script("/rag", *[Scripted(422, body=f"no {ESC}".encode())] * 3)


def url(name: str, host: str = CLOSED, path: str = "/v1") -> str:
    """A URL with distinct secrets in its password, query and fragment."""
    return f"http://usr:pw-{name}@{host}{path}?key=q-{name}#f-{name}"


def secrets(name: str) -> tuple[str, ...]:
    return (f"pw-{name}", f"q-{name}", f"f-{name}")


def masked(host: str = CLOSED, path: str = "/v1") -> str:
    return f"http://usr:***@{host}{path}?***#***"


REACH = ("ragcite: error: tracking: cannot reach the MLflow tracking server at "
         f"{masked(path='/')} ([Errno 111] Connection refused; timeout 5 s) (set "
         "tracking.required=false to run without it, or tracking=none)")

ROWS = [
    # --- item 2: a URL's password, query and fragment ---------------------------------------
    SecretRow(Row("a URL typed unquoted is echoed by the override error with its secrets ***",
                  ["model=http", f"model.url={url('UNQUOTED')}"], 2,
                  f"ragcite: error: model.url={masked()}: not a valid override (mismatched input "
                  "'=' expecting <EOF>); write key=value, see "
                  "https://hydra.cc/docs/advanced/override_grammar/basic/"),
              secrets("UNQUOTED")),
    SecretRow(Row("model.url that is not http(s) is named with its secrets ***",
                  ["model=http", f"model.url='{url('FTP').replace('http', 'ftp')}'"], 2,
                  f"ragcite: error: model.url must be an http(s) URL, got "
                  f"'{masked().replace('http', 'ftp')}'"), secrets("FTP")),
    SecretRow(Row("an unreachable tracking.tracking_uri is named with its secrets ***",
                  [*FILE, "model=precomputed", "tracking=mlflow",
                   f"tracking.tracking_uri='{url('TRACKING', path='/')}'"], 2, REACH),
              secrets("TRACKING")),
    SecretRow(Row("an unreachable MLFLOW_TRACKING_URI is named with its secrets ***",
                  [*FILE, "model=precomputed", "tracking=mlflow"], 2, REACH,
                  env={"MLFLOW_TRACKING_URI": url("MLFLOWENV", path="/")}),
              secrets("MLFLOWENV")),
    SecretRow(Row("matcher.base_url in --cfg job shows its secrets ***",
                  ["matcher=llm", f"matcher.base_url='{url('CFG')}'", "--cfg", "job"], 0,
                  f"  base_url: {masked()}"), secrets("CFG"), "stdout"),
    SecretRow(Row("OPENAI_BASE_URL's secrets are in no file (metrics.json names the server)",
                  [*FILE, "model=precomputed", "matcher=embeddings", "matcher.max_retries=0"], 3,
                  "ragcite: error: no case could be scored: all 3 failed; the first: seed-1: "
                  "matcher failed on reference 0 / citation 0: APIConnectionError: Connection "
                  "error.", env={"OPENAI_BASE_URL": url("OPENAIENV"),
                                 "OPENAI_API_KEY": "sk-test-0123456789"}),
              secrets("OPENAIENV")),
    SecretRow(Row("a sweep's launch line shows model.url's secrets ***",
                  ["-m", *RAG, f"model.url=\"{url('SWEEP', '{host}', '/rag')}\""], 0,
                  f"\t#0 : tracking=none report=none progress=False {' '.join(RAG)} "
                  f"model.url=\"{masked('{host}', '/rag')}\""), secrets("SWEEP"), "hydra"),
    # --- item 4: terminal controls from data, the command line and a server -----------------
    SecretRow(Row("a field name with terminal controls is shown escaped",
                  ["dataset=file", "dataset.path={tmp}/cases.jsonl", "model=precomputed"], 2,
                  f"ragcite: error: {{tmp}}/cases.jsonl, line 1, field 'extra{SHOWN}': unknown "
                  "field (put extra data under 'metadata', or use a mapping)",
                  files={"cases.jsonl": jsonl({**case("c1", answer="a"), f"extra{ESC}": 1})}),
              ()),
    SecretRow(Row("a failed case's id and error with terminal controls and a line break are "
                  "one escaped line",
                  ["dataset=file", "dataset.path={tmp}/cases.jsonl", "model=precomputed"], 3,
                  f"ragcite: error: no case could be scored: all 1 failed; the first: c{SHOWN}: "
                  f"boom{SHOWN}\\nragcite: all gates passed",
                  files={"cases.jsonl": jsonl(case(
                      f"c{ESC}", answer="a", error=f"boom{ESC}\nragcite: all gates passed"))}),
              ()),
    SecretRow(Row("a data path with terminal controls is shown escaped",
                  ["dataset=file", "dataset.path='{tmp}/missing\x1b[2J\r.jsonl'",
                   "model=precomputed"], 2,
                  r"ragcite: error: {tmp}/missing\x1b[2J\r.jsonl: file not found"), ()),
    SecretRow(Row("an override with terminal controls is shown escaped",
                  ["model=http", "model.url=\x1b]0;x\x07"], 2,
                  r"ragcite: error: model.url=\x1b]0;x\x07: not a valid override "
                  r"(LexerNoViableAltException: model.url=\x1b]0;x\x07); write key=value, see "
                  "https://hydra.cc/docs/advanced/override_grammar/basic/"), ()),
    SecretRow(Row("a service's reply with terminal controls is shown escaped",
                  [*RAG, "model.url={url}/rag"], 3,
                  "ragcite: error: no case could be scored: all 3 failed; the first: seed-1: the "
                  r"service failed: HTTP 422: no \x1b]0;pwned\x07\x1b[2J FORGED\u202e"),
              (), serve=refuse_with_escapes),
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


@pytest.mark.parametrize("row", ROWS, ids=ids([r.row for r in ROWS]))
def test_row(row: SecretRow, tmp_path: Path, server: FakeOpenAI) -> None:
    host = server.url.removeprefix("http://")
    row = dataclasses.replace(row, row=dataclasses.replace(
        row.row, args=[a.replace("{host}", host).replace("{tmp}", str(tmp_path))
                       for a in row.row.args],
        line=row.row.line.replace("{host}", host)))
    if row.serve is not None:
        row.serve(server)
    proc = run_secret_row(row, tmp_path, server.url)
    logs = [p.read_text(encoding="utf-8") for p in tmp_path.rglob("ragcite.log")]
    for text in (proc.stdout, proc.stderr, *logs):
        assert not RAW.search(text), repr(text)
    for secret in row.secrets:
        assert secret not in proc.stdout + proc.stderr
        for path in tmp_path.rglob("*"):
            assert not path.is_file() or secret.encode() not in path.read_bytes(), path

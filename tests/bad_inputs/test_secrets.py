"""Rows where a secret is on the command line, in the environment or echoed by the service: the
line the user sees carries ``***``, and the secret is in no output stream and no file.

Besides the harness's checks (tests/bad_inputs/table.py), each row names its secrets, which must
appear neither on stdout nor on stderr nor in any file of the row's folder. A row's line is
looked for on stderr, on stdout (``--cfg``, ``--info``), or among Hydra's own lines with their
time stamp taken off (a sweep's launch lines). ``{url}`` in an argument is a RAG service on
127.0.0.1 (tests/openai_server.py), set up by the row's ``serve``.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bad_inputs.table import BASE_ARGS, Row, check, ids, write_files
from tests.conftest import REPO, run_cli
from tests.openai_server import FakeOpenAI, Scripted

KEY = "sk-cli-0123456789abcdef"
ENV_KEY = "sk-env-fedcba9876543210"
TOKEN = "tok-ECHO-5ecret-24680"
LITERAL = "sk-lit-13579bdf2468ace0"
CASES = REPO / "tests" / "fixtures" / "openai" / "cases.jsonl"
KB = REPO / "tests" / "fixtures" / "openai" / "kb.jsonl"
HTTP = ["dataset=file", f"dataset.path={CASES}", f"dataset.knowledge_base.path={KB}",
        "model=http", "model.url={url}/rag", "+model.headers.Authorization=Bearer $RAG_TOKEN"]
LEAKY = {"leaky.py": (
    "import os\n\n\n"
    "def answer(case):\n"
    "    raise ValueError('rejected key ' + os.environ['OPENAI_API_KEY'])\n\n\n"
    "class Client:\n"
    "    def __init__(self, api_key):\n"
    "        self.api_key = api_key\n\n"
    "    def __call__(self, case):\n"
    "        raise PermissionError(f'key {self.api_key} is revoked')\n\n\n"
    "def fine(case):\n"
    "    return {'answer': 'ok', 'citations': []}\n")}
# One case whose answer cites the first of the documents it carries; the key a function reads
# from OPENAI_API_KEY is only in a document it does not cite, or only in the provider's reply.
CARRIED = {"cases.jsonl": '{"id": "c1", "query": "q", "references": [{"source": "a", '
                          '"content": "alpha beta gamma"}]}\n',
           "carried.py": (
    "import os\n\n"
    "DOC = {'source': 'a', 'text': 'alpha beta gamma'}\n\n\n"
    "def in_documents(case):\n"
    "    return {'answer': 'alpha [1]', 'documents': [\n"
    "        DOC, {'source': 'b', 'text': 'key ' + os.environ['OPENAI_API_KEY']}]}\n\n\n"
    "def in_raw(case):\n"
    "    cite = {'type': 'char_location', 'cited_text': 'alpha beta gamma', 'document_index': 0}\n"
    "    return {'answer': 'alpha', 'documents': [DOC], 'provider': 'anthropic', 'raw': {\n"
    "        'id': 'msg ' + os.environ['OPENAI_API_KEY'],\n"
    "        'content': [{'type': 'text', 'text': 'alpha', 'citations': [cite]}]}}\n")}
# Its one citation is document a's whole text, the reference's passage (ngram similarity 1.0):
# every context and source figure is 1/1.
CARRIED_LINE = ("threshold 0.5: context R/P/F1 1.000/1.000/1.000  source R/P/F1 1.000/1.000/1.000  "
                "(means over 1 scored case, 0 failed; 1 of 1 ground-truth passage matched; the "
                "system answered 1 of the dataset's 1 case)")
_HYDRA_STAMP = re.compile(r"^\[[^\]]*\]\[HYDRA\] ", re.MULTILINE)


def refuse_all(server: FakeOpenAI) -> None:
    """Every request of the three cases is refused with a reply that echoes the token."""
    server.script("/rag", *[Scripted(422, body={"detail": f"token {TOKEN} may not read"})] * 3)


def echo_token(server: FakeOpenAI) -> None:
    """The service answers with the Authorization header it received, and cites nothing."""
    server.rag = lambda body: {"answer": f"called with {server.headers_seen[-1]['authorization']}",
                               "citations": []}


@dataclass(frozen=True)
class SecretRow:
    """A row, the secrets it must never show, where its line is, and its service's script."""

    row: Row
    secrets: tuple[str, ...]
    stream: str = "stderr"  # stderr | stdout | hydra (stderr, Hydra's time stamps taken off)
    serve: Callable[[FakeOpenAI], None] | None = None


ROWS = [
    SecretRow(Row("a key on the command line is *** in --cfg job",
                  ["model=openai", f"model.openai_api_key={KEY}", "--cfg", "job"], 0,
                  "  openai_api_key: ***"), (KEY,), "stdout"),
    SecretRow(Row("a key on the command line is *** among --cfg all's overrides",
                  ["matcher=llm", f"matcher.openai_api_key={KEY}", "--cfg", "all"], 0,
                  "    - matcher.openai_api_key=***"), (KEY,), "stdout"),
    SecretRow(Row("a key on the command line is *** in --info",
                  ["model=openai", f"model.openai_api_key={KEY}", "--info"], 0,
                  "  openai_api_key: ***"), (KEY,), "stdout"),
    SecretRow(Row("OPENAI_API_KEY is *** in --cfg job --resolve",
                  ["matcher=embeddings", "--cfg", "job", "--resolve"], 0,
                  "  openai_api_key: ***", env={"OPENAI_API_KEY": ENV_KEY}),
              (ENV_KEY,), "stdout"),
    SecretRow(Row("a key read with oc.env is *** in --cfg job --resolve",
                  ["model=openai", "model.openai_api_key=${oc.env:MY_KEY}", "--cfg", "job",
                   "--resolve"], 0, "  openai_api_key: ***", env={"MY_KEY": ENV_KEY}),
              (ENV_KEY,), "stdout"),
    SecretRow(Row("a header read with oc.env is *** in --cfg job --resolve",
                  ["model=http", "model.url=http://127.0.0.1:9/rag",
                   "+model.headers.Authorization=Bearer ${oc.env:RAG_TOKEN}", "--cfg", "job",
                   "--resolve"], 0, "    Authorization: Bearer ***",
                  env={"RAG_TOKEN": TOKEN}), (TOKEN,), "stdout"),
    SecretRow(Row("a sweep's launch lines show *** for each key",
                  ["-m", f"+model.kwargs.api_key={KEY},{ENV_KEY}", "model=python",
                   "model.function=leaky.fine"], 0,
                  "\t#1 : tracking=none report=none progress=False +model.kwargs.api_key=*** "
                  "model=python model.function=leaky.fine", files=LEAKY),
              (KEY, ENV_KEY), "hydra"),
    SecretRow(Row("a header's literal value is refused and never shown",
                  ["model=http", "model.url=http://127.0.0.1:9/rag",
                   f"+model.headers.Authorization=Bearer {LITERAL}"], 2,
                  "ragcite: error: model.headers.Authorization: give the name of an environment "
                  "variable (RAG_TOKEN) or text referring to one (Bearer $RAG_TOKEN), never the "
                  "value itself"), (LITERAL,)),
    SecretRow(Row("a header's unset variable is named, not starred",
                  ["model=http", "model.url=http://127.0.0.1:9/rag",
                   "+model.headers.Authorization=Bearer $RAGCITE_UNSET_TOKEN"], 2,
                  "ragcite: error: model.headers.Authorization: the environment variable "
                  "RAGCITE_UNSET_TOKEN is not set"), ()),
    SecretRow(Row("a service echoing its token in every refusal: the first error shows ***",
                  HTTP, 3,
                  "ragcite: error: no case could be scored: all 3 failed; the first: seed-1: the "
                  'service failed: HTTP 422: {"detail": "token *** may not read"}',
                  env={"RAG_TOKEN": TOKEN}), (TOKEN,), serve=refuse_all),
    SecretRow(Row("a service echoing its token in its answers: scored, token in no file",
                  HTTP, 0,
                  "threshold 0.5: context R/P/F1 0.000/0.000/0.000  source R/P/F1 "
                  "0.000/0.000/0.000  (means over 3 scored cases, 0 failed; 0 of 5 ground-truth "
                  "passages matched; the system answered 3 of the dataset's 3 cases)",
                  env={"RAG_TOKEN": TOKEN}),
              (TOKEN,), serve=echo_token),
    SecretRow(Row("a python model's error holding OPENAI_API_KEY shows ***",
                  ["model=python", "model.function=leaky.answer"], 3,
                  "ragcite: error: no case could be scored: all 30 failed; the first: rw-1: "
                  "ValueError: rejected key ***", files=LEAKY, env={"OPENAI_API_KEY": ENV_KEY}),
              (ENV_KEY,)),
    SecretRow(Row("a python model's error holding a key from the command line shows ***",
                  ["model=python", "model.function=leaky.Client",
                   f"+model.kwargs.api_key={KEY}"], 3,
                  "ragcite: error: no case could be scored: all 30 failed; the first: rw-1: "
                  "PermissionError: key *** is revoked", files=LEAKY), (KEY,)),
    *(SecretRow(Row(f"a key only in a response's {where} is in no file (cache, report)",
                    ["dataset=file", "dataset.path=cases.jsonl", "model=python",
                     f"model.function=carried.in_{where}", "report=html"], 0, CARRIED_LINE,
                    files=CARRIED, env={"OPENAI_API_KEY": ENV_KEY}), (ENV_KEY,))
      for where in ("documents", "raw")),
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


def run_secret_row(case: SecretRow, tmp: Path, url: str) -> subprocess.CompletedProcess[str]:
    """Run the row's command; check its line where the row says, with the harness's checks."""
    row = dataclasses.replace(case.row, args=[a.replace("{url}", url) for a in case.row.args])
    write_files(tmp, row.files)
    sweep = row.args[:1] == ["-m"]  # Hydra reads its flags before the overrides
    args = ["-m", *BASE_ARGS, *row.args[1:]] if sweep else [*BASE_ARGS, *row.args]
    proc = run_cli(args, tmp, env=dict(row.env), timeout=120)
    shown = {"stderr": proc.stderr, "stdout": proc.stdout,
             "hydra": _HYDRA_STAMP.sub("", proc.stderr)}[case.stream]
    check(row, subprocess.CompletedProcess(proc.args, proc.returncode, "", shown), tmp)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.mark.parametrize("case", ROWS, ids=ids([c.row for c in ROWS]))
def test_row(case: SecretRow, tmp_path: Path, server: FakeOpenAI) -> None:
    if case.serve is not None:
        case.serve(server)
    proc = run_secret_row(case, tmp_path, server.url)
    for secret in case.secrets:
        assert secret not in proc.stdout and secret not in proc.stderr
        for path in tmp_path.rglob("*"):
            assert not path.is_file() or secret.encode() not in path.read_bytes(), path
    if case.serve is not None:  # the token was sent to the service, which echoed it
        assert {h["authorization"] for h in server.headers_seen} == {f"Bearer {TOKEN}"}

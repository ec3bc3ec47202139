"""Secrets stay secret: a service that echoes its token, and keys given on the command line.

The end-to-end tests run the real ``ragcite`` command line against a RAG service on 127.0.0.1
(tests/openai_server.py) that puts the ``Authorization`` header it received into its answers,
its citations and one error reply; then every byte the run left is searched for the token: each
file under the run's folder (the report's compressed data block inflated, the SQLite files of
MLflow and of the cache read as they are, the MLflow artifacts), stdout and stderr.
"""

from __future__ import annotations

import base64
import gzip
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.redact import (
    REDACTED,
    header_env_names,
    header_secrets,
    override_secrets,
    redact,
    redact_override,
    secret_values,
)
from runner.results import CASES_FILE, PASSAGES_FILE
from tests.apis.conftest import CASES, KB
from tests.conftest import REPO, read_json, run_cli
from tests.helpers import read_passages
from tests.openai_server import FakeOpenAI, Scripted

TOKEN = "rag-ECHO-t0ken-5ecret-8642"
KEY = "sk-cli-SECRET-0123456789abcdef"
_PACKED = re.compile(rb'"encoding":"gzip-base64","bytes":(\d+),"data":"([A-Za-z0-9+/=]*)"')


def inflated(data: bytes) -> list[bytes]:
    """The text of every compressed data block embedded in a report (gzip in base64)."""
    out = []
    for n_bytes, block in _PACKED.findall(data):
        text = gzip.decompress(base64.b64decode(block))
        assert len(text) == int(n_bytes)
        out.append(text)
    return out


def search_tree(root: Path, secret: str) -> tuple[list[Path], list[bytes]]:
    """Every file under `root` and every compressed block inside them; fails naming the first
    file that holds `secret` in any form searched."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    blocks: list[bytes] = []
    needle = secret.encode("utf-8")
    for path in files:
        data = path.read_bytes()
        inside = inflated(data)
        blocks += inside
        for text in [data, *inside]:
            assert needle not in text, f"{secret} found in {path}"
    return files, blocks


def rag_config(tmp: Path, url: str) -> Path:
    """A config folder with ``model=my_rag``: the http adapter with its token in RAG_TOKEN."""
    conf = tmp / "conf" / "model"
    conf.mkdir(parents=True)
    (conf / "my_rag.yaml").write_text(
        "defaults: [http, _self_]\n"
        f"url: {url}/rag\n"
        "body: '{\"question\": {{ query | tojson }}}'\n"
        "citations: \"refs[].{source: doc, content: quote}\"\n"
        "answer: text\n"
        "concurrency: 1\n"
        "headers: {Authorization: \"Bearer $RAG_TOKEN\"}\n", encoding="utf-8")
    return tmp / "conf"


@pytest.mark.slow
def test_a_token_the_service_echoes_is_in_no_file_no_block_no_database_no_output(
        tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        def echo(body: dict[str, Any]) -> Any:
            auth = server.headers_seen[-1]["authorization"]  # every request carries the same
            return {"text": f"called with {auth}",
                    "refs": [{"doc": "Remote Work Policy.pdf", "quote": f"{auth}: {body}"}]}

        server.rag = echo
        # The first case's request (concurrency 1: the first in the file) fails, echoing too.
        server.script("/rag", Scripted(422, body={"detail": f"token {TOKEN} may not read"}))
        proc = run_cli(["-m", f"--config-dir={rag_config(tmp_path, server.url)}",
                        "model=my_rag", "scoring.threshold=0.3,0.5", "dataset=file",
                        f"dataset.path={CASES}", f"dataset.knowledge_base.path={KB}",
                        f"output_root={tmp_path / 'out'}", "tracking=mlflow", "report=html",
                        "report.embed=gzip", "progress=false"],
                       tmp_path, env={"RAG_TOKEN": TOKEN})
        seen = {h["authorization"] for h in server.headers_seen}
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert seen == {f"Bearer {TOKEN}"}  # the token was really sent, and echoed
    assert TOKEN not in proc.stdout and TOKEN not in proc.stderr
    assert ('ragcite: 1 of 3 cases failed and were not scored (metrics.json: failed); the '
            'first: seed-1: the service failed: HTTP 422: {"detail": "token *** may not read"}'
            in proc.stderr.splitlines())

    files, blocks = search_tree(tmp_path, TOKEN)
    names = {p.name for p in files}
    assert {CASES_FILE, PASSAGES_FILE, "report.html", "sweep.html", "metrics.json",
            "ragcite.log", "mlflow.db", "cache.sqlite"} <= names
    sweep = next((tmp_path / "out" / "sweeps").iterdir())
    (job,) = sweep.glob("0_my_rag-127.0.0.1_*_ngram")  # the system: the service's host, port
    passages = read_passages(job)
    assert [p["response"]["answer"] for p in passages] == [
        "", "called with Bearer ***", "called with Bearer ***"]
    assert passages[1]["response"]["citations"][0]["content"].startswith("Bearer ***: {")
    assert read_json(job / "t0.3" / "metrics.json")["failed"]["listed"] == [
        {"id": "seed-1", "error": 'the service failed: HTTP 422: {"detail": "token *** may not '
                                  'read"}'}]
    # The report's compressed blocks were inflated and searched: the job's one page (its two
    # thresholds' passages embedded once) and its one MLflow copy (with the job's first
    # threshold) hold the scrubbed echo; no result folder has a copy.
    assert sum(b"called with Bearer ***" in b for b in blocks) == 2
    # MLflow's artifacts were uploaded (and searched); the cache holds the scrubbed replies.
    assert any("mlartifacts" in p.parts and p.name == CASES_FILE for p in files)
    assert b"called with Bearer ***" in (tmp_path / "out" / "cache" / "cache.sqlite").read_bytes()


@pytest.mark.slow
def test_an_openai_compatible_server_echoing_the_key_leaves_it_in_no_file(
        tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        server.answer = lambda body: {
            "answer": f"key {server.headers_seen[-1]['authorization']}", "citations": []}
        proc = run_cli(["model=openai", f"model.base_url={server.v1}", "dataset=file",
                        f"dataset.path={CASES}", f"dataset.knowledge_base.path={KB}",
                        f"output_root={tmp_path / 'out'}", "tracking=none", "report=none",
                        "progress=false"], tmp_path, env={"OPENAI_API_KEY": KEY})
        seen = {h["authorization"] for h in server.headers_seen}
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert seen == {f"Bearer {KEY}"}
    assert KEY not in proc.stdout + proc.stderr
    search_tree(tmp_path, KEY)
    run = next((tmp_path / "out" / "runs").iterdir())
    assert [p["response"]["answer"] for p in read_passages(run)] == [
        "key Bearer ***"] * 3
    # Both caches (the adapter's raw replies and the responses) hold the scrubbed answer.
    assert (tmp_path / "out" / "cache" / "cache.sqlite").read_bytes().count(b"key Bearer ***") \
        == 6


def sweep_lines(stderr: str) -> list[str]:
    """Hydra's launch lines of a sweep (``\t#0 : matcher=...``)."""
    return [line for line in stderr.splitlines() if line.startswith("\t#")]


@pytest.mark.slow
def test_keys_on_the_command_line_never_reach_the_launch_lines_nor_any_file(
        tmp_path: Path) -> None:
    other = KEY.replace("SECRET", "OTHER1")
    proc = run_cli(["-m", f"+model.kwargs.api_key={KEY},{other}", "dataset=file",
                    f"dataset.path={CASES}", "model=python",
                    "model.function=tests.test_config.echo_model", "tracking=none",
                    "report=none", "progress=false", f"output_root={tmp_path / 'out'}"],
                   tmp_path, env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    tail = ("dataset=file dataset.path=" + str(CASES) + " model=python "
            "model.function=tests.test_config.echo_model tracking=none report=none "
            f"progress=False output_root={tmp_path / 'out'}")
    assert sweep_lines(proc.stderr) == [f"\t#0 : +model.kwargs.api_key=*** {tail}",
                                        f"\t#1 : +model.kwargs.api_key=*** {tail}"]
    for secret in (KEY, other):
        assert secret not in proc.stdout + proc.stderr
        search_tree(tmp_path, secret)


def test_a_config_error_echoing_a_key_shows_stars(tmp_path: Path) -> None:
    # model=openai has no `api_key` (it is `openai_api_key`): Hydra's error names the
    # override it could not apply.
    proc = run_cli(["model=openai", f"model.api_key={KEY}", f"output_root={tmp_path}"],
                   tmp_path)
    assert proc.returncode != 0
    assert "model.api_key" in proc.stderr
    assert KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize(("flags", "line"), [
    (["--cfg", "job"], "  openai_api_key: ***"),
    (["--cfg", "all"], "    - model.openai_api_key=***"),
    (["--info"], "  openai_api_key: ***"),
])
def test_cfg_and_info_print_stars_for_a_key(tmp_path: Path, flags: list[str], line: str) -> None:
    proc = run_cli(["model=openai", f"model.openai_api_key={KEY}", *flags], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert line in proc.stdout.splitlines()
    assert KEY not in proc.stdout + proc.stderr


def test_an_env_key_read_with_oc_env_is_stars_in_resolved_cfg(tmp_path: Path) -> None:
    proc = run_cli(["model=openai", "model.openai_api_key=${oc.env:MY_KEY}", "--cfg", "job",
                    "--resolve"], tmp_path, env={"MY_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    assert "  openai_api_key: ***" in proc.stdout.splitlines()
    assert KEY not in proc.stdout + proc.stderr


# --- the rule, written once in runner/redact.py ---------------------------------------------

def test_a_header_names_variables_whose_values_are_the_secrets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_TOKEN", TOKEN)
    monkeypatch.setenv("TENANT", "acme-corp")
    monkeypatch.delenv("UNSET_VAR", raising=False)
    assert header_env_names("RAG_TOKEN") == ["RAG_TOKEN"]
    assert header_env_names("Bearer $RAG_TOKEN for ${TENANT}") == ["RAG_TOKEN", "TENANT"]
    assert header_env_names("Bearer abc-123") == []
    assert header_secrets("Bearer $RAG_TOKEN") == {TOKEN}
    assert header_secrets("UNSET_VAR") == set()  # a name stays readable in error lines
    assert header_secrets("Bearer abc-123") == {"Bearer abc-123"}  # a literal value is secret
    cfg = {"model": {"headers": {"Authorization": "Bearer $RAG_TOKEN", "X-Tenant": "TENANT"},
                     "openai_api_key": "sk-config-9999", "url": "http://u:pw-1234@host/x"}}
    assert secret_values(cfg) == {TOKEN, "acme-corp", "sk-config-9999", "pw-1234"}
    assert redact(cfg) == {"model": {
        "headers": {"Authorization": REDACTED, "X-Tenant": REDACTED},
        "openai_api_key": REDACTED, "url": "http://u:***@host/x"}}


def test_a_count_of_tokens_is_a_setting_and_a_token_is_a_secret() -> None:
    identity = {"class": "my_pkg.M", "min_tokens": 2, "max_tokens": 3, "tokenizer": "words",
                "max_request_tokens": 300000, "chars_per_token": 3.0,
                "api_key": "k-1", "apiKey": "k-2",
                "token": "t-1", "access_token": "t-2", "accessToken": "t-3", "RAG_TOKEN": "t-4",
                "password": "p-1", "client_secret": "s-1", "Authorization": "Bearer b-1",
                "headers": {"X-Tenant": "acme"}}
    assert redact(identity) == {
        "class": "my_pkg.M", "min_tokens": 2, "max_tokens": 3, "tokenizer": "words",
        "max_request_tokens": 300000, "chars_per_token": 3.0,
        "api_key": REDACTED, "apiKey": REDACTED,
        "token": REDACTED, "access_token": REDACTED, "accessToken": REDACTED,
        "RAG_TOKEN": REDACTED, "password": REDACTED, "client_secret": REDACTED,
        "Authorization": REDACTED, "headers": {"X-Tenant": REDACTED}}
    assert secret_values({"tokenizer": "whitespace", "access_token": "tok-9999"}) == {"tok-9999"}
    assert redact_override("matcher.max_tokens=5") == "matcher.max_tokens=5"
    assert redact_override("+matcher.tokenizer=words") == "+matcher.tokenizer=words"
    assert redact_override("+model.access_token=tok-9999") == "+model.access_token=***"
    assert override_secrets("model.max_tokens=4096") == set()


def test_an_override_sweep_quoted_or_env_read_key_gives_each_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_TOKEN", TOKEN)
    monkeypatch.setenv("MY_KEY", "sk-from-env-777")
    assert override_secrets("model.openai_api_key=sk-aaaa,sk-bbbb") == {
        "sk-aaaa,sk-bbbb", "sk-aaaa", "sk-bbbb"}
    assert override_secrets("matcher.openai_api_key=choice(sk-aaaa,sk-bbbb)") == {
        "choice(sk-aaaa,sk-bbbb)", "sk-aaaa", "sk-bbbb"}
    assert override_secrets("+model.kwargs.password='pass word'") == {
        "'pass word'", "pass word"}
    assert override_secrets("model.openai_api_key=${oc.env:MY_KEY}") == {
        "${oc.env:MY_KEY}", "sk-from-env-777"}
    assert override_secrets("+model.headers.Authorization=Bearer $RAG_TOKEN") == {TOKEN}
    assert override_secrets("model.url=http://bob:hunter22@h/x") == {"hunter22"}
    assert override_secrets("model.openai_api_key=sk-(unbalanced") == {"sk-(unbalanced"}
    assert override_secrets("matcher.n=3") == set()
    assert redact_override("+model.headers.X=Bearer $RAG_TOKEN") == "+model.headers.X=***"
    # A list is read as overrides; too short a value is never a secret.
    assert secret_values(["model.openai_api_key=abc", "model.openai_api_key=sk-aaaa,sk-bbbb"]) \
        == {"sk-aaaa,sk-bbbb", "sk-aaaa", "sk-bbbb"}


def test_guarded_output_scrubs_prints_log_lines_and_tracebacks(tmp_path: Path) -> None:
    code = (
        "import logging, sys\n"
        "from runner.redact import guard_output, protect\n"
        f"guard_output(['model.openai_api_key={KEY}'])\n"
        "logging.basicConfig(filename='job.log', level=logging.INFO)\n"
        "logging.getLogger().addHandler(logging.StreamHandler(sys.stderr))\n"
        "protect(['later-learned-secret'])\n"
        f"print('key:', '{KEY}')\n"
        "logging.getLogger('hydra').info('#0 : %s', 'x=later-learned-secret')\n"
        "try:\n"
        f"    raise ValueError('bad key {KEY}')\n"
        "except ValueError:\n"
        "    logging.getLogger('ragcite').exception('failed')\n"
        f"raise SystemExit('ragcite: error: {KEY}')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 1
    assert proc.stdout == "key: ***\n"
    err = proc.stderr.splitlines()
    assert err[0] == "#0 : x=***"
    assert err[1] == "failed" and "ValueError: bad key ***" in err
    assert err[-1] == "ragcite: error: ***"
    log = (tmp_path / "job.log").read_text(encoding="utf-8")
    assert "INFO:hydra:#0 : x=***" in log and "ValueError: bad key ***" in log
    for text in (proc.stdout, proc.stderr, log):
        assert KEY not in text and "later-learned-secret" not in text

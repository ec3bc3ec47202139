"""A URL's password, query and fragment are secrets (issue 23, item 2).

The rule is written once (runner/redact.py::mask_uri, secret_values): every URL in a config
value or an output shows ``http://user:***@host/path?***#***``, whatever its query parameters
are called. The end-to-end test gives every URL setting distinct secrets in all three parts and
searches every byte the runs left: each file under their folders (the reports' compressed blocks
inflated, the MLflow store and the cache read as they are, the MLflow artifacts), stdout and
stderr; and checks that the service still received its URL's query and password.
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
import yaml

from runner.redact import mask_uri, redact, secret_values
from tests.apis.conftest import CASES, KB
from tests.conftest import run_cli
from tests.helpers import read_passages
from tests.openai_server import FakeOpenAI
from tests.test_secrets import search_tree

CLOSED = "127.0.0.1:9"  # nothing listens on the discard port
URLS = {"model.url (http)": "MODEL", "tracking.ui_url": "UI", "model.base_url (openai)": "CHAT",
        "matcher.base_url (embeddings)": "EMBED", "matcher.base_url (llm)": "JUDGE",
        "tracking.tracking_uri": "TRACKING", "MLFLOW_TRACKING_URI": "MLFLOWENV",
        "OPENAI_BASE_URL": "OPENAIENV"}
"""Every URL setting (config keys and environment variables) and the name of its secrets."""


def url(setting: str, host: str = CLOSED, path: str = "/v1") -> str:
    """The setting's URL: its own secrets in the password, the query and the fragment."""
    name = URLS[setting]
    return f"http://usr:pw-{name}@{host}{path}?key=q-{name}&v=1#f-{name}"


def secrets(setting: str) -> list[str]:
    return [f"{part}-{URLS[setting]}" for part in ("pw", "q", "f")]


def test_mask_uri_hides_password_query_and_fragment_of_every_url_in_a_text() -> None:
    assert mask_uri("at http://u:pw@h:9/v1?api_key=k1&x=1#frag: refused") == \
        "at http://u:***@h:9/v1?***#***: refused"
    assert mask_uri("model.url='https://h/ask?sig=abc'") == "model.url='https://h/ask?***'"
    assert mask_uri("postgresql://u:pass@db/mlflow?sslmode=require.") == \
        "postgresql://u:***@db/mlflow?***."
    assert mask_uri("http://u:pw-1@h/a,http://u:pw-2@h/b") == "http://u:***@h/a,http://u:***@h/b"
    assert mask_uri("http://h/v1 sqlite:////tmp/a/mlflow.db http://h/?") == \
        "http://h/v1 sqlite:////tmp/a/mlflow.db http://h/?"
    # The query as a whole is one secret: scrubbing it never garbles other text ("require").
    assert secret_values({"tracking": {"tracking_uri": "postgresql://u:pass@db/m?sslmode=require",
                                       "ui_url": "http://h/?o=12#/experiments"}}) == {
        "pass", "sslmode=require", "o=12", "/experiments"}
    assert secret_values(['model.url="http://h/a?t=1","http://h/b?t=2345"']) == {
        "t=2345"}  # each value of a sweep (t=1 is too short to be a secret)
    assert redact({"model": {"url": "http://h/rag?token=abcd#x", "urls": ["http://h/?k=v"]}}) \
        == {"model": {"url": "http://h/rag?***#***", "urls": ["http://h/?***"]}}


def _run(args: list[str], tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_cli(["-m", "dataset=file", f"dataset.path={CASES}",
                    f"dataset.knowledge_base.path={KB}", "progress=false", *args], tmp,
                   env={"OPENAI_BASE_URL": url("OPENAI_BASE_URL"),
                        "OPENAI_API_KEY": "sk-test-0123456789", **env})


def _reach_line(setting: str) -> str:
    return ("ragcite: error: tracking: cannot reach the MLflow tracking server at "
            f"{mask_uri(url(setting, path='/'))} ([Errno 111] Connection refused; timeout 5 s) "
            "(set tracking.required=false to run without it, or tracking=none)")


@pytest.mark.slow
def test_no_secret_of_any_url_setting_is_in_any_byte_written(tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        host = server.url.removeprefix("http://")
        server.rag = lambda body: {"text": f"asked at {server.targets[-1]}", "refs": []}
        # A scored sweep: the http service (its query holds its key), MLflow, gzip reports.
        scored = _run([f"model.url=\"{url('model.url (http)', host, '/rag')}\"", "model=http",
                       'model.citations="refs[].{source: doc, content: quote}"',
                       "model.answer=text", "scoring.threshold=0.3,0.5", "tracking=mlflow",
                       f"tracking.ui_url='{url('tracking.ui_url', path='/')}'", "report=html",
                       "report.embed=gzip", f"output_root={tmp_path / 'scored'}"], tmp_path, {})
        targets, auth = list(server.targets), {h["authorization"] for h in server.headers_seen}
        # The OpenAI components: their SDK cannot use a query in base_url (every case fails).
        chat = _run(["model=openai", f"model.base_url='{url('model.base_url (openai)', host)}'",
                     "model.max_retries=0", "matcher=embeddings",
                     f"matcher.base_url='{url('matcher.base_url (embeddings)', host)}'",
                     "tracking=mlflow", "report=html", f"output_root={tmp_path / 'chat'}"],
                    tmp_path, {})
        judge = _run(["model=precomputed", "matcher=llm", "matcher.max_retries=0",
                      f"matcher.base_url='{url('matcher.base_url (llm)', host)}'",
                      "tracking=mlflow", "report=html", f"output_root={tmp_path / 'judge'}"],
                     tmp_path, {})
    # A tracking server given by the config and by the environment, neither reachable.
    tracking_uri = url("tracking.tracking_uri", path="/")
    by_config = _run(["tracking=mlflow", f"tracking.tracking_uri='{tracking_uri}'",
                      f"output_root={tmp_path / 'uri'}"], tmp_path, {})
    by_env = _run(["tracking=mlflow", f"output_root={tmp_path / 'env'}"], tmp_path,
                  {"MLFLOW_TRACKING_URI": url("MLFLOW_TRACKING_URI", path="/")})

    assert scored.returncode == 0, scored.stderr[-3000:]
    # The service was called with its URL's query, and its password as Basic credentials.
    assert targets == ["/rag?key=q-MODEL&v=1"] * 3
    assert auth == {"Basic " + base64.b64encode(b"usr:pw-MODEL").decode()}
    (config,) = (tmp_path / "scored").rglob("t0.3/config.yaml")
    cfg = yaml.safe_load(config.read_text(encoding="utf-8"))
    assert cfg["model"]["url"] == f"http://usr:***@{host}/rag?***#***"
    assert cfg["tracking"]["ui_url"] == f"http://usr:***@{CLOSED}/?***#***"
    # The service's echo of its URL's query is scrubbed as it arrives.
    assert [p["response"]["answer"] for p in read_passages(config.parent.parent)] \
        == ["asked at /rag?***"] * 3
    # The SDK sends a base URL's query after the path it appends ("/v1/?key=...embeddings").
    first = "ragcite: error: no case could be scored: all 3 failed; the first: seed-1: "
    refused = "NotFoundError (HTTP 404): Error code: 404 - no route /v1/"
    assert chat.returncode == 3 and f"{first}openai call failed: {refused}" in \
        chat.stderr.splitlines(), chat.stderr[-3000:]
    assert judge.returncode == 3 and (f"{first}matcher failed on reference 0 / citation 0: llm "
                                      f"judge call failed: {refused}") in \
        judge.stderr.splitlines(), judge.stderr[-3000:]
    assert by_config.returncode == 2 and _reach_line("tracking.tracking_uri") in \
        by_config.stderr.splitlines(), by_config.stderr
    assert by_env.returncode == 2 and _reach_line("MLFLOW_TRACKING_URI") in \
        by_env.stderr.splitlines(), by_env.stderr

    shown = "".join(p.stdout + p.stderr for p in (scored, chat, judge, by_config, by_env))
    files, blocks = search_tree(tmp_path / "scored", "pw-MODEL")
    assert {"mlflow.db", "cache.sqlite", "multirun.yaml", "overrides.yaml", "report.html",
            "sweep.html", "metrics.json"} <= {p.name for p in files}
    # The job's one page (its two thresholds' passages embedded once) and its one MLflow copy
    # (with the job's first threshold), inflated, hold the scrubbed echo.
    assert sum(b"asked at /rag?***" in block for block in blocks) == 2
    for setting in URLS:
        for secret in secrets(setting):
            assert secret not in shown, secret
            search_tree(tmp_path, secret)

"""Fixtures of the API tests: a scripted OpenAI-compatible server on 127.0.0.1 per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.openai_server import FakeOpenAI

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai"
CASES = FIXTURES / "cases.jsonl"
KB = FIXTURES / "kb.jsonl"
KEY = "sk-test-key-0123456789"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_ambient_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's own OPENAI_BASE_URL or key must not leak into these tests.
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)

"""The embeddings matcher in a calibration, against the suite's OpenAI-compatible server on
127.0.0.1: its similarities are cached like a run's, so a second calibration makes no request."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from runner.calibration.pairs import load_pairs
from tests.calibration.conftest import FIXTURE
from tests.conftest import run_cli
from tests.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow
KEY = "sk-test-key-0123456789"
EMB = "/v1/embeddings"


@pytest.fixture
def server() -> FakeOpenAI:
    with FakeOpenAI() as srv:
        yield srv


def _calibrate(tmp_path: Path, server: FakeOpenAI, out: Path) -> dict[str, object]:
    proc = run_cli([f"calibrate.labels={FIXTURE}", "matcher=embeddings",
                    f"matcher.base_url={server.v1}",
                    "tracking=none", f"output_root={out}", f"cache.dir={tmp_path / 'cache'}"],
                   cwd=tmp_path, module="runner.calibration.app",
                   env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert KEY not in proc.stderr
    (folder,) = (out / "calibrations").iterdir()
    text = (folder / "calibration.json").read_text(encoding="utf-8")
    assert KEY not in text
    return json.loads(text)["matchers"]["embeddings"]  # type: ignore[no-any-return]


def test_a_second_calibration_makes_no_request(tmp_path: Path, server: FakeOpenAI) -> None:
    pairs = load_pairs(FIXTURE)
    texts = {t for p in pairs for t in (p.reference, p.citation)}
    first = _calibrate(tmp_path, server, tmp_path / "one")
    embedded = [t for path, body in server.bodies if path == EMB for t in body["input"]]
    assert sorted(embedded) == sorted(texts)  # each distinct text once
    assert first["cache"]["computed"] == {"similarities": 10}
    server.reset_counts()
    second = _calibrate(tmp_path, server, tmp_path / "two")
    assert server.count(EMB) == 0 and server.bodies == []
    assert second["cache"] == {"hits": {"similarities": 10}, "computed": {"similarities": 0}}
    assert second["similarities"] == first["similarities"]
    assert second["auc"] == first["auc"] and first["auc"] is not None


def _run(tmp_path: Path, server: FakeOpenAI) -> subprocess.CompletedProcess[str]:
    return run_cli([f"calibrate.labels={FIXTURE}", "matcher=embeddings",
                    f"matcher.base_url={server.v1}",
                    "matcher.max_retries=0", "tracking=none", f"output_root={tmp_path}"],
                   cwd=tmp_path, module="runner.calibration.app", env={"OPENAI_API_KEY": KEY})


def test_a_pair_that_fails_is_left_out_with_a_warning(tmp_path: Path,
                                                      server: FakeOpenAI) -> None:
    server.reject_inputs.add("fox gnu hen ibex")  # pair 10's citation (line 10)
    proc = _run(tmp_path, server)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.splitlines()[0].startswith(
        "ragcite-calibrate: 1 of 10 labelled pairs could not be scored and are left out; the "
        "first (line 10): ")
    (folder,) = (tmp_path / "calibrations").iterdir()
    m = json.loads((folder / "calibration.json").read_text(encoding="utf-8"))["matchers"]
    assert m["embeddings"]["failed_pairs"] == 1 and m["embeddings"]["n_pairs"] == 9


def test_when_no_pair_can_be_scored_the_exit_status_is_3(tmp_path: Path,
                                                         server: FakeOpenAI) -> None:
    pairs = load_pairs(FIXTURE)
    server.reject_inputs.update(p.citation for p in pairs)
    proc = _run(tmp_path, server)
    assert proc.returncode == 3, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "ragcite: error: no labelled pair could be scored: all 10 failed; the first "
        "(line 1): ")

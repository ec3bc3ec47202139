"""The packaged product: a wheel installed into a fresh venv runs the demo outside the tree."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, read_json


def _run(cmd: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.mark.slow
def test_wheel_in_fresh_venv_runs_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist),
                  str(REPO)], cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("ragcite-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    # Configs, templates and shipped data are inside the package.
    for needed in ("runner/conf/config.yaml", "runner/conf/matcher/ngram.yaml",
                   "runner/datasets/demo/cases.jsonl", "runner/cli.py"):
        assert needed in names, needed

    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    pip = _run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], cwd=tmp_path)
    assert pip.returncode == 0, pip.stderr[-3000:]

    work = tmp_path / "elsewhere"
    work.mkdir()
    proc = _run([str(venv / "bin" / "ragcite"), "model=precomputed", "progress=false"],
                cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = (work / "outputs" / "runs").iterdir()
    metrics = read_json(run / "metrics.json")
    assert metrics["n_cases"] == metrics["n_scored"] > 0
    # The installed package, not the source tree, served the run.
    where = _run([str(venv / "bin" / "python"), "-c", "import runner; print(runner.__file__)"],
                 cwd=work)
    assert str(venv) in where.stdout

"""A user's own tracker class, chosen by ``tracking._target_`` (tests/tracking/test_trackers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.results import read_result


class RecordingTracker:
    """Records every call, as a tracker of the user's own might log to their own service."""

    def __init__(self, experiment: str, output_root: str, label: str = "") -> None:
        self.settings = (experiment, output_root, label)
        self.calls: list[tuple[str, ...]] = []

    def check(self) -> None:
        self.calls.append(("check",))

    def open(self, result_dir: Path) -> str | None:
        self.calls.append(("open", result_dir.name))
        return f"https://tracker.example/{self.settings[2]}/{result_dir.name}"

    def log(self, result_dir: Path) -> None:
        value = read_result(result_dir)["threshold"]["value"]
        self.calls.append(("log", result_dir.name, f"{value:g}"))

    def close(self, status: str, result_dir: Path | None = None) -> None:
        self.calls.append(("close", status))

    def start_sweep(self, sweep_dir: Path, name: str, sweep: dict[str, Any]) -> None:
        self.calls.append(("start_sweep", name))

    def end_sweep(self, sweep_dir: Path, summary: dict[str, Any], status: str) -> None:
        self.calls.append(("end_sweep", status))


class NoSweepHooks:
    """A tracker's per-run methods without the sweep's hooks, not subclassing Tracker."""

    def __init__(self, experiment: str, output_root: str) -> None:
        pass

    def check(self) -> None:
        pass

    def open(self, result_dir: Path) -> str | None:
        return None

    def log(self, result_dir: Path) -> None:
        pass

    def close(self, status: str, result_dir: Path | None = None) -> None:
        pass


class NoSettings:
    """A class that does not take the app-level settings every tracker is built with."""

    def __init__(self) -> None:
        pass

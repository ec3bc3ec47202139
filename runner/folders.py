"""Folders a run writes to (``output_root``, ``cache.dir``) checked before any work: a path that
is, or lies under, a file is refused with one line naming the key.

:class:`OutputFolderCallback` (registered in conf/config.yaml as the Hydra callback
``hydra.callbacks.ragcite_output_folder``) checks ``output_root`` before Hydra creates the run or
sweep folder in it, which would otherwise end in a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from runner.errors import EXIT_INPUT, RagciteError


def folder_problem(path: str | Path) -> str | None:
    """What stops `path` from being (or becoming) a folder, or None when nothing does."""
    target = Path(path).expanduser()
    for candidate in (target, *target.parents):
        if candidate.is_dir():
            return None
        if candidate.exists():
            if candidate == target:
                return f"{path} is a file"
            return f"{path} is under {candidate}, which is a file"
    return None


def check_folder(key: str, path: str | Path) -> None:
    """Refuse a folder setting that is, or lies under, a file.

    Args:
        key: The config key, named in the error.
        path: Its value.

    Raises:
        RagciteError: One line: the key, what is wrong, what is allowed.
    """
    problem = folder_problem(path)
    if problem:
        raise RagciteError(f"{key}: {problem}; give a folder (created when missing)")


class OutputFolderCallback(Callback):
    """Refuse an unusable ``output_root`` before Hydra makes the run or sweep folder in it."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Check before a single run (Hydra makes the run folder next)."""
        _check_or_exit(config, "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Check before a sweep (its launcher makes the sweep folder next)."""
        _check_or_exit(config, "hydra.sweep.dir")


def _check_or_exit(config: DictConfig, folder_key: str) -> None:
    """Logging is not set up yet at this point: the one line is printed, and the process
    exits with the input status."""
    try:
        check_folder("output_root", str(config.get("output_root", ".")))
        try:  # a static folder resolves here; one naming the job's choices only in the job
            folder = OmegaConf.select(config, folder_key, throw_on_resolution_failure=True)
        except Exception:
            folder = None
        if folder:
            check_folder(folder_key, str(folder))
    except RagciteError as exc:
        print(f"ragcite: error: {exc}", file=sys.stderr)
        sys.exit(EXIT_INPUT)

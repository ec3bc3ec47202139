"""Folders a run writes to (``output_root``, ``cache.dir``) checked before any work: a path that
is, or lies under, a file is refused with one line naming the key.

:class:`OutputFolderCallback` (registered in conf/config.yaml as the Hydra callback
``hydra.callbacks.ragcite_output_folder``) checks ``output_root`` before Hydra creates the run or
sweep folder in it, which would otherwise end in a traceback.
"""

from __future__ import annotations

import argparse
import errno
import os
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
            return (f"{path} is a file" if candidate == target
                    else f"{path} is under {candidate}, which is a file")
    return None


STORAGE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}
"""What stops a write wherever it happens: a full disk or quota, a read-only file system."""


JOB_KEPT = ("the files written before it are kept, and a job folder without job.json (a sweep "
            "without sweep.json) is incomplete")
"""What a job or sweep stopped by a write keeps: ``job.json`` (``sweep.json``) is written last."""


def write_problem(exc: BaseException, kept: str = JOB_KEPT) -> str | None:
    """The line for a write the storage refused (``STORAGE_ERRORS``), or None: the file (or
    folder), why, and `kept`: what is kept."""
    if not isinstance(exc, OSError) or exc.errno not in STORAGE_ERRORS:
        return None
    # The system's words for the errno: a library's own message (pyarrow's) is longer.
    return f"cannot write {exc.filename or 'the results'}: {os.strerror(exc.errno)}; {kept}"


def check_folder(key: str, path: str | Path) -> None:
    """Refuse a folder setting that is, or lies under, a file, or that cannot be created (on a
    read-only file system, under /proc); make it.

    Args:
        key: The config key, named in the error.
        path: Its value.

    Raises:
        RagciteError: One line: the key, what is wrong, what is allowed.
    """
    if problem := folder_problem(path):
        raise RagciteError(f"{key}: {problem}; give a folder (created when missing)")
    try:
        Path(path).expanduser().mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RagciteError(f"{key}: cannot create {path}: {exc.strerror}; give a folder that "
                           "can be written") from None


def file_target(text: str) -> Path:
    """A command-line path a file is written to (argparse's ``type``): a regular file or none
    yet, in a folder or where one can be made (a folder, a FIFO or ``/dev/null`` is refused, not
    replaced).

    Raises:
        argparse.ArgumentTypeError: What the path is.
    """
    path = Path(text).expanduser()
    problem = (f"{text} is a folder" if path.is_dir() else f"{text} is not a regular file"
               if path.exists() and not path.is_file() else folder_problem(path.parent))
    if problem:
        raise argparse.ArgumentTypeError(f"{problem}; give the path of a file to write")
    return path


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
    exits with the input status (Hydra turns an exception a callback raises into a warning and
    carries on)."""
    try:
        check_folder("output_root", str(config.get("output_root", ".")))
        # A static folder resolves here; one naming the job's choices only in the job (None).
        folder = OmegaConf.select(config, folder_key, throw_on_resolution_failure=False)
        if folder:
            check_folder(folder_key, str(folder))
    except RagciteError as exc:
        print(f"ragcite: error: {exc}", file=sys.stderr)
        sys.exit(EXIT_INPUT)

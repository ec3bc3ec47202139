"""Sweep jobs on Ray or Submitit workers resolve relative paths against the launch folder.

Registered in conf/config.yaml as the Hydra callback ``hydra.callbacks.ragcite_launch_dir``.

Hydra resolves a relative ``output_root`` (and so each job's folder, the response cache and the
default ``sqlite`` tracking store) and relative dataset paths against the working directory of
the process that runs the job. With the basic and joblib launchers that is the folder
``ragcite -m`` ran in. A Ray worker, though, keeps the working directory of whoever started its
Ray node (``ray start --head`` in another folder or on another machine), and a scheduler may
start a job elsewhere too. Such jobs would write outside the sweep folder, never see the sweep's
``.ragcite/parent_run.json``, and log MLflow runs that are not children of the sweep's parent.

This callback fixes that for every launcher:

* ``on_multirun_start`` (main process): remembers the launch folder on the callback object,
  which Hydra ships to every job with the rest of its context, and makes ``hydra.sweep.dir``
  absolute, both in the sweep's config and as a Hydra override that each job's config is
  composed with (Hydra recomposes a job's config from the overrides, on the worker for
  Submitit);
* ``on_job_start`` (wherever the job runs, before the job itself): changes into the launch
  folder when it exists there and is not already the working directory; when it does not exist
  (no shared file system), it warns and leaves the working directory alone, and only absolute
  paths on storage that every node shares work.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, read_write

log = logging.getLogger("ragcite")


# Hydra's override grammar: inside quotes, a quote is escaped with a backslash, and so are the
# backslashes right before a quote or the closing quote; `\${` keeps `${` literal.
_ESCAPED = re.compile(r"(\\*)('|\$(?=\{)|\Z)")


def quote_override_value(value: str) -> str:
    """`value` as a single-quoted Hydra override value (quotes and ``${`` escaped)."""
    return "'" + _ESCAPED.sub(lambda m: m[1] * 2 + ("\\" + m[2] if m[2] else ""), value) + "'"


class LaunchDirCallback(Callback):
    """Runs every sweep job from the folder the sweep was launched in (see the module doc)."""

    launch_dir: str | None = None  # set in the main process, shipped with the callback

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Remember the launch folder and make the sweep folder absolute (main process)."""
        self.launch_dir = os.getcwd()
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if sweep_dir.is_absolute():
            return
        absolute = os.path.normpath(os.path.join(self.launch_dir, sweep_dir))
        with read_write(config.hydra):
            config.hydra.sweep.dir = absolute
            overrides = OmegaConf.select(config, "hydra.overrides.hydra")
            if overrides is not None:
                overrides.append(f"hydra.sweep.dir={quote_override_value(absolute)}")

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Change into the launch folder (in whatever process runs the job) when it exists
        there and is not already the working directory."""
        here, launch_dir = os.getcwd(), self.launch_dir
        if launch_dir is None or os.path.realpath(here) == os.path.realpath(launch_dir):
            return
        if not os.path.isdir(launch_dir):
            log.warning("ragcite: warning: this job runs on %s, which cannot see the folder the "
                        "sweep was launched from (%s): relative paths (output_root, cache.dir, "
                        "dataset paths) resolve against %s instead. Use absolute paths on "
                        "storage that every node shares.", socket.gethostname(), launch_dir, here)
            return
        os.chdir(launch_dir)
        log.debug("changed the working directory from %s to the launch folder %s", here,
                  launch_dir)

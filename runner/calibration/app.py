"""The ``ragcite-calibrate`` console script: a Hydra app around
:func:`~runner.calibration.job.run_calibration` (config: ``conf/calibrate.yaml``).

It shares ragcite's ``matcher``, ``scoring``, ``threshold`` and ``tracking`` groups, its cache and
its exit statuses (runner/errors.py): 0 done, 2 bad input or config (one line), 3 no pair could
be scored, 130 interrupted. ``-m matcher=a,b`` calibrates each matcher on the same labels and
writes a summary across them (:mod:`runner.calibration.summary`).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from runner.calibration.job import JSON_FILE, NothingScored, run_calibration
from runner.calibration.schema import register_calibrate_configs
from runner.calibration.tracking import CalibrationTracker
from runner.cli import CONFIG_PATH, front_door, job_failed
from runner.config.check import check_config
from runner.config.schema import plain_config
from runner.data.errors import DataError
from runner.errors import (
    EXIT_INPUT,
    EXIT_NOTHING_SCORED,
    RagciteError,
)
from runner.redact import env_secrets, guard_output, scrub_files, secret_values

log = logging.getLogger("ragcite")
PROG = "ragcite-calibrate"


class _Status:
    """The exit status of the calibrations this process ran (the worst)."""

    value = 0


def calibrate_into(cfg: dict[str, Any], out: Path, name: str,
                   overrides: list[str]) -> dict[str, Any]:
    """A whole calibration: the store checked, the figures, the files, the tracked run."""
    from runner.calibration.html import HTML_FILE, render_calibration

    tracker = CalibrationTracker(cfg)
    # Bad config or labels stop first; then an unusable store, still before any API call.
    data = run_calibration(cfg, out, name, overrides, before_calls=tracker.check)
    render_calibration(out)
    secrets = secret_values(cfg) | env_secrets()
    scrub_files(out, secrets)
    run_name = str(cfg.get("run_name") or f"calibrate_{name}")
    tracker.log(cfg, data, [out / JSON_FILE, out / HTML_FILE], run_name)
    return data


def _summary(data: dict[str, Any], out: Path) -> None:
    from runner.calibration.html import HTML_FILE

    for name, m in data["matchers"].items():
        def f(key: str, m: dict[str, Any] = m) -> str:
            return "n/a" if m.get(key) is None else f"{m[key]:.3f}"
        log.info("%s: AUC %s; at threshold %g: balanced accuracy %s, kappa %s; best threshold "
                 "%s (balanced accuracy %s)", name, f("auc"), m["threshold"],
                 f("balanced_accuracy"), f("kappa"), f("best_threshold"),
                 f("best_balanced_accuracy"))
        if m.get("ready"):
            log.info("use it: %s", m["ready"]["command"])
        else:
            log.warning("no threshold recommended: %s", m["withheld"])
    log.info("results: %s", out / HTML_FILE)


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="calibrate")
def _app(cfg: DictConfig) -> None:
    hc = HydraConfig.get()
    out = Path(hc.runtime.output_dir)
    overrides = list(hc.overrides.task)
    secrets = guard_output(overrides) | secret_values({"overrides": overrides}) | env_secrets()
    name = str(hc.runtime.choices.get("matcher") or "matcher")
    try:
        check_config(cfg)  # what each key allows, before any work
        data = calibrate_into(plain_config(cfg), out, name, overrides)
        _summary(data, out)
    except NothingScored as exc:
        log.error("ragcite: error: %s", exc)
        _Status.value = max(_Status.value, EXIT_NOTHING_SCORED)
    except (RagciteError, DataError) as exc:
        log.error("ragcite: error: %s", exc)
        _Status.value = max(_Status.value, EXIT_INPUT)
    except Exception as exc:
        _Status.value = max(_Status.value, job_failed(exc, out))
    finally:
        scrub_files(out / ".hydra", secrets)


def main() -> None:
    """Entry point of the ``ragcite-calibrate`` console script: ``ragcite``'s front door
    (:func:`runner.cli.front_door`), so a config error is one ``ragcite: error:`` line, exit 2."""
    register_calibrate_configs()
    front_door(_app)
    sys.exit(_Status.value)

if __name__ == "__main__":
    main()

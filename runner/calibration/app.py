"""``ragcite-calibrate``: a thin alias of ``ragcite mode=calibrate`` (docs/calibration.md)."""

from __future__ import annotations

import sys

from runner.cli import main as ragcite


def main() -> None:
    """Entry point of the ``ragcite-calibrate`` console script: ``ragcite mode=calibrate``."""
    sys.argv.insert(1, "mode=calibrate")
    ragcite()


if __name__ == "__main__":
    main()

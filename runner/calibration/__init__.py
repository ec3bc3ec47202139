"""Calibration: how well a matcher and threshold agree with people's judgments of pairs.

:mod:`~runner.calibration.pairs` reads labelled pairs (docs/calibration.md); the metric families
live in :mod:`~runner.calibration.roc` (ROC area), :mod:`~runner.calibration.confusion`
(figures at a threshold), :mod:`~runner.calibration.best` (the best threshold),
:mod:`~runner.calibration.agreement` (annotators with each other) and
:mod:`~runner.calibration.bootstrap` (seeded intervals); :mod:`~runner.calibration.figures`
puts them together and :mod:`~runner.calibration.app` is the ``ragcite-calibrate`` command.
"""

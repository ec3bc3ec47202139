"""Calibration (``ragcite mode=calibrate``): how well a matcher and threshold agree with people's
judgments of pairs.

:mod:`~runner.calibration.pairs` reads labelled pairs (docs/calibration.md; their config section
is :mod:`~runner.calibration.schema`); :mod:`~runner.calibration.job` scores them with the run's
matcher stage and cache and writes ``calibration.json``; :mod:`~runner.calibration.figures` holds
the statistics (scikit-learn's, with the project's bootstrap); :mod:`~runner.calibration.html`
the pages, and :mod:`~runner.calibration.app` the ``ragcite-calibrate`` alias; the run's tracker
logs a calibration as it logs a run (:func:`~runner.calibration.job.tracked`).
"""

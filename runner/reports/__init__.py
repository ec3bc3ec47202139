"""HTML reports rendered from results files: run, sweep and comparison.

The reports are plain readers of the files a job writes (docs/results.md): they compute no
figure, keep nothing between calls and write nothing but the report. Which reports are written
is chosen by ``report._target_`` (:func:`runner.reports.base.make_reports`).
"""

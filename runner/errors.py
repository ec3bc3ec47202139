"""ragcite's own errors: a leaf module every other module may import.

:class:`RagciteError` is an error the user can fix (bad config, bad data, an unusable store); the
command line shows it as one line and exits 2, as it does a located data error
(:class:`~runner.data.errors.DataError`). ``ragcite --help`` lists the exit statuses below
(conf/config.yaml ``hydra.help``).
"""

from __future__ import annotations

EXIT_GATE_FAILED = 1
"""Exit status: a quality gate failed (or a job of a sweep did not finish)."""
EXIT_INPUT = 2
"""Exit status: the input or config is wrong (one located line)."""
EXIT_NOTHING_SCORED = 3
"""Exit status: no case could be scored (every case failed)."""
EXIT_INTERRUPTED = 130
"""Exit status: stopped by Ctrl-C or SIGTERM."""
EXIT_BROKEN_PIPE = 141
"""Exit status: the reader of the output went away (``ragcite --help | head``), as for a Unix
tool stopped by SIGPIPE (128 + 13); nothing more is printed."""


class RagciteError(Exception):
    """An error the user can fix (bad config or data); shown as one line, no traceback."""

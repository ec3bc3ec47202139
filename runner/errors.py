"""ragcite's own errors: a leaf module every other module may import.

:class:`RagciteError` is an error the user can fix (bad config, bad data, an unusable store); the
command line shows it as one line and exits 2. :class:`~runner.data.errors.DataError` (a located
data error) is re-exported here.
"""

from __future__ import annotations

from runner.data.errors import DataError

__all__ = ["DataError", "RagciteError"]


class RagciteError(Exception):
    """An error the user can fix (bad config or data); shown as one line, no traceback."""

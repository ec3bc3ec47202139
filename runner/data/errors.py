"""Located data errors: every message names the file, the line or record, and the field."""

from __future__ import annotations


class DataError(ValueError):
    """Bad input data, located precisely.

    The message reads ``<file>, <line N|record N>, field '<field>': <what was expected>``.

    Attributes:
        path: The file the data came from.
        where: ``"line 3"`` for line-oriented formats, ``"record 3"`` otherwise (1-based).
        field: The dotted field path (``references[0].source``), or ``None`` for the whole record.
        problem: What was wrong and what was expected.
    """

    def __init__(self, path: str, where: str | None, field: str | None, problem: str) -> None:
        self.path = path
        self.where = where
        self.field = field
        self.problem = problem
        parts = (where, field and f"field '{field}'")
        super().__init__(", ".join([str(path), *filter(None, parts)]) + ": " + problem)

    def __reduce__(self) -> tuple[type[DataError], tuple[str, str | None, str | None, str]]:
        # Rebuild from the parts, so the error crosses process boundaries (joblib, Ray).
        return (DataError, (self.path, self.where, self.field, self.problem))

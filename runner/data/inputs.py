"""What `runner.evaluate` accepts: cases and responses as objects or as plain dicts.

A dict is read in the canonical shape of the data files (docs/results.md, README "Data"):
``{"id", "query", "references": [{"source", "content"}], "expected_sources", "response":
{"answer", "citations": [{"source", "content"}]}, "metadata"}``. A bad one is refused with its
place in the input: ``cases[3].references[0].source: required field is missing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from runner.data.loading import CaseIds, validation_to_data_error
from runner.data.models import Case, Response
from runner.errors import RagciteError

CaseLike = Case | Mapping[str, Any]
ResponseLike = Response | Mapping[str, Any]
_M = TypeVar("_M", Case, Response)


def _validated(model: type[_M], item: Any, where: str, keys: str,
               record: dict[str, Any] | None = None) -> _M:
    """`item` as a `model` (`record`: the dict to validate, else `item` as one), or one line
    located at `where` (``cases[3]``) naming its first problem."""
    if isinstance(item, model):
        return item
    if not isinstance(item, Mapping):
        raise RagciteError(f"{where}: expected a runner.{model.__name__} or a dict ({{{keys}}}), "
                           f"got {type(item).__name__}")
    try:
        return model.model_validate(dict(item) if record is None else record)
    except ValidationError as exc:
        err = validation_to_data_error(exc, where, "")
        raise RagciteError(f"{where}.{err.field}: {err.problem}" if err.field
                           else f"{where}: {err.problem}") from None


def iter_as_cases(items: Iterable[Any]) -> Iterator[Case]:
    """Each item (a :class:`Case` or a dict in the canonical shape) as a validated case,
    lazily, so a stream stays a stream. A dict without ``id`` gets its 1-based position, as a
    record of a file does.

    Raises:
        RagciteError: Neither a case nor a dict, a dict that is not a valid case, or an id
            met before (:class:`~runner.data.loading.CaseIds`).
    """
    ids = CaseIds()
    for index, item in enumerate(items):
        record = {"id": str(index + 1), **item} if isinstance(item, Mapping) else None
        case = _validated(Case, item, f"cases[{index}]", "'id', 'query', 'references', "
                          "'response', ...", record)
        if problem := ids.problem(case.id, f"cases[{index}]"):
            raise RagciteError(f"cases[{index}].id: {problem}")
        yield case


def as_responses(responses: Mapping[Any, Any] | Iterable[Any]) -> dict[str, Response]:
    """Responses keyed by case id, from what people have.

    Either a mapping of case id → :class:`Response` or dict ``{"answer", "citations"}``, or the
    records of a stored responses file, ``[{"id", "answer", "citations"}, ...]``. Integer ids
    become their decimal text, as integer case ids do; a record's ``id`` names its case.

    Raises:
        RagciteError: A value that is neither a response nor a valid response dict, a record
            without ``id``, an ``id`` that differs from its key, or a case id given twice
            (:class:`~runner.data.loading.CaseIds`).
    """
    if isinstance(responses, Mapping):
        items = [(key, f"responses[{key!r}]", value) for key, value in responses.items()]
    else:
        items = []
        for index, record in enumerate(responses):
            where = f"responses[{index}]"
            if not isinstance(record, Mapping) or "id" not in record:
                raise RagciteError(f"{where}: a record of a responses list needs the case "
                                   "'id' ({'id', 'answer', 'citations'}), or pass a dict "
                                   "{case id: response}")
            items.append((record["id"], where, record))
    out: dict[str, Response] = {}
    ids = CaseIds()
    for key, where, value in items:
        if problem := ids.problem(str(key), where):
            raise RagciteError(f"{where}: {problem}")
        record = dict(value) if isinstance(value, Mapping) else None
        # A stored responses record: its id must name the same case.
        if record is not None and "id" in record and str(record.pop("id")) != str(key):
            raise RagciteError(f"{where}.id: {value['id']!r} is not the case id it is "
                               f"given for ({key!r})")
        out[str(key)] = _validated(Response, value, where, "'answer', 'citations'", record)
    return out


def no_response_error(n_cases: int, responses_given: bool, first_id: str) -> RagciteError:
    """The error when none of `n_cases` cases (the first `first_id`) has a response to score."""
    cases = f"{n_cases} case{'s' if n_cases != 1 else ''}"
    if responses_given:
        return RagciteError(
            f"nothing to score: no case id is a key of responses= ({cases}, the first "
            f"{first_id!r}); key it by case id, e.g. "
            f"responses={{{first_id!r}: {{'answer': ..., 'citations': [...]}}}}")
    return RagciteError(
        f"nothing to score: no case has a 'response' ({cases}); store one in each case, "
        f"'response': {{'answer': ..., 'citations': [{{'source': ..., 'content': ...}}]}}, "
        f"or pass responses={{case id: response}}")

"""The data model of SPEC 2: cases, references, citations and responses.

All models are validated pydantic models. They are deliberately small: a case is what a test set
holds, a response is what a RAG system under test returns. The last three check what the readers
of a results folder (:mod:`runner.results`) rely on in its files.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from runner.data.citations import canonical


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


#: An id that may be given as an integer (common in foreign data), kept as its decimal text.
DECIMAL_ID = BeforeValidator(lambda v: str(v) if isinstance(v, int) and not isinstance(v, bool)
                             else v)

#: A document id or name (of a reference, a citation, a knowledge-base document, an expected
#: source): not blank.
Source = Annotated[str, AfterValidator(_not_blank)]


class _Quoted(_Model):
    """A source (not blank) and a passage of it: the fields of a reference and a citation."""

    source: Source
    content: str = ""


class Reference(_Quoted):
    """A ground-truth evidence passage.

    Attributes:
        source: Document id or name; must not be blank.
        content: The evidence passage. May be empty: an empty reference is matched by any
            citation of the same source (SPEC 4.1).
    """


class Citation(_Quoted):
    """A passage a response quotes, with the document it comes from (not blank).

    Attributes:
        claim: The answer sentence the citation supports (SPEC 2.1), when known.
        start, end: The cited span's character offsets in the document, when known; a citation
            with offsets and no content takes the knowledge base's ``text[start:end]``.
    """

    claim: str = ""
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)


class Document(_Model):
    """One document of a knowledge base (its source not blank)."""

    source: Source
    text: str


class RetrievedDocument(Document):
    """A document a system retrieved for one answer, in the order it numbered them.

    Attributes:
        id: The system's id of the document (what id markers such as ``[doc-7]`` name).
        source: The document's source (not blank).
        text: The retrieved text (a cited document's text is the citation's content).
    """

    id: str | None = None


class Response(_Model):
    """What the system under test answered for one case.

    A response may carry its citations in a shape systems emit (SPEC 2.1, docs/formats.md):
    with ``provider`` and ``raw``, the provider's module of :mod:`runner.data.citations` reads
    them; with ``documents`` and no ``citations``, the answer's markers do.

    Attributes:
        answer: The answer text.
        citations: The citations, in the order given (duplicates count twice).
        documents: The retrieved documents the answer's markers or a provider reply point at.
        provider: The provider whose reply ``raw`` is (a module of :mod:`runner.data.citations`).
        raw: The provider's reply as its API returns it.
        dangling: Markers or provider citations that point at no document (not cited).
        unread_markers: Numeric markers in the answer that were not read because ``citations``
            was given (a warning of the run); counted unless given (0 from a transform that
            read the markers itself, as ExpertQA's does).
        usage: Token counts and other usage figures (`prompt_tokens`, `completion_tokens`, ...).
        latency_s: Wall time of the call in seconds.
        error: Set when the system failed for this case; such a case is not scored.
    """

    answer: str = ""
    citations: list[Citation] = Field(default_factory=list)
    documents: list[RetrievedDocument] = Field(default_factory=list)
    provider: str | None = None
    raw: Any = None
    dangling: int = Field(default=0, ge=0)
    unread_markers: int = Field(default=0, ge=0)
    usage: dict[str, float] | None = None
    latency_s: float | None = None
    error: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_shape(cls, data: Any) -> Any:
        """Turn a citation shape into ``citations`` (:func:`runner.data.citations.canonical`);
        documents that do not validate are left to their field's located error."""
        if isinstance(data, dict) and (data.get("documents") or data.get("provider") or any(
                mark in str(data.get("answer")) for mark in "[【")):
            with suppress(ValidationError):
                return canonical(data, _DOCUMENTS.validate_python(data.get("documents") or []))
        return data


_DOCUMENTS = TypeAdapter(list[RetrievedDocument])


class Case(_Model):
    """One test case: a query with its ground truth and, optionally, a stored response.

    Attributes:
        id: Unique in the dataset.
        query: The user query.
        references: Ground-truth evidence passages (may be empty).
        expected_sources: Expected source documents; when absent, the distinct sources of
            `references` in first-seen order.
        response: A stored response (used by the `precomputed` adapter).
        metadata: Free data carried into every artifact.
    """

    id: Annotated[str, DECIMAL_ID] = Field(min_length=1)
    query: str
    references: list[Reference] = Field(default_factory=list)
    expected_sources: list[Source] = Field(default_factory=list)
    response: Response | None = None
    # An optional mapping such as `metadata: meta` yields null for a record without `meta`.
    metadata: Annotated[dict[str, Any], BeforeValidator(lambda v: {} if v is None else v)] = (
        Field(default_factory=dict))

    @model_validator(mode="before")
    @classmethod
    def _default_expected_sources(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("expected_sources") is None:
            refs = data.get("references")
            sources = [ref.get("source") if isinstance(ref, dict) else getattr(ref, "source", None)
                       for ref in (refs if isinstance(refs, list) else [])]
            data = {**data, "expected_sources": list(dict.fromkeys(
                src for src in sources if isinstance(src, str)))}
        return data


# --- the results files (docs/results.md), as their readers check them -----------------------

Unit = Annotated[float, Field(strict=True, ge=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(strict=True, ge=0)]
Section = dict[str, Any] | None


class _Threshold(BaseModel):
    value: StrictFloat | None = None
    level: StrictStr | None = None


class Figures(BaseModel):
    """What the readers of ``metrics.json`` rely on (:func:`runner.results.read_metrics`)."""

    n_cases: Count = 0
    n_scored: Count = 0
    n_errors: Count = 0
    error_rate: Unit = 0.0
    metrics: dict[str, Unit | None] = {}
    ci: dict[str, tuple[Unit, Unit] | None] = {}
    labels: dict[str, Count] = {}
    label_shares: dict[str, Unit | None] = {}
    diagnosis: StrictStr | None = None
    scored_digest: StrictStr | None = None
    bands: dict[str, StrictStr | None] = {}
    files: dict[str, StrictStr] = {}
    threshold: _Threshold | None = None
    run: Section = None
    dataset: Section = None
    model: Section = None
    matcher: Section = None
    coverage: Section = None
    dangling: dict[str, Count] | None = None

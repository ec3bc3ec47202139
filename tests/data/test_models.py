"""The data model (SPEC 2): defaults, validation and the derived expected sources."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from runner.data.models import Case, Citation, Document, Reference, Response


def test_reference_content_defaults_to_empty() -> None:
    # An empty reference passage is allowed (SPEC 4.1's tolerant edge case).
    assert Reference(source="a.pdf").content == ""


@pytest.mark.parametrize("model", [Reference, Citation, Document])
@pytest.mark.parametrize("source", ["", "   ", "\t\n"])
def test_no_source_may_be_blank(model: type, source: str) -> None:
    # One rule for every source: a reference's, a citation's and a document's.
    text = {"text": "x"} if model is Document else {"content": "x"}
    with pytest.raises(ValidationError) as exc:
        model(source=source, **text)
    assert [(e["loc"], e["msg"]) for e in exc.value.errors()] == [
        (("source",), "Value error, must not be blank")]


def test_no_expected_source_may_be_blank() -> None:
    with pytest.raises(ValidationError) as exc:
        Case(id="1", query="q", expected_sources=["a", " "])
    assert [(e["loc"], e["msg"]) for e in exc.value.errors()] == [
        (("expected_sources", 1), "Value error, must not be blank")]


def test_citation_allows_empty_content() -> None:
    cit = Citation(source="a", content="")
    assert (cit.source, cit.content) == ("a", "")


def test_models_are_frozen_and_forbid_extra_fields() -> None:
    ref = Reference(source="a", content="x")
    with pytest.raises(ValidationError):
        ref.source = "b"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Reference(source="a", content="x", page=3)  # type: ignore[call-arg]


def test_response_defaults() -> None:
    r = Response()
    assert (r.answer, r.citations, r.usage, r.latency_s, r.error) == ("", [], None, None, None)


def test_document_needs_source_and_text() -> None:
    assert Document(source="a.txt", text="").text == ""
    with pytest.raises(ValidationError):
        Document(source="", text="x")
    with pytest.raises(ValidationError):
        Document(source="a.txt")  # type: ignore[call-arg]


def test_expected_sources_default_to_distinct_reference_sources_in_first_seen_order() -> None:
    # Sources B, A, B, C -> distinct in first-seen order: B, A, C.
    case = Case(id="1", query="q", references=[
        Reference(source="B", content="1"), Reference(source="A", content="2"),
        Reference(source="B", content="3"), Reference(source="C", content="4")])
    assert case.expected_sources == ["B", "A", "C"]


def test_expected_sources_default_from_raw_dicts_and_null() -> None:
    case = Case.model_validate({"id": "1", "query": "q", "expected_sources": None,
                                "references": [{"source": "X", "content": ""}]})
    assert case.expected_sources == ["X"]


def test_explicit_expected_sources_are_kept_even_when_empty() -> None:
    # An explicit [] means "nothing expected"; it is not replaced by the reference sources.
    case = Case(id="1", query="q", references=[Reference(source="A", content="x")],
                expected_sources=[])
    assert case.expected_sources == []
    case = Case(id="1", query="q", references=[Reference(source="A", content="x")],
                expected_sources=["Z", "A"])
    assert case.expected_sources == ["Z", "A"]


def test_no_references_means_no_expected_sources() -> None:
    case = Case(id="1", query="q")
    assert (case.references, case.expected_sources, case.response, case.metadata) == (
        [], [], None, {})


def test_integer_id_becomes_its_decimal_text_but_bool_is_rejected() -> None:
    assert Case(id=42, query="q").id == "42"  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Case(id=True, query="q")  # type: ignore[arg-type]


def test_empty_id_is_rejected() -> None:
    with pytest.raises(ValidationError):
        Case(id="", query="q")


def test_null_metadata_becomes_empty_dict() -> None:
    # A mapping such as `metadata: meta` yields null for a record without `meta`.
    assert Case.model_validate({"id": "1", "query": "q", "metadata": None}).metadata == {}


def test_case_carries_a_stored_response() -> None:
    case = Case.model_validate({
        "id": "1", "query": "q",
        "response": {"answer": "a", "citations": [{"source": "S", "content": "c"}],
                     "usage": {"prompt_tokens": 10}, "latency_s": 0.5}})
    assert case.response is not None
    assert case.response.citations == [Citation(source="S", content="c")]
    assert case.response.usage == {"prompt_tokens": 10.0}
    assert case.response.latency_s == 0.5

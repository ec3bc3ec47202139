"""Provider citation objects (SPEC 2.1): each provider's ``read(raw, documents)`` on a reply
shaped like its public API reference (tests/data/providers/<provider>.json names the page).

Every expected value below is read off the fixture by hand: the two documents are
D0 = "Employees get 25 days of paid leave per year. Unused days expire at the end of March."
(leave-policy.txt) and D1 = "Travel is approved by the line manager. Receipts are due within 30
days of the trip." (travel-policy.txt).
"""

from __future__ import annotations

import copy
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from runner.data.models import RetrievedDocument

FIXTURES = Path(__file__).parent / "providers"
D0 = "Employees get 25 days of paid leave per year. Unused days expire at the end of March."
D1 = "Travel is approved by the line manager. Receipts are due within 30 days of the trip."
URL = "https://employment-social-affairs.ec.europa.eu/working-time"


def fixture(provider: str) -> dict[str, Any]:
    """A provider's fixture: its reference page, raw reply and documents."""
    data: dict[str, Any] = json.loads((FIXTURES / f"{provider}.json").read_text("utf-8"))
    return data


def docs(items: list[dict[str, Any]]) -> list[Any]:
    """The documents as the readers get them (validated)."""
    return [RetrievedDocument(**d) for d in items]


def read(provider: str, raw: Any, documents: list[dict[str, Any]]) -> tuple[list[Any], int]:
    """Run a provider's reader."""
    module = importlib.import_module(f"runner.data.citations.{provider}")
    found, dangling = module.read(raw, docs(documents))
    return found, dangling


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini", "cohere"])
def test_every_fixture_names_the_public_reference_it_follows(provider: str) -> None:
    data = fixture(provider)
    assert data["_reference"].startswith("https://")
    assert data["provider"] == provider


# --- anthropic -------------------------------------------------------------------------------

def test_anthropic_quotes_cited_text_for_its_text_block_with_the_span() -> None:
    data = fixture("anthropic")
    # Blocks 1 and 3 carry one char_location each; "Employees ... per year. " is D0[0:46] and
    # "Travel ... manager. " is D1[0:40] (Anthropic's sentence chunks keep the trailing space).
    assert read("anthropic", data["raw"], data["documents"]) == ([
        {"source": "leave-policy.txt", "content": D0[:46], "start": 0, "end": 46,
         "claim": "employees get 25 days of paid leave a year"},
        {"source": "travel-policy.txt", "content": D1[:40], "start": 0, "end": 40,
         "claim": "travel is approved by the line manager"}], 0)


def test_anthropic_without_documents_names_the_document_title() -> None:
    found, dangling = read("anthropic", fixture("anthropic")["raw"], [])
    assert ([c["source"] for c in found], dangling) == (["Leave policy", "Travel policy"], 0)


def test_anthropic_index_past_the_documents_dangles() -> None:
    data = fixture("anthropic")
    # Only D0 given: the second citation's document_index 1 points past it.
    found, dangling = read("anthropic", data["raw"], data["documents"][:1])
    assert ([c["source"] for c in found], dangling) == (["leave-policy.txt"], 1)


def test_anthropic_other_locations() -> None:
    raw = {"content": [{"type": "text", "text": "It is four weeks.", "citations": [
        {"type": "web_search_result_location", "cited_text": "at least four weeks",
         "url": URL, "title": "Working time", "encrypted_index": "Eo8BCioI"},
        {"type": "page_location", "cited_text": "four weeks of paid leave", "document_index": 0,
         "document_title": "Directive.pdf", "start_page_number": 3, "end_page_number": 4},
        {"type": "search_result_location", "cited_text": "Four weeks.", "source": "kb://leave",
         "title": "Leave", "search_result_index": 0, "start_block_index": 0,
         "end_block_index": 1}]}]}
    # A web result names its url, a search result its source; a page location has no
    # character span.
    claim = "It is four weeks."
    assert read("anthropic", raw, []) == ([
        {"source": URL, "content": "at least four weeks", "claim": claim,
         "start": None, "end": None},
        {"source": "Directive.pdf", "content": "four weeks of paid leave", "claim": claim,
         "start": None, "end": None},
        {"source": "kb://leave", "content": "Four weeks.", "claim": claim,
         "start": None, "end": None}], 0)


# --- openai ----------------------------------------------------------------------------------

TEXT = ("Employees get 25 days of paid leave a year. Travel is approved by the line manager, "
        "and the statutory minimum in the EU is four weeks.")


def test_openai_file_and_url_citations() -> None:
    data = fixture("openai")
    assert data["raw"]["output"][2]["content"][0]["text"] == TEXT
    # file_citation index 43 ends "...a year." (the sentence before it); index 82 ends
    # "...line manager" (the sentence it falls in); the url_citation spans [88, 133).
    assert read("openai", data["raw"], data["documents"]) == ([
        {"source": "leave-policy.txt", "content": D0,
         "claim": "Employees get 25 days of paid leave a year."},
        {"source": "travel-policy.txt", "content": D1,
         "claim": "Travel is approved by the line manager"},
        {"source": URL, "content": "", "claim": "the statutory minimum in the EU is four weeks"}],
        0)


def test_the_openai_fixture_is_a_reply_the_openai_library_reads() -> None:
    # The project's own dependency checks the fixture's shape field by field, and a reply
    # stored from the library (model_dump) reads the same as the raw JSON.
    from openai.types.responses import Response as OpenAIResponse

    data = fixture("openai")
    reply = OpenAIResponse.model_validate(data["raw"])
    assert reply.output_text == TEXT
    assert read("openai", reply.model_dump(mode="json"), data["documents"]) == read(
        "openai", data["raw"], data["documents"])


def test_openai_without_documents_quotes_nothing() -> None:
    found, dangling = read("openai", fixture("openai")["raw"], [])
    assert ([(c["source"], c["content"]) for c in found], dangling) == (
        [("leave-policy.txt", ""), ("travel-policy.txt", ""), (URL, "")], 0)


def test_openai_matches_a_document_by_filename_and_a_file_naming_none_dangles() -> None:
    # D0 given without its file id: found by its source, the filename; D1's file is not given.
    found, dangling = read("openai", fixture("openai")["raw"], [
        {"source": "leave-policy.txt", "text": D0}])
    assert ([(c["source"], c["content"]) for c in found], dangling) == (
        [("leave-policy.txt", D0), (URL, "")], 1)


def test_openai_file_citation_after_the_space_claims_the_sentence_before() -> None:
    text = "Leave is 25 days. Travel needs approval."
    raw = {"output": [{"type": "message", "content": [{"type": "output_text", "text": text,
           "annotations": [{"type": "file_citation", "file_id": "f", "filename": "a.txt",
                            "index": 18}]}]}]}
    # text[:18] is "Leave is 25 days. " (the space included): its last sentence is the first.
    assert read("openai", raw, []) == ([
        {"source": "a.txt", "content": "", "claim": "Leave is 25 days."}], 0)


def test_openai_skips_file_paths() -> None:
    raw = {"output": [{"type": "message", "content": [{"type": "output_text", "text": "See it.",
           "annotations": [{"type": "file_path", "file_id": "file-9", "index": 4}]}]}]}
    assert read("openai", raw, []) == ([], 0)


# --- gemini ----------------------------------------------------------------------------------

def test_gemini_segments_are_content_and_claim() -> None:
    data = fixture("gemini")
    s0 = "Employees get 25 days of paid leave per year."
    s1 = "Travel is approved by the line manager."
    assert read("gemini", data["raw"], data["documents"]) == ([
        {"source": "leave-policy.txt", "content": s0, "claim": s0},
        {"source": "travel-policy.txt", "content": s1, "claim": s1}], 0)


def test_gemini_web_chunks_and_a_dangling_index() -> None:
    raw = {"candidates": [{"groundingMetadata": {
        "groundingChunks": [{"web": {"uri": "https://vertexaisearch.cloud.google.com/x",
                                     "title": "uefa.com"}}, {"web": {"uri": "https://b.example"}}],
        "groundingSupports": [{"segment": {"endIndex": 15, "text": "Spain won 2024."},
                               "groundingChunkIndices": [0, 1, 2]}]}}]}
    # Chunk 0 has a title, chunk 1 only a uri, chunk 2 does not exist.
    seg = "Spain won 2024."
    assert read("gemini", raw, []) == ([
        {"source": "uefa.com", "content": seg, "claim": seg},
        {"source": "https://b.example", "content": seg, "claim": seg}], 1)


# --- cohere ----------------------------------------------------------------------------------

def test_cohere_sources_name_the_documents_by_cohere_ids() -> None:
    data = fixture("cohere")
    # doc:0 and doc:1 are Cohere's ids of the first and second document sent without an id.
    assert read("cohere", data["raw"], data["documents"]) == ([
        {"source": "leave-policy.txt", "content": D0, "claim": "25 days of paid leave a year"},
        {"source": "travel-policy.txt", "content": D1, "claim": "the line manager."}], 0)


def test_cohere_without_documents_reads_the_cited_documents() -> None:
    found, dangling = read("cohere", fixture("cohere")["raw"], [])
    assert ([(c["source"], c["content"]) for c in found], dangling) == (
        [("leave-policy.txt", D0), ("travel-policy.txt", D1)], 0)


def test_cohere_tool_source_without_documents_names_its_id() -> None:
    raw = {"message": {"citations": [{"start": 0, "end": 7, "text": "25 days", "sources": [
        {"type": "tool", "id": "search_kb_7f2:0", "tool_output": {"hits": 3}}]}]}}
    assert read("cohere", raw, []) == ([
        {"source": "search_kb_7f2:0", "content": "", "claim": "25 days"}], 0)


def test_cohere_source_naming_no_given_document_dangles() -> None:
    data = fixture("cohere")
    found, dangling = read("cohere", data["raw"], data["documents"][:1])
    assert ([c["source"] for c in found], dangling) == (["leave-policy.txt"], 1)


# --- a reply without its citations field ------------------------------------------------------

def _without(provider: str) -> Any:
    """The fixture's reply with its citations field removed."""
    raw = copy.deepcopy(fixture(provider)["raw"])
    if provider == "anthropic":
        for block in raw["content"]:
            block.pop("citations", None)
    elif provider == "openai":
        del raw["output"][2]["content"][0]["annotations"]
    elif provider == "gemini":
        del raw["candidates"][0]["groundingMetadata"]
    else:
        del raw["message"]["citations"]
    return raw


@pytest.mark.parametrize(("provider", "message"), [
    ("anthropic", "raw.content[0].citations: missing; text blocks with citations are read"),
    ("openai", "raw.output[2].content[0].annotations: missing; an output_text lists its "
               "citations"),
    ("gemini", "raw.candidates[0].groundingMetadata: missing; grounded replies are read"),
    ("cohere", "raw.message.citations: missing; Chat v2 replies are read (not v1's)"),
])
def test_a_reply_missing_its_citations_field_is_an_error(provider: str, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        read(provider, _without(provider), fixture(provider)["documents"])
    assert str(exc.value) == message


@pytest.mark.parametrize(("provider", "raw", "message"), [
    ("openai", {"choices": []}, "raw.output: missing; a Responses API reply is read"),
    # Cohere's v1 reply: citations with document_ids at the top level.
    ("cohere", {"text": "Hi.", "citations": [{"start": 0, "end": 3, "text": "Hi.",
                                               "document_ids": ["doc_0"]}]},
     "raw.message.citations: missing; Chat v2 replies are read (not v1's)"),
    ("anthropic", [], "raw.content[0].citations: missing; text blocks with citations are read"),
])
def test_a_reply_of_another_shape_is_an_error(provider: str, raw: Any, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        read(provider, raw, [])
    assert str(exc.value) == message


def test_a_reply_citing_nothing_has_empty_citations() -> None:
    assert read("anthropic", {"content": [{"type": "text", "text": "No idea.",
                                           "citations": None}]}, []) == ([], 0)
    assert read("cohere", {"message": {"citations": []}}, []) == ([], 0)
    assert read("gemini", {"candidates": [{"groundingMetadata": {}}]}, []) == ([], 0)

"""Rows of malformed API replies (issue 23, item 8): the real command line against the scripted
OpenAI-compatible server on 127.0.0.1, each reply right in all but one point.

A reply that cannot be trusted is an error of the pairs (or cases) that needed it, never a
score: embedding ``index`` values duplicated, missing or out of range, numbers sent as strings,
a judge's refusal, an answer that is not yes/no, log-probabilities that contradict the answer.
Usage figures that are not token counts (-5, 1e30, "12", 2.5, null) never fail a case.

The two cases: c1 cites its reference ``alpha fact`` verbatim; c2's reference is ``beta fact``
and it cites ``poison text``; the faults below touch only what concerns ``poison text`` unless
the row says "every". The embeddings matcher sends the 3 texts in one request; a reply it cannot
use is split in halves ([alpha], [beta, poison], then [beta], [poison]): 5 requests to isolate
``poison text``, 3 when every reply is bad (both halves fail alike, and the splitting stops).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bad_inputs.table import ids
from tests.bad_inputs.test_api_faults import (
    ANSWER,
    CHAT,
    EMB,
    EMBED,
    HTTP,
    JUDGE,
    NONE,
    PAIR,
    SCORED,
    SOME,
    FaultRow,
    p_yes_of_c2,
    row,
    run_fault_row,
    vectors,
)
from tests.openai_server import FakeOpenAI

POISON = "poison text"
MALFORMED = "embeddings reply is malformed: "
SCORED_LLM = SCORED.format(t=0.5, c="0.500/0.500/0.500", m=1)  # c1 matches, c2 does not
SCORED_ALL = SCORED.format(t=0.5, c="1.000/1.000/1.000", m=2)  # both cite their reference

Edit = Callable[[Any, Any], Any]


def both(*steps: Callable[[FakeOpenAI], None]) -> Callable[[FakeOpenAI], None]:
    """The set-up steps one after the other."""
    def setup(server: FakeOpenAI) -> None:
        for step in steps:
            step(server)
    return setup


def edit(path: str, change: Edit) -> Callable[[FakeOpenAI], None]:
    """Every default reply of `path` goes through `change(request body, reply)`."""
    def setup(server: FakeOpenAI) -> None:
        server.edits[path] = change
    return setup


def poison_items(change: Callable[[list[dict[str, Any]], int], None]) -> Edit:
    """An embeddings edit: `change(items, i)` where item i is the vector of ``poison text``."""
    def apply(body: Any, reply: Any) -> Any:
        if POISON in body["input"]:
            change(reply["data"], body["input"].index(POISON))
        return reply
    return apply


def every_item_twice(body: Any, reply: Any) -> Any:
    reply["data"] = [copy.deepcopy(d) for d in reply["data"] for _ in range(2)]
    return reply


def for_poison(change: Callable[[dict[str, Any]], None]) -> Edit:
    """A chat edit applied to the judgment of c2's pair (its prompt holds ``poison text``)."""
    def apply(body: Any, reply: Any) -> Any:
        if POISON in str(body["messages"]):
            change(reply)
        return reply
    return apply


def message(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def change(reply: dict[str, Any]) -> None:
        reply["choices"][0]["message"].update(fields)
    return change


def usage(**figures: Any) -> Edit:
    """Every reply's usage figures replaced."""
    def apply(body: Any, reply: Any) -> Any:
        reply["usage"].update(figures)
        return reply
    return apply


REFS = {"q1": ("A.pdf", "alpha fact"), "q2": ("B.pdf", "beta fact")}


def rag_citing_each_reference(**figures: Any) -> Callable[[FakeOpenAI], None]:
    """The RAG service cites each case's reference and reports `figures` as its usage."""
    def setup(server: FakeOpenAI) -> None:
        server.rag = lambda body: {"answer": "a", "usage": figures, "citations": [
            dict(zip(("source", "content"), REFS[body["query"]]))]}
    return setup


def model_citing_each_reference(server: FakeOpenAI) -> None:
    """The chat model (model=openai) quotes each case's reference."""
    def answer(body: Any) -> Any:
        question = re.search(r"<question>\n(.*?)\n</question>", body["messages"][-1]["content"])
        source, quote = REFS[question.group(1) if question else "?"]
        return {"answer": "a", "citations": [{"source": source, "quote": quote}]}
    server.answer = answer


ROWS = [
    # --- embeddings: index values that do not say which text a vector belongs to -----------
    row("embeddings: a duplicated index fails only the case of that text", EMBED, 0,
        SOME + PAIR + MALFORMED + "index values [0, 0] instead of 0..0, each once",
        edit(EMB, poison_items(lambda items, i: items.append(copy.deepcopy(items[i])))),
        requests=(EMB, 5)),
    row("embeddings: an index out of range", EMBED, 0,
        SOME + PAIR + MALFORMED + "index values [7] instead of 0..0, each once",
        edit(EMB, poison_items(lambda items, i: items[i].update(index=7))),
        requests=(EMB, 5)),
    row("embeddings: a missing index (one vector too few)", EMBED, 0,
        SOME + PAIR + MALFORMED + "index values [] instead of 0..0, each once",
        edit(EMB, poison_items(lambda items, i: items.pop(i))), requests=(EMB, 5)),
    row("embeddings: an index sent as a string", EMBED, 0,
        SOME + PAIR + MALFORMED + "data[0].index: input should be a valid integer, got '0'",
        edit(EMB, poison_items(lambda items, i: items[i].update(index=str(items[i]["index"])))),
        requests=(EMB, 5)),
    row("embeddings: every reply with each index twice", EMBED, 3,
        NONE + PAIR + MALFORMED + "index values [0, 0] instead of 0..0, each once",
        edit(EMB, every_item_twice), requests=(EMB, 3)),
    # --- embeddings: numbers sent as strings ------------------------------------------------
    row("embeddings: numbers sent as strings in one vector", EMBED, 0,
        SOME + PAIR + MALFORMED + "data[0].embedding[0]: input should be a valid number, "
        "got '0.0'", vectors(poison_text=["0.0", "0.0", "1.0"]),  # type: ignore[list-item]
        "matcher.encoding_format=float", requests=(EMB, 5)),
    row("embeddings: a boolean in one vector", EMBED, 0,
        SOME + PAIR + MALFORMED + "data[0].embedding[2]: input should be a valid number, "
        "got True", vectors(poison_text=[0.0, 0.5, True]),  # type: ignore[list-item]
        "matcher.encoding_format=float", requests=(EMB, 5)),
    # --- the llm judge: a reply that is not a verdict ---------------------------------------
    row("llm judge: a refusal with yes log-probabilities", JUDGE, 0,
        SOME + PAIR + "llm judge refused: 'I cannot compare these passages.'",
        both(p_yes_of_c2(0.917), edit(CHAT, for_poison(message(
            content=None, refusal="I cannot compare these passages.")))), requests=(CHAT, 2)),
    row("llm judge: answer No while the log-probabilities give yes 0.9", JUDGE, 0,
        SOME + PAIR + "llm judge reply is not a score: the judge answered no but its "
        "log-probabilities favour yes (0.900 against 0.100)",
        both(p_yes_of_c2(0.9), edit(CHAT, for_poison(message(content="No"))))),
    row("llm judge: answer Yes while the log-probabilities give no 0.8", JUDGE, 0,
        SOME + PAIR + "llm judge reply is not a score: the judge answered yes but its "
        "log-probabilities favour no (0.800 against 0.200)",
        both(p_yes_of_c2(0.2), edit(CHAT, for_poison(message(content="Yes"))))),
    row("llm judge: an answer that is neither yes nor no, with yes log-probabilities", JUDGE, 0,
        SOME + PAIR + "llm judge gave no yes/no answer: 'Perhaps'",
        both(p_yes_of_c2(0.9), edit(CHAT, for_poison(message(content="Perhaps"))))),
    # --- usage figures that are not token counts never fail a case --------------------------
    row("llm judge: completion_tokens 'abc' on every reply", JUDGE, 0, SCORED_LLM,
        edit(CHAT, usage(completion_tokens="abc")), requests=(CHAT, 2)),
    row("llm judge: prompt_tokens -5 and completion_tokens 1e30 on every reply", JUDGE, 0,
        SCORED_LLM, edit(CHAT, usage(prompt_tokens=-5, completion_tokens=1e30))),
    row("embeddings: prompt_tokens '12'", EMBED, 0,
        SCORED.format(t=0.8, c="0.500/0.500/0.500", m=1),
        both(vectors(alpha_fact=[1.0, 0.0, 0.0], beta_fact=[0.0, 1.0, 0.0],
                     poison_text=[0.0, 0.0, 1.0]), edit(EMB, usage(prompt_tokens="12"))),
        requests=(EMB, 1)),
    row("openai model: completion_tokens null and prompt_tokens 2.5 on every reply", ANSWER, 0,
        "threshold 0.5: context R/P/F1 1.000/1.000/1.000  source R/P/F1 1.000/1.000/1.000  "
        "(means over 2 scored cases, 0 failed; 2 of 2 ground-truth passages matched; the "
        "system answered 2 of the dataset's 2 cases)",
        both(model_citing_each_reference, edit(CHAT, usage(prompt_tokens=2.5,
                                                           completion_tokens=None))),
        "matcher=ngram",
        requests=(CHAT, 2)),
    row("http model: usage -5 and '12' from the service", HTTP, 0, SCORED_ALL,
        rag_citing_each_reference(prompt_tokens=-5, completion_tokens="12"),
        "model.tokens=usage", "matcher=ngram", requests=("/rag", 2)),
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


@pytest.mark.parametrize("fault", ROWS, ids=ids([f.row for f in ROWS]))
def test_row(fault: FaultRow, server: FakeOpenAI, tmp_path: Path) -> None:
    run_fault_row(fault, server, tmp_path)

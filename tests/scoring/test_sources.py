"""Source normalisation (SPEC 3): each step, the default list, order and errors."""

from __future__ import annotations

import pytest

import runner
from runner.scoring.sources import DEFAULT_STEPS, STEPS, SourceNormalizer
from tests.helpers import case


def test_default_steps() -> None:
    assert DEFAULT_STEPS == ("nfc", "strip", "collapse_whitespace", "casefold")
    assert set(STEPS) == {"nfc", "strip", "collapse_whitespace", "casefold", "basename"}


@pytest.mark.parametrize(("step", "text", "expected"), [
    ("nfc", "Re\u0300glement.pdf", "Règlement.pdf"),  # e + combining grave -> è (NFC)
    ("nfc", "ＡＢＣ.pdf", "ＡＢＣ.pdf"),  # NFC, not NFKC: full-width letters are kept
    ("strip", "  a b.pdf \n", "a b.pdf"),
    ("collapse_whitespace", "a \t\n b.pdf", "a b.pdf"),
    ("collapse_whitespace", " a  b ", " a b "),  # collapses but does not strip
    ("casefold", "Straße.PDF", "strasse.pdf"),
    ("basename", "docs/policies/A.pdf", "A.pdf"),
    ("basename", "C:\\docs\\A.pdf", "A.pdf"),
    ("basename", "https://host/x/A.pdf?version=2#page=3", "A.pdf"),
    ("basename", "docs/folder/", "folder"),  # trailing slash ignored
    ("basename", "A.pdf", "A.pdf"),
    ("basename", "/", "/"),  # nothing left: the source is kept as it is
])
def test_each_step(step: str, text: str, expected: str) -> None:
    assert SourceNormalizer([step])(text) == expected


def test_default_normaliser_applies_all_steps() -> None:
    norm = SourceNormalizer()
    # NFC composes, strip, collapse the inner run, casefold.
    assert norm("  Re\u0300glement   INTERNE.pdf ") == "règlement interne.pdf"


def test_steps_apply_in_order() -> None:
    # casefold then basename vs basename alone: the order is the configured list.
    assert SourceNormalizer(["basename", "casefold"])("Dir/A.PDF") == "a.pdf"
    # collapse before strip leaves one space at each end, which strip then removes.
    assert SourceNormalizer(["collapse_whitespace"])("  a  ") == " a "
    assert SourceNormalizer(["collapse_whitespace", "strip"])("  a  ") == "a"


def test_empty_step_list_is_identity() -> None:
    assert SourceNormalizer([])(" A.pdf ") == " A.pdf "


def test_unknown_step() -> None:
    with pytest.raises(ValueError, match=r"unknown step\(s\) \['lower'\]"):
        SourceNormalizer(["nfc", "lower"])


def test_memoised_result_is_the_same() -> None:
    norm = SourceNormalizer()
    assert norm("A.pdf") == norm("A.pdf") == "a.pdf"


@pytest.mark.parametrize(("steps", "cited", "expected_recall"), [
    # Each step makes the cited spelling equal to the expected "Policy.pdf" (1/1) or not (0/1).
    (("casefold",), "POLICY.PDF", 1.0),
    ((), "POLICY.PDF", 0.0),
    (("strip",), "  Policy.pdf ", 1.0),
    ((), "  Policy.pdf ", 0.0),
    (("basename",), "kb/docs/Policy.pdf", 1.0),
    (("nfc", "strip", "collapse_whitespace", "casefold"), "kb/docs/Policy.pdf", 0.0),
])
def test_normalisation_decides_source_metrics(steps: tuple[str, ...], cited: str,
                                              expected_recall: float) -> None:
    c = case([("Policy.pdf", "")], [(cited, "")])
    result = runner.evaluate([c], source_normalization=steps)
    m = result.cases[0].metrics
    # One expected, one cited source: recall = precision = 1 when they normalise equal, else 0.
    assert m["source_recall"] == expected_recall
    assert m["source_precision"] == expected_recall
    # The empty reference is matched only by a citation of the same (normalised) source.
    assert m["context_recall"] == expected_recall


def test_collapse_whitespace_in_evaluation() -> None:
    c = case([("Remote  Work\tPolicy.pdf", "")], [("Remote Work Policy.pdf", "")])
    assert runner.evaluate([c], source_normalization=["collapse_whitespace"]).metrics[
        "source_recall"] == 1.0
    assert runner.evaluate([c], source_normalization=[]).metrics["source_recall"] == 0.0


def test_nfc_in_evaluation() -> None:
    c = case([("Re\u0300glement.pdf", "")], [("Règlement.pdf", "")])
    assert runner.evaluate([c], source_normalization=["nfc"]).metrics["source_recall"] == 1.0
    assert runner.evaluate([c], source_normalization=[]).metrics["source_recall"] == 0.0

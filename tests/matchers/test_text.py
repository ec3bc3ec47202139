"""Text normalisation and tokenisation shared by the matchers (SPEC 4.2)."""

from __future__ import annotations

import re

import pytest

from runner.matchers.text import fold, split_ellipsis, token_ids, token_stream


def token_stretches(text: str, tokenizer: str = "auto") -> list[list[str]]:
    """The word tokens of each ellipsis-free stretch of `text`, as the `ngram` matcher sees them:
    the runs of word bytes (ASCII ``[0-9A-Za-z_]`` lower-cased, and every byte of a non-ASCII
    character) of the stream :func:`token_stream` makes, grouped by the stretches of
    :func:`token_ids` (``[]``: no word token)."""
    data, _ = token_stream([text], tokenizer)
    words = [m.group().lower().decode() for m in re.finditer(rb"[0-9A-Za-z_\x80-\xff]+", data)]
    tok = token_ids([text], tokenizer)
    assert len(words) == len(tok.ids)
    runs: list[list[str]] = []
    for i, word in enumerate(words):
        if i == 0 or tok.stretch[i] != tok.stretch[i - 1]:
            runs.append([])
        runs[-1].append(word)
    return runs


@pytest.mark.parametrize(("text", "expected"), [
    ("  The  Cat\tSAT\n", "the cat sat"),  # case folded, whitespace collapsed and stripped
    ("Straße", "strasse"),  # casefold, not lower: ß -> ss
    ("ＡＢＣ １２３", "abc 123"),  # NFKC: full-width letters and digits
    ("Cafe\u0301", "café"),  # NFKC composes e + combining acute into é
    ("ﬁle", "file"),  # NFKC: the fi ligature
    ("東京\u3000タワー", "東京 タワー"),  # ideographic space is whitespace
    ("ver\u200bba\u00adtim\u2060 \ufeffquo\u200c\u200dte", "verbatim quote"),  # invisibles go
    ("", ""),
])
def test_fold(text: str, expected: str) -> None:
    assert fold(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("a … b", ["a", "b"]),  # the single character U+2026
    ("a ... b", ["a", "b"]),  # three dots
    ("a .... b", ["a", "b"]),  # four dots are one marker
    ("a..b", ["a..b"]),  # two dots are not a marker
    ("a. b", ["a. b"]),
    ("…start and end...", ["start and end"]),  # empty parts dropped
    ("one … … two", ["one", "two"]),  # a blank part between markers is dropped
    ("...", []),
    ("no marker", ["no marker"]),
    ("a [...] b […] c . . . d", ["a", "b", "c", "d"]),  # bracketed and spaced ellipses
    ("a [..] b . . c", ["a [..] b . . c"]),  # two dots are not a marker, bracketed or spaced
])
def test_split_ellipsis(text: str, expected: list[str]) -> None:
    assert split_ellipsis(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("The cat, the HAT!", [["the", "cat", "the", "hat"]]),
    ("a b … c d", [["a", "b"], ["c", "d"]]),
    ("a b...c d....e", [["a", "b"], ["c", "d"], ["e"]]),
    ("a b..c", [["a", "b", "c"]]),  # two dots: punctuation, not a boundary
    ("snake_case x-y", [["snake_case", "x", "y"]]),  # \w includes _, not -
    ("Café…CRÈME", [["café"], ["crème"]]),
    ("１２３ ＡＢＣ", [["123", "abc"]]),  # NFKC full-width digits and letters
    ("東京タワー は 高い", [["東", "京", "タ", "ワ", "ー", "は", "高", "い"]]),  # one per char
    ("a b [...] c . . . d […] e", [["a", "b"], ["c"], ["d"], ["e"]]),
    ("ver\u200bbatim\u00ad quote", [["verbatim", "quote"]]),  # invisible characters removed
    ("RAG系统\u200b的引用 is 好", [["rag", "系", "统", "的", "引", "用", "is", "好"]]),  # mixed
    ("한국어 ภาษา ລາວ ខ្មែរ မြန်မာ", [[*"한국어", *"ภาษา", *"ລາວ", *"ខ្មែរ", *"မြန်မာ"]]),  # marks too
    ("!!! ...", []),
    ("", []),
])
def test_token_stretches(text: str, expected: list[list[str]]) -> None:
    assert token_stretches(text) == expected


@pytest.mark.parametrize(("text", "words", "chars"), [
    ("東京タワー は 高い", [["東京タワー", "は", "高い"]], [list("東京タワーは高い")]),
    ("RAG系统 is", [["rag系统", "is"]], [list("rag系统is")]),
    ("Ab_1 … é", [["ab_1"], ["é"]], [["a", "b", "_", "1"], ["é"]]),
])
def test_words_and_chars_tokenizers(text: str, words: list[list[str]],
                                    chars: list[list[str]]) -> None:
    assert token_stretches(text, "words") == words
    assert token_stretches(text, "chars") == chars


@pytest.mark.parametrize("text", [
    "The quick brown fox... jumps over_the lazy dog!", "A-B C.D ... E", "x....y", "  ",
    "Tab\tand\nnewline", "digits 123 and (brackets)",
])
def test_ascii_fast_path_equals_unicode_path(text: str) -> None:
    # Appending a non-ASCII character that is a non-word, non-space symbol forces the Unicode
    # path without changing the tokens; the results must agree.
    assert token_stretches(text + " ¤") == token_stretches(text)
    assert fold(text + "¤").removesuffix("¤").strip() == fold(text)


def test_combining_marks_stay_inside_words() -> None:
    # Python's \w leaves out combining marks (Mn/Mc): without them these words would split
    # into ह, द, भ, ष. Arabic harakat (Mn) and a Thai vowel sign (Mn) stay inside their words.
    assert token_stretches("हिंदी भाषा") == [["हिंदी", "भाषा"]]
    assert token_stretches("كَتَبَ الوَلَدُ") == [["كَتَبَ", "الوَلَدُ"]]
    assert token_stretches("กินข้าว แล้ว", "words") == [["กินข้าว", "แล้ว"]]


def test_word_table_equals_a_scan_of_every_code_point() -> None:
    # A word character is one \w matches or a combining mark (category M); the table scans
    # the marks of planes 0, 1 and 14 only, as no other plane holds one.
    import re
    import sys
    import unicodedata

    import numpy as np

    from runner.matchers.text import word_table

    marks = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c))[0] == "M"]
    assert 0x0301 in marks and 0x094D in marks and 0xE0100 in marks  # acute, virama, VS-17
    expected = np.array([re.fullmatch(r"\w", chr(c)) is not None
                         for c in range(sys.maxunicode + 1)])
    expected[marks] = True
    assert np.array_equal(word_table(), expected)
    assert word_table()[ord("é")] and word_table()[0x0301] and not word_table()[ord("…")]


@pytest.mark.parametrize(("text", "expected"), [
    ("a\u00a0b", "a b"),  # no-break space: not a word character
    ("x—y·z", "x y z"),  # em dash and middle dot
    ("é\u0301ß", "é\u0301ß"),  # letters and a combining mark stay
    ("\ud800q", " q"),  # a lone surrogate is blanked too
])
def test_blank_nonword(text: str, expected: str) -> None:
    from runner.matchers.text import _blank_nonword

    assert _blank_nonword(text) == expected

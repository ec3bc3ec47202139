"""Text normalisation and tokenisation shared by the passage matchers (SPEC 4.2).

The ASCII fast paths give exactly the same result as the general Unicode path: for ASCII text
NFKC is the identity, case folding is ``lower()``, ``\\w`` matches ``[A-Za-z0-9_]``, ``\\s``
matches what ``str.split()`` splits on, and the only ellipsis marker is a run of three or more
dots. ``tests/matchers/test_ngram_reference.py`` checks this against a plain implementation.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# An ellipsis marker: the single character "…" or three or more dots.
ELLIPSIS = re.compile(r"…|\.{3,}")
_DOTS = re.compile(r"\.{3,}")
_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")


def _ascii_table(keep: str = "") -> dict[int, str]:
    # ASCII letters to lower case, other non-word characters to spaces (except those in `keep`).
    table: dict[int, str] = {}
    for c in range(128):
        ch = chr(c)
        if ch in keep:
            continue
        if "A" <= ch <= "Z":
            table[c] = ch.lower()
        elif not (ch.isalnum() or ch == "_"):
            table[c] = " "
    return table


# One pass of str.translate lower-cases and blanks the non-word characters; str.split() then
# yields the \w+ tokens. A 1:1 ASCII table keeps CPython's fast translate path.
_ASCII_TOKENS = str.maketrans(_ascii_table())

TEXT_MARK = "\x01"
"""Marker token before each text in :func:`token_stream` (never a word token)."""
BREAK_MARK = "\x02"
"""Marker token at each ellipsis in :func:`token_stream` (never a word token)."""
_STREAM_TOKENS = str.maketrans(_ascii_table(keep=TEXT_MARK + BREAK_MARK))


def fold(text: str) -> str:
    """NFKC-normalise, case-fold and collapse whitespace (the `substring` normalisation)."""
    if text.isascii():
        return " ".join(text.lower().split())
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def split_ellipsis(text: str) -> list[str]:
    """Split a passage on ellipsis markers, dropping parts that are empty after stripping."""
    if "..." not in text and "…" not in text:
        stripped = text.strip()
        return [stripped] if stripped else []
    return [part.strip() for part in ELLIPSIS.split(text) if part.strip()]


def token_stretches(text: str) -> list[list[str]]:
    """Word tokens of each ellipsis-free stretch of `text`, NFKC-normalised and case-folded.

    Empty stretches are dropped, so ``[]`` means the text has no word token at all.
    """
    if text.isascii():
        if "..." not in text:
            toks = text.translate(_ASCII_TOKENS).split()
            return [toks] if toks else []
        out = []
        for part in _DOTS.split(text):
            toks = part.translate(_ASCII_TOKENS).split()
            if toks:
                out.append(toks)
        return out
    norm = unicodedata.normalize("NFKC", text).casefold()
    out = []
    for part in ELLIPSIS.split(norm):
        toks = _WORD.findall(part)
        if toks:
            out.append(toks)
    return out


def token_stream(texts: Iterable[str]) -> tuple[list[str], list[str]]:
    r"""Tokenise many texts at once into one flat token list (the batch form of
    :func:`token_stretches`, with the same tokens).

    Returns:
        ``(order, tokens)``: the texts in stream order, and their tokens, each text's tokens
        preceded by :data:`TEXT_MARK` and each ellipsis shown as :data:`BREAK_MARK`. Between two
        marks are exactly the tokens of one stretch of :func:`token_stretches` (or none).

    ASCII texts are joined and tokenised in one ``translate``/``split`` pass, several times
    faster than one regex call per text. Other texts are NFKC-normalised and case-folded one by
    one, then tokenised the same way; only a piece that still holds a non-ASCII character after
    the split goes through the ``\w+`` regex (ASCII non-word characters and whitespace are
    never part of a ``\w`` token, so splitting on them first changes nothing).
    """
    fast: list[str] = []
    slow: list[str] = []
    for text in texts:
        (fast if text.isascii() else slow).append(text)
    odd: list[str] = []  # texts holding a marker character themselves (pathological input)
    sep = f" {TEXT_MARK} "
    brk = f" {BREAK_MARK} "
    tokens: list[str] = []
    if fast:
        big = sep.join(fast)
        if big.count(TEXT_MARK) != len(fast) - 1 or BREAK_MARK in big:
            odd = [t for t in fast if TEXT_MARK in t or BREAK_MARK in t]
            fast = [t for t in fast if TEXT_MARK not in t and BREAK_MARK not in t]
            big = sep.join(fast)
        if fast:
            big = sep + big
            if "..." in big:
                big = big.replace("...", brk)
            tokens = big.translate(_STREAM_TOKENS).split()
    if slow:
        norm = [unicodedata.normalize("NFKC", t).casefold() for t in slow]
        big = sep.join(norm)
        if big.count(TEXT_MARK) != len(slow) - 1 or BREAK_MARK in big:
            keep = [TEXT_MARK not in t and BREAK_MARK not in t for t in norm]
            odd += [t for t, ok in zip(slow, keep) if not ok]
            slow = [t for t, ok in zip(slow, keep) if ok]
            big = sep.join(t for t, ok in zip(norm, keep) if ok)
        if slow:
            big = sep + big
            if "..." in big:
                big = big.replace("...", brk)
            append, extend, findall = tokens.append, tokens.extend, _WORD.findall
            for piece in big.translate(_STREAM_TOKENS).split():
                if piece.isascii():
                    append(piece)
                else:
                    extend(findall(piece))
    for text in odd:
        tokens.append(TEXT_MARK)
        for i, stretch in enumerate(token_stretches(text)):
            if i:
                tokens.append(BREAK_MARK)
            tokens.extend(stretch)
    return fast + slow + odd, tokens

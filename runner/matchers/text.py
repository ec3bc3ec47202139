"""Text normalisation and tokenisation shared by the passage matchers (SPEC 4.2).

The ASCII fast paths give exactly the same result as the general Unicode path: for ASCII text
NFKC is the identity, case folding is ``lower()``, and ``\\w`` matches ``[A-Za-z0-9_]``.
"""

from __future__ import annotations

import re
import unicodedata

# An ellipsis marker: the single character "…" or three or more dots.
ELLIPSIS = re.compile(r"…|\.{3,}")
_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")
# ASCII characters that are not word characters become spaces; then str.split() tokenises.
_ASCII_NONWORD = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")})


def fold(text: str) -> str:
    """NFKC-normalise, case-fold and collapse whitespace (the `substring` normalisation)."""
    if text.isascii():
        return " ".join(text.lower().split())
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def split_ellipsis(text: str) -> list[str]:
    """Split a passage on ellipsis markers, dropping parts that are empty after stripping."""
    return [part.strip() for part in ELLIPSIS.split(text) if part.strip()]


def token_stretches(text: str) -> list[list[str]]:
    """Word tokens of each ellipsis-free stretch of `text`, NFKC-normalised and case-folded.

    Empty stretches are dropped, so ``[]`` means the text has no word token at all.
    """
    if text.isascii():
        low = text.lower()
        parts = ELLIPSIS.split(low) if ".." in low else (low,)
        out = []
        for part in parts:
            toks = part.translate(_ASCII_NONWORD).split()
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

"""Text normalisation and tokenisation shared by the passage matchers (SPEC 4.2).

Tokens are the runs of word characters of the NFKC-normalised, case-folded text: ``\\w`` plus
the combining marks (Unicode category M), which Python's ``\\w`` leaves out although they are
part of words in Devanagari, Thai, Arabic with diacritics and other scripts (``हिंदी`` is one
token, not ``ह`` and ``द``). With the tokenizer ``auto`` (the default), each word character of
the scripts written without spaces between words (Han, Hiragana, Katakana, Hangul, Thai, Lao,
Khmer, Myanmar: :data:`CHAR_BLOCKS`) is a token of its own, in the same pass; ``words`` keeps
runs of them whole, ``chars`` makes every word character a token. Invisible format characters
(:data:`INVISIBLE`) are removed first. An ellipsis (``…``, three or more dots, ``. . .``, or
either in square brackets) separates stretches that no n-gram crosses.

The fast paths give exactly the same result as the plain Unicode path: for ASCII text NFKC is
the identity, case folding is ``lower()``, ``\\w`` matches ``[A-Za-z0-9_]``, and the only
ellipsis marker is a run of three or more dots (whitespace is what ``str.split()`` splits on),
and no character of :data:`CHAR_BLOCKS` or :data:`INVISIBLE` occurs.
``tests/matchers/test_ngram_reference.py`` checks this against a literal implementation.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# An ellipsis marker: "…", three or more dots or ". . .", or "[…]" / "[...]".
ELLIPSIS = re.compile(r"\[(?:…|\.{3})\]|…|\.{3,}|\.(?: \.){2,}")

INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\u00ad\ufeff]")
"""Invisible format characters, removed before matching: zero-width space, non-joiner and
joiner, word joiner, soft hyphen, byte order mark."""

TOKENIZERS = ("auto", "words", "chars")
"""``matcher.tokenizer``: which characters are tokens of their own (module docstring)."""

CHAR_BLOCKS = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1100, 0x11FF), (0x1780, 0x17FF),
               (0x19E0, 0x19FF), (0x2E80, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
               (0xA960, 0xA97F), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F), (0xAC00, 0xD7FF),
               (0xF900, 0xFAFF), (0xFF66, 0xFFDC), (0x1B000, 0x1B16F), (0x20000, 0x3FFFF))
"""The Unicode blocks (first, last) of Thai, Lao, Myanmar, Hangul, Khmer, the CJK radicals,
kana, Bopomofo and ideographs, their extensions and half-width forms (Blocks.txt)."""

# Combining marks (Unicode category M) only occur in planes 0, 1 and 14: planes 2-3 hold CJK
# ideographs, 4-13 are unassigned and 15-16 are private use. Scanning just these three planes
# is exact (tests/matchers/test_text.py checks it against a scan of every code point).
_MARK_PLANES = (range(0x0000, 0x20000), range(0xE0000, 0xF0000))


@functools.cache
def word_table() -> np.ndarray:
    """``table[c]`` is True when code point c is a word character (``\\w`` or category M).

    Built once (a few hundredths of a second): the ``\\w`` regex runs over one string of every
    code point, and the combining marks of planes 0, 1 and 14 are set on top.
    """
    every = np.arange(sys.maxunicode + 1, dtype="<u4").tobytes().decode("utf-32-le",
                                                                       "surrogatepass")
    table = np.zeros(sys.maxunicode + 1, dtype=bool)
    for run in re.finditer(r"\w+", every):
        table[run.start():run.end()] = True
    category = unicodedata.category
    table[[c for plane in _MARK_PLANES for c in plane if category(chr(c))[0] == "M"]] = True
    return table


@functools.cache
def split_table(tokenizer: str) -> np.ndarray | None:
    """``table[c]`` is True when code point c is a token of its own under `tokenizer`."""
    if tokenizer != "auto":
        return word_table() if tokenizer == "chars" else None
    table = np.zeros_like(word_table())
    for first, last in CHAR_BLOCKS:
        table[first:last + 1] = True
    return table & word_table()


def _blank_nonword(text: str, split: np.ndarray | None = None) -> str:
    """`text` with every non-ASCII character that is not a word character replaced by a space,
    and a space either side of every character c where ``split[c]``.

    A table lookup per code point instead of a regex.
    """
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    high = np.flatnonzero(codes >= 128)  # only these can need blanking: look up just them
    blank = high[~word_table()[codes[high]]]
    at = np.flatnonzero(split[codes]) if split is not None else blank[:0]
    if not len(blank) and not len(at):
        return text
    codes = codes.copy()
    codes[blank] = 32
    return np.insert(codes, np.concatenate([at, at + 1]), 32).tobytes().decode("utf-32-le")


def fold(text: str) -> str:
    """NFKC-normalise, case-fold and collapse whitespace (the `substring` normalisation)."""
    if text.isascii():
        return " ".join(text.lower().split())
    return " ".join(unicodedata.normalize("NFKC", INVISIBLE.sub("", text)).casefold().split())


def split_ellipsis(text: str) -> list[str]:
    """Split a passage on ellipsis markers, dropping parts that are empty after stripping."""
    if "..." not in text and "…" not in text and ". . ." not in text:
        stripped = text.strip()
        return [stripped] if stripped else []
    return [part.strip() for part in ELLIPSIS.split(text) if part.strip()]


# --- Many texts at once, as integer token ids (the `ngram` matcher's hot path) ---------------

_TEXT_MARK = 1  # byte before each text in the stream
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))
_U8 = np.uint8


@dataclass
class TokenIds:
    """The tokens of many texts as integers.

    Texts are laid out one after the other in the order ``order`` (stream position → index of
    the text in the input); a text's tokens are contiguous.

    Attributes:
        ids: Token id of each token; equal ids ⇔ equal tokens (ids are 0 .. n_ids - 1).
        stretch: Number of each token's ellipsis-free stretch: two tokens have the same number
            iff they are in the same stretch of the same text.
        first: For each stream position, the index (into ``ids``) of that text's first token;
            its tokens run up to the next position's first token.
        order: For each stream position, the index of the text in the input.
        n_ids: Number of distinct tokens.
    """

    ids: np.ndarray
    stretch: np.ndarray
    first: np.ndarray
    order: np.ndarray
    n_ids: int


def _joined(parts: Sequence[str]) -> str:
    # The parts separated by the text mark; a mark inside a part (never a word character)
    # becomes a space first.
    big = "\x01".join(parts)
    if big.count("\x01") != len(parts) - 1:
        big = "\x01".join(p.replace("\x01", " ") for p in parts)
    return big


def token_stream(texts: Sequence[str], tokenizer: str = "auto") -> tuple[bytes, np.ndarray]:
    """All texts as one UTF-8 byte stream, each after the mark ``\\x01``, and their order.

    ASCII texts come first, as they are (``chars`` excepted); then the others, without
    invisible characters, NFKC-normalised and case-folded, with their non-ASCII non-word
    characters blanked, so every byte of a remaining non-ASCII character is part of a word, and
    the characters that are tokens of their own (:func:`split_table`) between spaces. A mark
    inside a text becomes a space; ``. . .`` becomes ``...``.

    Returns:
        ``(stream, order)``: ``order[p]`` is the index in `texts` of the p-th text of the stream.
    """
    ascii_text = np.fromiter(map(str.isascii, texts), dtype=bool, count=len(texts))
    ascii_text &= tokenizer != "chars"
    plain: list[int] = np.flatnonzero(ascii_text).tolist()
    other: list[int] = np.flatnonzero(~ascii_text).tolist()
    data = b"\x01"
    if plain:
        big = _joined(texts if not other else [texts[i] for i in plain])
        data += big.replace(". . .", "...").encode("ascii")
    if other:  # normalised at once: "\x01" is stable under NFKC and case folding
        big = INVISIBLE.sub("", _joined([texts[i] for i in other]))
        norm = unicodedata.normalize("NFKC", big).casefold().replace(". . .", "...")
        data += (b"\x01" if plain else b"") + _blank_nonword(norm, split_table(tokenizer)).encode()
    return data, np.array(plain + other, dtype=np.int64)


def token_ids(texts: Sequence[str], tokenizer: str = "auto") -> TokenIds:
    """Tokenise many texts at once into the word tokens (``\\w`` plus combining
    marks; single characters as `tokenizer` says) of each ellipsis-free stretch.

    All texts go into one UTF-8 byte buffer (:func:`token_stream`). Numpy then finds the
    tokens (runs of word bytes) and the stretch breaks (runs of three or more dots: NFKC turns
    "…" into "..."), lower-cases the ASCII letters, and numbers the distinct tokens: each token
    is packed into 8-byte words, hashed, and grouped by hash, and every token is compared byte
    for byte with the first token of its group, so the ids are exact; a false group (never
    seen) falls back to a dict.
    """
    data, order = token_stream(texts, tokenizer)
    buf = np.frombuffer(data, dtype=np.uint8)
    # Word bytes: [0-9A-Za-z_] and every byte of a non-ASCII character (uint8 arithmetic wraps).
    word = ((buf | _U8(32)) - _U8(97)) < _U8(26)
    word |= (buf - _U8(48)) < _U8(10)
    word |= buf == _U8(95)
    word |= buf >= _U8(128)
    edges = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    # Token index at which each text, and each stretch, begins.
    text_at = np.flatnonzero(buf == _U8(_TEXT_MARK))
    first = np.searchsorted(starts, text_at)
    breaks = first
    if b"..." in data:
        dot = buf == _U8(46)
        dots = np.flatnonzero(dot[:-2] & dot[1:-1] & dot[2:])
        breaks = np.sort(np.concatenate([first, np.searchsorted(starts, dots)]))
    stretch = np.zeros(len(starts) + 1, dtype=np.int64)
    np.add.at(stretch, breaks, 1)
    stretch = np.cumsum(stretch[:-1])
    ids, n_ids = _exact_ids(buf, starts, ends)
    if ids is None:  # two different tokens grouped together
        ids, n_ids = _dict_ids(buf, starts, ends)
    return TokenIds(ids=ids, stretch=stretch, first=first, order=order, n_ids=n_ids)


def _exact_ids(buf: np.ndarray, starts: np.ndarray,
               ends: np.ndarray) -> tuple[np.ndarray | None, int]:
    """Dense ids of the lower-cased tokens buf[starts:ends], or None on a hash collision."""
    n_tok = len(starts)
    if n_tok == 0:
        return np.zeros(0, dtype=np.int64), 0
    # ASCII lower case: add 32 to the bytes of A-Z; 8 zero bytes after the end.
    padded = np.zeros(len(buf) + 8, dtype=np.uint8)
    padded[:len(buf)] = buf + (((buf - _U8(65)) < _U8(26)).view(np.uint8) << _U8(5))
    # Little-endian 8-byte words starting at every byte offset (unaligned view, no copy).
    words = np.ndarray((len(buf) + 1,), dtype="<u8", buffer=padded, strides=(1,))
    length = ends - starts
    first_word = words[starts] & _MASKS[np.minimum(length, 8)]
    h = first_word * _MIX[0] + length.astype(np.uint64)
    more: list[tuple[np.ndarray, np.ndarray]] = []
    for k in range(8, int(length.max()), 8):  # the tokens longer than k bytes
        sel = np.flatnonzero(length > k)
        word = words[starts[sel] + k] & _MASKS[np.minimum(length[sel] - k, 8)]
        h[sel] = (h[sel] ^ word) * _MIX[1]
        more.append((sel, word))
    h ^= h >> np.uint64(31)
    h *= _MIX[2]
    h ^= h >> np.uint64(29)
    # Group equal hashes with one plain sort: the top bits of the hash above the token's index
    # (a full argsort is several times slower). Truncating the hash only risks a false group,
    # which the check below catches.
    bits = max(n_tok - 1, 1).bit_length()
    mask = np.uint64((1 << bits) - 1)
    order = np.sort((h & ~mask) | np.arange(n_tok, dtype=np.uint64))
    index = (order & mask).astype(np.int64)
    new_group = np.empty(n_tok, dtype=bool)
    new_group[0] = True
    np.not_equal(order[1:] >> np.uint64(bits), order[:-1] >> np.uint64(bits), out=new_group[1:])
    inv = np.empty(n_tok, dtype=np.int64)
    inv[index] = np.cumsum(new_group) - 1
    n_ids = int(inv.max()) + 1
    # The first token of each group (in sorted order); every token must equal it.
    rep = index[np.flatnonzero(new_group)][inv]
    if not (np.array_equal(length[rep], length) and np.array_equal(first_word[rep], first_word)):
        return None, 0
    for sel, word in more:
        full = np.zeros(n_tok, dtype=np.uint64)
        full[sel] = word
        if not np.array_equal(full[rep[sel]], word):
            return None, 0
    return inv, n_ids


def _dict_ids(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, int]:
    # The slow exact path: token bytes from the same offsets, numbered by a dict.
    data = buf.tobytes()
    vocab: dict[bytes, int] = {}
    ids = [vocab.setdefault(data[a:b].lower(), len(vocab))
           for a, b in zip(starts.tolist(), ends.tolist())]
    return np.array(ids, dtype=np.int64), len(vocab)

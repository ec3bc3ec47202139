"""Build data/calibration/pairs_zh_ja.jsonl: labelled pairs cut from hand-written Chinese and
Japanese paragraphs (data/calibration/paragraphs_zh_ja.txt, CC0) by a positional rule, the way
bench/make_calibration_pairs.py cuts the English set (data/calibration/SOURCE.md).
Deterministic for its seed:

    .venv/bin/python bench/make_calibration_pairs_zh_ja.py            # rewrites the shipped file
    .venv/bin/python bench/make_calibration_pairs_zh_ja.py --check    # exits 1 if it would differ

A paragraph is its sentences joined without spaces (as these scripts are written); every passage
is a set of its character positions. Every sentence of every paragraph is a *reference*, with
eight citations:

- ``exact``: the reference itself;
- ``truncated``: a prefix or suffix of the reference (40-80 % of it, cut mid-clause: not next
  to punctuation);
- ``elided``: the reference with a middle stretch (20-40 %) replaced by an ellipsis written
  ``…``, ``……``, ``[…]``, ``[...]`` or ``. . .``;
- ``changed``: the reference with one character (not punctuation, not the first or last)
  replaced by a character of another paragraph;
- ``invisible``: the reference with a zero-width space, word joiner or soft hyphen inside;
- ``rechunked``: a stretch as long as the reference, moved by 20-60 % of its length across a
  sentence boundary (into the next sentence, or the one before for a paragraph's last);
- ``other_sentence``: another sentence of the same paragraph;
- ``other_paragraph``: a sentence of another paragraph in the same language.

The label is true when the two position sets overlap by at least half of the shorter one:
``|R ∩ C| >= ½ min(|R|, |C|)`` (a changed or invisible citation keeps its span's positions; an
ellipsis has none; another paragraph's sentence shares none).
"""

from __future__ import annotations

import random
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "data" / "calibration" / "paragraphs_zh_ja.txt"
OUT = REPO / "data" / "calibration" / "pairs_zh_ja.jsonl"
SEED = 26

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_calibration_pairs import cli  # noqa: E402 - the same command line as the English set

ELLIPSES = ("…", "……", "[…]", "[...]", ". . .")
INVISIBLE = ("\u200b", "\u2060", "\u00ad", "\u200d")

Paragraph = tuple[str, str, list[str]]  # (language, title, sentences)


def paragraphs() -> list[Paragraph]:
    """The paragraphs of the source file, in order."""
    out: list[Paragraph] = []
    for line in SOURCE.read_text("utf-8").splitlines():
        if line.startswith("## "):
            lang, title = line[3:].split(" ", 1)
            out.append((lang, title, []))
        elif line.strip() and not line.startswith("#"):
            out[-1][2].append(line.strip())
    return out


def _punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PZS"


def _mid_clause(rng: random.Random, text: str, a: int, b: int) -> int:
    """A cut position in [a, b] with no punctuation on either side (or a if there is none)."""
    options = [i for i in range(a, b + 1) if 0 < i < len(text)
               and not _punct(text[i - 1]) and not _punct(text[i])]
    return rng.choice(options) if options else a


def citations(rng: random.Random, text: str, a: int, b: int, spans: list[tuple[int, int]],
              foreign: str) -> Iterator[tuple[str, str, set[int]]]:
    """(kind, citation, its positions) for the reference text[a:b] of a paragraph."""
    n = b - a
    yield "exact", text[a:b], set(range(a, b))
    if rng.random() < 0.5:  # a prefix or a suffix, cut between two letters
        lo, hi = a, _mid_clause(rng, text, a + int(0.4 * n), a + int(0.8 * n))
    else:
        lo, hi = _mid_clause(rng, text, a + int(0.2 * n), a + int(0.6 * n)), b
    yield "truncated", text[lo:hi], set(range(lo, hi))
    lo = _mid_clause(rng, text, a + int(0.2 * n), a + int(0.4 * n))
    hi = _mid_clause(rng, text, lo + int(0.2 * n), min(lo + int(0.4 * n), b - 1))
    yield ("elided", text[a:lo] + rng.choice(ELLIPSES) + text[hi:b],
           set(range(a, lo)) | set(range(hi, b)))
    letters = [i for i in range(a + 1, b - 1) if not _punct(text[i])]
    i = rng.choice(letters)
    new = rng.choice([c for c in foreign if not _punct(c) and c not in text])
    yield "changed", text[a:i] + new + text[i + 1:b], set(range(a, b))
    i = rng.choice(letters)
    yield "invisible", text[a:i] + rng.choice(INVISIBLE) + text[i:b], set(range(a, b))
    shift = int(n * rng.uniform(0.2, 0.6)) * (1 if b < len(text) else -1)
    sa, sb = max(a + shift, 0), min(b + shift, len(text))
    yield "rechunked", text[sa:sb], set(range(sa, sb))
    oa, ob = rng.choice([s for s in spans if s != (a, b)])
    yield "other_sentence", text[oa:ob], set(range(oa, ob))


def build(seed: int = SEED) -> list[dict[str, object]]:
    """Every pair, paragraph by paragraph, sentence by sentence."""
    rng = random.Random(seed)
    paras = paragraphs()
    out: list[dict[str, object]] = []
    for lang, title, sentences in paras:
        text = "".join(sentences)
        spans, pos = [], 0
        for s in sentences:
            spans.append((pos, pos + len(s)))
            pos += len(s)
        others = [p for p in paras if p[0] == lang and p[1] != title]
        for k, (a, b) in enumerate(spans):
            other = rng.choice(others)
            found = list(citations(rng, text, a, b, spans, "".join(other[2])))
            found.append(("other_paragraph", rng.choice(other[2]), set()))
            for kind, citation, positions in found:
                ref = set(range(a, b))
                shorter = min(len(ref), len(positions) or len(citation))
                overlap = len(ref & positions)
                out.append({"reference": text[a:b], "citation": citation,
                            "label": 2 * overlap >= shorter, "reference_source": title,
                            "citation_source": other[1] if kind == "other_paragraph" else title,
                            "case_id": f"{lang}-{title}-{k + 1}",
                            "note": f"{kind}: overlap {overlap} of the shorter passage's "
                                    f"{shorter} characters"})
    return out


def main() -> int:
    return cli(build, OUT, SEED, __doc__ or "")

if __name__ == "__main__":
    sys.exit(main())

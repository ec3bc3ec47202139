"""Seeded generator of synthetic ragcite cases for benchmarks and property tests.

Each case has `refs` ground-truth passages of about `words` words from one to three documents,
and a stored response with `cits` citations drawn from a mix of kinds, so that similarities span
[0, 1] and every citation and reference label occurs:

* ``exact``: a verbatim copy of a reference (sometimes re-cased or with other whitespace);
* ``paraphrase``: a reference with a random share of its words replaced, dropped or inserted;
* ``truncated``: a contiguous stretch of a reference;
* ``ellipsis``: two or three stretches of a reference joined by ``...``, ``…`` or ``....``;
* ``same_doc``: another passage of an expected document (a wrong passage);
* ``other_doc``: a passage of a document that is not expected (sometimes a copy of a
  reference under another name, as when a document exists twice);
* ``empty``: a citation without content.

The text is English-ish: a Zipf-distributed vocabulary of a few thousand words (common English
words first, then pronounceable made-up words, a few with accents, ligatures or ``ß`` so the
Unicode path of the matchers is exercised), in capitalised sentences with commas and full stops.

Generation is deterministic for a seed, and prefix-stable: the first k cases of
``generate_cases(n, seed)`` are the same for every n >= k. It runs at several tens of thousands of
cases per second (word draws are vectorised with numpy, in chunks).

Profiles (``--profile``): ``standard`` (the default: 3 references and 3 citations of ~40 words)
and ``small`` (1 reference and 1 citation of ~8 words: the smallest realistic case, for the
memory benchmark of a million cases); ``--refs``/``--cits``/``--words`` override a profile.

Usage::

    python bench/synth.py --n 10000 --out /tmp/cases.jsonl [--seed 0] [--refs 3] [--cits 3]
    python bench/synth.py --n 1000000 --out /tmp/small.jsonl --profile small

    from synth import generate_cases   # with bench/ on sys.path
    for record in generate_cases(1000, seed=1): ...
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from bisect import bisect
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

CHUNK = 1000
"""Cases generated per block; each block has its own seeded random streams."""

CITATION_KINDS: tuple[tuple[str, float], ...] = (
    ("exact", 0.24),
    ("paraphrase", 0.22),
    ("truncated", 0.12),
    ("ellipsis", 0.10),
    ("same_doc", 0.14),
    ("other_doc", 0.16),
    ("empty", 0.02),
)

_COMMON_TEXT = (
    "the of and to a in is that for it as with was on be by this are or from at which an have not "
    "has but all any can may must shall will should each other such their its these those if when "
    "where than then also only more most no one two three five first new after before under over "
    "into out up about between during within without upon per request requests employee employees "
    "manager managers policy policies data access account accounts system systems service "
    "services report reports record records time date day days week weeks month year period "
    "notice approval approve approved review reviewed information security customer customers "
    "company office work remote leave travel expense expenses payment payments invoice contract "
    "contracts document documents file files user users team staff department business process "
    "procedure procedures rule rules requirement requirements support incident incidents risk "
    "compliance audit training device devices network password passwords email message messages "
    "meeting meetings project projects budget cost costs level levels number total least submit "
    "submitted provide provided ensure required include includes including receive received use "
    "used using apply applies applied prior following written form forms holiday holidays hours "
    "working start end start date"
)
_COMMON = tuple(_COMMON_TEXT.split())
_ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "qu", "r", "s", "t", "v",
           "w", "z", "br", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "st", "str", "th", "tr", "ch")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck", "x", "rt")
_SUFFIXES = ("", "", "", "", "ion", "ment", "ity", "al", "er", "ing", "ed", "ly", "ous", "ive")
_UNICODE_WORDS = ("café", "naïve", "résumé", "façade", "Zürich", "straße", "ﬁle", "coöperate",
                  "São", "Ærø", "señor", "garçon", "Ångström", "déjà", "ｆｕｌｌ", "Ⅻ", "œuvre")
_DOC_KINDS = ("Policy", "Handbook", "Guidelines", "Procedure", "Standard", "Manual", "FAQ",
              "Agreement", "Report", "Charter")
_DOC_EXTS = (".pdf", ".pdf", ".pdf", ".docx", ".md", ".html", "")


def _build_vocabulary(size: int = 3000) -> list[str]:
    """Common English words, then made-up words; a fixed list independent of the case seed."""
    rng = random.Random(20261202)
    words: dict[str, None] = dict.fromkeys(_COMMON)
    while len(words) < size - len(_UNICODE_WORDS):
        w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                    for _ in range(rng.choice((1, 1, 2, 2, 2, 3))))
        words.setdefault(w + rng.choice(_SUFFIXES), None)
    out = list(words)
    # Spread the non-ASCII words from rank 150 to the tail of the frequency list.
    for k, w in enumerate(_UNICODE_WORDS):
        out.insert(150 + k * (size - 300) // len(_UNICODE_WORDS), w)
    return out


VOCAB: list[str] = _build_vocabulary()
_VOCAB_ARRAY = np.array(VOCAB, dtype=object)
# Zipf-like word frequencies (exponent 1.05), so short word sequences sometimes repeat.
_CDF = np.cumsum(1.0 / np.arange(1, len(VOCAB) + 1) ** 1.05)
_CDF /= _CDF[-1]
# Inverse-CDF lookup table: a uniform integer below 2**20 → a word index (fast bulk draws).
_TABLE = np.minimum(np.searchsorted(_CDF, (np.arange(1 << 20) + 0.5) / (1 << 20), side="right"),
                    len(VOCAB) - 1)


def _doc_names(count: int = 600) -> list[str]:
    rng = random.Random(7)
    titles = [w for w in VOCAB[150:1500] if w.isascii()]
    names: dict[str, None] = {}
    while len(names) < count:
        words = [rng.choice(titles).capitalize() for _ in range(rng.choice((1, 2, 2, 3)))]
        names.setdefault(" ".join([*words, rng.choice(_DOC_KINDS)]) + rng.choice(_DOC_EXTS))
    return list(names)


DOCS: list[str] = _doc_names()


_VOCAB_CAP = np.array([w[:1].upper() + w[1:] for w in VOCAB], dtype=object)


class _Block:
    """Random streams for one block of cases: numpy for bulk word draws, Python for choices.

    The block's word stream is drawn at once and punctuated as running text (a full stop after
    about one word in twelve, a comma after one in fourteen, a capital after each full stop);
    passages are consecutive slices of it.
    """

    def __init__(self, seed: int, block: int, words_needed: int) -> None:
        self.rnd = random.Random(f"ragcite-synth:{seed}:{block}")
        np_rng = np.random.default_rng([seed, block])
        idx = _TABLE[np_rng.integers(0, 1 << 20, words_needed)]
        punct = np_rng.random(words_needed)
        stop = punct < 0.08
        comma = (punct >= 0.08) & (punct < 0.15)
        cap = np.zeros(words_needed, dtype=bool)
        cap[1:] = stop[:-1]
        words = np.where(cap, _VOCAB_CAP[idx], _VOCAB_ARRAY[idx])
        words[stop] = words[stop] + "."
        words[comma] = words[comma] + ","
        self.words: list[str] = words.tolist()
        self.pos = 0

    def randint(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi] (cheaper than random.Random.randint)."""
        return lo + int(self.rnd.random() * (hi - lo + 1))

    def pick(self, seq: Sequence[T]) -> T:
        """Uniform element of a non-empty sequence."""
        return seq[int(self.rnd.random() * len(seq))]

    def take(self, k: int) -> list[str]:
        if self.pos + k > len(self.words):  # not expected: fall back to Python draws
            self.words.extend(self.rnd.choices(VOCAB, cum_weights=_CDF.tolist(), k=k + 1000))
        out = self.words[self.pos:self.pos + k]
        self.pos += k
        return out

    def passage(self, n_words: int) -> list[str]:
        """Display tokens of a passage: capitalised sentences with commas and full stops."""
        toks = self.take(n_words)
        first, last = toks[0], toks[-1]
        toks[0] = first[:1].upper() + first[1:]
        if not last.endswith("."):
            toks[-1] = last.rstrip(",") + "."
        return toks


def _paraphrase(b: _Block, toks: list[str]) -> str:
    rate = b.rnd.uniform(0.03, 0.7)
    rnd = b.rnd.random
    fresh = iter(b.take(len(toks) + 8))
    out: list[str] = []
    for t in toks:
        r = rnd()
        if r < rate * 0.7:
            out.append(next(fresh))
        elif r < rate * 0.85:
            continue
        elif r < rate:
            out.append(t)
            out.append(next(fresh))
        else:
            out.append(t)
    return " ".join(out or toks[:1])


def _stretch(b: _Block, toks: list[str], lo: float, hi: float) -> list[str]:
    n = len(toks)
    k = max(1, int(n * b.rnd.uniform(lo, hi)))
    start = b.randint(0, n - k)
    return toks[start:start + k]


def _ellipsis(b: _Block, toks: list[str]) -> str:
    n = len(toks)
    parts = b.pick((2, 2, 3))
    cuts = sorted(b.rnd.sample(range(1, n), min(parts * 2 - 1, n - 1)))
    bounds = [0, *cuts, n]
    pieces = [" ".join(toks[bounds[i]:bounds[i + 1]]) for i in range(0, len(bounds) - 1, 2)]
    sep = b.pick((" ... ", " ... ", "…", " … ", "...."))
    text = sep.join(p for p in pieces if p)
    if b.rnd.random() < 0.3:
        text = "... " + text
    return text


def _recase(b: _Block, text: str) -> str:
    r = b.rnd.random()
    if r < 0.05:
        return text.lower()
    if r < 0.08:
        return text.upper()
    if r < 0.12:
        return "  " + text.replace(" ", "\n", 3) + " "
    return text


def _source_variant(b: _Block, source: str) -> str:
    r = b.rnd.random()
    if r < 0.04:
        return source.lower()
    if r < 0.06:
        return f" {source}  "
    return source


PROFILES: dict[str, dict[str, int]] = {
    "standard": {"refs": 3, "cits": 3, "words": 40},
    "small": {"refs": 1, "cits": 1, "words": 8},
}
"""Named shapes of a case: references, citations and typical words per passage."""


_KIND_NAMES = [k for k, _ in CITATION_KINDS]
_KIND_CUM = list(np.cumsum([w for _, w in CITATION_KINDS]) / sum(w for _, w in CITATION_KINDS))
_KIND_CUM[-1] = 2.0  # guard against rounding: bisect never runs off the end


def _case(b: _Block, index: int, seed: int, refs: int, cits: int, words: int) -> dict[str, Any]:
    rnd = b.rnd
    n_docs = min(refs, b.pick((1, 2, 2, 3, 3, 3))) if refs else 0
    docs: list[str] = []
    while len(docs) < n_docs + 2:
        doc = DOCS[int(rnd.random() * len(DOCS))]
        if doc not in docs:
            docs.append(doc)
    expected, spare = docs[:n_docs], docs[n_docs:]
    lo, hi = max(1, words * 3 // 4), max(1, words * 5 // 4)
    ref_toks: list[list[str]] = []
    references: list[dict[str, str]] = []
    for i in range(refs):
        source = expected[i % n_docs] if i < n_docs else b.pick(expected)
        toks = b.passage(b.randint(lo, hi))
        ref_toks.append(toks)
        content = "" if rnd.random() < 0.01 else " ".join(toks)
        references.append({"source": source, "content": content})

    citations: list[dict[str, str]] = []
    kinds: list[str] = []
    for _ in range(cits):
        kind = _KIND_NAMES[bisect(_KIND_CUM, rnd.random())]
        if not references and kind not in ("other_doc", "empty"):
            kind = "other_doc"
        if kinds and rnd.random() < 0.03:  # the same passage cited twice
            citations.append(dict(citations[-1]))
            kinds.append(kinds[-1])
            continue
        j = b.randint(0, len(references) - 1) if references else 0
        source = references[j]["source"] if references else b.pick(spare)
        if kind == "exact":
            content = _recase(b, " ".join(ref_toks[j]))
        elif kind == "paraphrase":
            content = _paraphrase(b, ref_toks[j])
        elif kind == "truncated":
            content = " ".join(_stretch(b, ref_toks[j], 0.3, 0.9))
        elif kind == "ellipsis":
            content = _ellipsis(b, ref_toks[j])
        elif kind == "same_doc":
            source = b.pick(expected)
            content = " ".join(b.passage(b.randint(lo, hi)))
        elif kind == "other_doc":
            source = b.pick(spare)
            content = (" ".join(ref_toks[j]) if references and rnd.random() < 0.2
                       else " ".join(b.passage(b.randint(lo, hi))))
        else:
            content = ""
        citations.append({"source": _source_variant(b, source), "content": content})
        kinds.append(kind)

    query_words = b.take(b.randint(5, 10))
    query = " ".join(query_words).capitalize() + "?"
    answer = " ".join(b.take(b.randint(6, 16))).capitalize() + "."
    return {
        "id": f"syn-{seed}-{index}",
        "query": query,
        "references": references,
        "expected_sources": list(dict.fromkeys(r["source"] for r in references)),
        "response": {"answer": answer, "citations": citations},
        "metadata": {"citation_kinds": kinds},
    }


def generate_cases(n: int, seed: int = 0, refs: int = 3, cits: int = 3,
                   words: int = 40) -> Iterator[dict[str, Any]]:
    """Yield `n` canonical case records (SPEC 2), deterministically for `seed`.

    Args:
        n: Number of cases.
        seed: Random seed; the same seed gives the same cases (and any n gives the same prefix).
        refs: References per case.
        cits: Citations per case.
        words: Typical passage length in words (each passage has 0.75x to 1.25x that).

    Yields:
        Dicts with ``id``, ``query``, ``references``, ``expected_sources``, ``response``
        (``answer``, ``citations``) and ``metadata.citation_kinds`` (the kind of each citation).
    """
    if n < 0 or refs < 0 or cits < 0 or words < 1:
        raise ValueError("n, refs and cits must be >= 0 and words >= 1")
    # Words a block of CHUNK cases needs on average, with a margin (a shortfall is drawn later):
    # references, other passages and paraphrase draws, query and answer.
    per_case = int(((refs + 0.6 * cits) * words + 2 * cits + 25) * 1.15)
    for block in range((n + CHUNK - 1) // CHUNK):
        b = _Block(seed, block, per_case * CHUNK)
        for i in range(block * CHUNK, min(n, (block + 1) * CHUNK)):
            yield _case(b, i, seed, refs, cits, words)


def write_jsonl(path: str | Path, n: int, seed: int = 0, refs: int = 3, cits: int = 3,
                words: int = 40) -> int:
    """Write `n` generated cases to a JSON Lines file; returns the number of lines."""
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    count = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        buf: list[str] = []
        for record in generate_cases(n, seed, refs, cits, words):
            buf.append(dumps(record))
            count += 1
            if len(buf) == CHUNK:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            fh.write("\n".join(buf) + "\n")
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="number of cases")
    parser.add_argument("--out", required=True, help="output JSON Lines file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="standard",
                        help="case shape: standard (3 refs x 3 citations of ~40 words) or "
                             "small (1 ref x 1 citation of ~8 words)")
    parser.add_argument("--refs", type=int, default=None, help="references per case")
    parser.add_argument("--cits", type=int, default=None, help="citations per case")
    parser.add_argument("--words", type=int, default=None, help="typical words per passage")
    args = parser.parse_args(argv)
    shape = {**PROFILES[args.profile],
             **{k: v for k in ("refs", "cits", "words") if (v := getattr(args, k)) is not None}}
    t0 = time.perf_counter()
    count = write_jsonl(args.out, args.n, args.seed, **shape)
    print(f"wrote {count} cases to {args.out} in {time.perf_counter() - t0:.2f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Build data/calibration/pairs.jsonl: labelled pairs cut from the shipped HotpotQA and MuSiQue
paragraphs by a positional rule (data/calibration/SOURCE.md). Deterministic for its seed:

    .venv/bin/python bench/make_calibration_pairs.py            # rewrites the shipped file
    .venv/bin/python bench/make_calibration_pairs.py --check    # exits 1 if it would differ

The rule. A paragraph's text is the source document; every passage is a set of its character
positions. A *reference* is one sentence (or two consecutive ones) of a supporting paragraph.
Each reference gets seven citations:

- ``truncated``: a prefix or suffix of the reference (30-80 % of it, cut at a space);
- ``elided``: the reference with a middle stretch (20-50 %) replaced by `` … ``;
- ``widened``: the reference with the sentence before and/or after it;
- ``shifted``: a stretch as long as the reference, moved by 20-90 % of its length;
- ``reformatted``: the reference's own span, rewritten (case and punctuation dropped, spacing
  changed, typographic quotes and dashes, or quoted with a citation mark);
- ``other_sentence``: another sentence of the same paragraph, not in the reference;
- ``other_document``: a sentence of another paragraph of the same question.

The label is true when the two position sets overlap by at least half of the shorter one:
``|R ∩ C| >= ½ min(|R|, |C|)`` (a reformatted citation keeps its span's positions; the other
documents' sentences share none).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data" / "calibration" / "pairs.jsonl"
SEED = 19
PER_CORPUS = 30
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass(frozen=True)
class Paragraph:
    """A paragraph with its sentences as (start, end) character spans."""

    question: str
    title: str
    text: str
    spans: tuple[tuple[int, int], ...]
    supporting: bool


def _spans(text: str, sentences: list[str] | None = None) -> tuple[tuple[int, int], ...]:
    pieces = sentences if sentences is not None else _SENTENCE_END.split(text)
    out, pos = [], 0
    for piece in pieces:
        start = text.index(piece.strip(), pos)
        out.append((start, start + len(piece.strip())))
        pos = start + len(piece.strip())
    return tuple(out)


def hotpotqa() -> Iterator[list[Paragraph]]:
    """The context paragraphs of each HotpotQA question."""
    records = json.loads((REPO / "data/hotpotqa/hotpotqa_train.json").read_text("utf-8"))
    for r in records:
        support = {t for t, _ in r["supporting_facts"]}
        yield [Paragraph(r["_id"], title, "".join(sents), _spans("".join(sents), sents),
                         title in support) for title, sents in r["context"]]


def musique() -> Iterator[list[Paragraph]]:
    """The paragraphs of each MuSiQue question."""
    records = json.loads((REPO / "data/musique/musique_train.json").read_text("utf-8"))
    for r in records:
        yield [Paragraph(r["id"], p["title"], p["paragraph_text"], _spans(p["paragraph_text"]),
                         bool(p["is_supporting"])) for p in r["paragraphs"]]


def _snap(text: str, pos: int) -> int:
    """The nearest word boundary at or after `pos` (a space, or the text's end)."""
    while 0 < pos < len(text) and not text[pos - 1].isspace() and not text[pos].isspace():
        pos += 1
    return pos


def _cut(text: str, ranges: list[tuple[int, int]]) -> tuple[str, set[int]]:
    parts = [text[a:b].strip() for a, b in ranges]
    return " … ".join(parts), {i for a, b in ranges for i in range(a, b)
                               if not text[i].isspace()}


def _reformat(rng: random.Random, text: str) -> str:
    style = rng.randrange(4)
    if style == 0:
        return re.sub(r"[^\w\s]", "", text).lower()
    if style == 1:
        return re.sub(r"\s+", lambda m: rng.choice(["  ", "\n", " \t"]), text)
    if style == 2:
        return (text.replace('"', "“").replace("'", "’").replace(" - ", " – ")
                .replace(" ", "\u00a0", 1))  # a no-break space
    return f"“{text}” [1]"


def citations(rng: random.Random, p: Paragraph, a: int, b: int,
              others: list[Paragraph]) -> Iterator[tuple[str, str, set[int] | None, str]]:
    """(kind, text, positions, source) of each citation of the reference [a, b)."""
    t, n = p.text, b - a
    keep = _snap(t, a + int(n * rng.uniform(0.3, 0.8)))
    yield ("truncated", *(_cut(t, [(a, keep)]) if rng.random() < 0.5
                          else _cut(t, [(keep, b)])), p.title)
    lo = _snap(t, a + int(n * rng.uniform(0.15, 0.35)))
    hi = max(_snap(t, lo + int(n * rng.uniform(0.2, 0.5))), lo + 1)
    yield "elided", *_cut(t, [(a, lo), (min(hi, b), b)]), p.title
    before = [s for s in p.spans if s[1] <= a]
    after = [s for s in p.spans if s[0] >= b]
    wa = before[-1][0] if before and (not after or rng.random() < 0.5) else a
    wb = after[0][1] if after and (wa == a or rng.random() < 0.5) else b
    yield "widened", *_cut(t, [(wa, wb)]), p.title
    shift = int(n * rng.uniform(0.2, 0.9)) * (1 if rng.random() < 0.5 else -1)
    sa = _snap(t, min(max(a + shift, 0), len(t) - 1))
    yield "shifted", *_cut(t, [(sa, _snap(t, min(sa + n, len(t))))]), p.title
    text, positions = _cut(t, [(a, b)])
    yield "reformatted", _reformat(rng, text), positions, p.title
    rest = [s for s in p.spans if s[1] <= a or s[0] >= b]
    yield "other_sentence", *_cut(t, [rng.choice(rest)]), p.title
    other = rng.choice(others)
    yield "other_document", *_cut(other.text, [rng.choice(other.spans)])[:1], None, other.title


def pairs_of(rng: random.Random, paragraphs: list[Paragraph]) -> Iterator[dict[str, object]]:
    """The seven labelled pairs of one question's reference, or none when it has no paragraph
    of three sentences or more."""
    usable = [p for p in paragraphs if p.supporting and len(p.spans) >= 3]
    others = [p for p in paragraphs if p.spans]
    if not usable:
        return
    p = rng.choice(usable)
    others = [o for o in others if o.text != p.text]
    i = rng.randrange(len(p.spans) - 1)
    a, b = p.spans[i][0], p.spans[i + 1 if rng.random() < 0.3 else i][1]
    reference, ref_positions = _cut(p.text, [(a, b)])
    for kind, text, positions, source in citations(rng, p, a, b, others):
        if not text.strip():
            continue
        overlap = len(ref_positions & positions) if positions is not None else 0
        shorter = min(len(ref_positions), len(positions) if positions else len(
            re.sub(r"\s", "", text)))
        yield {"reference": reference, "citation": text, "label": 2 * overlap >= shorter,
               "reference_source": p.title, "citation_source": source,
               "case_id": p.question,
               "note": f"{kind}: overlap {overlap} of the shorter passage's {shorter} "
                       f"characters"}


def build(seed: int = SEED) -> list[dict[str, object]]:
    """Every pair, in order: HotpotQA's questions, then MuSiQue's."""
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for corpus in (hotpotqa, musique):
        questions = list(corpus())
        rng.shuffle(questions)
        made = 0
        for paragraphs in questions:
            found = list(pairs_of(rng, paragraphs))
            if found and made < PER_CORPUS:
                out.extend(found)
                made += 1
    seen: set[tuple[object, object]] = set()
    return [r for r in out if (r["reference"], r["citation"]) not in seen
            and not seen.add((r["reference"], r["citation"]))]  # type: ignore[func-returns-value]


def cli(build: Callable[[int], list[dict[str, object]]], out: Path, seed: int,
        doc: str) -> int:
    """The command line of a pair-making script: write `out` from ``build(seed)``, or with
    ``--check`` say whether the shipped file is what the rule gives."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--seed", type=int, default=seed)
    args = parser.parse_args()
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in build(args.seed))
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{out} differs from what the rule gives")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    labels = [json.loads(line)["label"] for line in text.splitlines()]
    print(f"wrote {out}: {len(labels)} pairs, {sum(labels)} true")
    return 0


def main() -> int:
    return cli(build, OUT, SEED, __doc__ or "")

if __name__ == "__main__":
    sys.exit(main())

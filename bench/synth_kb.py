"""Seeded synthetic cases quoting a synthetic knowledge base: the data of the suite's
``fidelity`` part (quote fidelity on against off, SPEC 6.1).

The knowledge base has `docs` documents (``doc-00000.md`` ...) of 8 sentences of 30-50 words
each (about 2,000 characters), drawn from ``synth.py``'s Zipf vocabulary. Each case expects one
to three documents; its references are one sentence of each, and it cites 3 passages of these
kinds, so every fidelity label occurs:

* ``exact`` (0.40): a reference as it is (verbatim);
* ``truncated`` (0.10): a stretch of a reference (verbatim);
* ``ellipsis`` (0.10): two stretches of a reference joined by `` ... `` (verbatim);
* ``paraphrase`` (0.15): a reference with 15 % of its words replaced (paraphrased);
* ``same_doc`` (0.10): another sentence of an expected document (verbatim);
* ``other_doc`` (0.08): a sentence of another document, cited under an expected one
  (misattributed);
* ``stitched`` (0.02): two sentences of an expected document that are not next to each other;
* ``fabricated`` (0.05): fresh words.

Usage::

    python bench/synth_kb.py --n 100000 --docs 10000 --out-dir /tmp/kb   # cases.jsonl, kb.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from synth import _CDF, VOCAB

KINDS = (("exact", 0.40), ("truncated", 0.10), ("ellipsis", 0.10), ("paraphrase", 0.15),
         ("same_doc", 0.10), ("other_doc", 0.08), ("stitched", 0.02), ("fabricated", 0.05))
SENTENCES = 8


class _Words:
    """Zipf-distributed words, drawn in bulk."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.cum = rng, _CDF.tolist()
        self.buffer: list[str] = []
        self.pos = 0

    def take(self, k: int) -> list[str]:
        if self.pos + k > len(self.buffer):
            self.buffer = self.rng.choices(VOCAB, cum_weights=self.cum, k=k + 100_000)
            self.pos = 0
        self.pos += k
        return self.buffer[self.pos - k:self.pos]

    def sentence(self) -> str:
        words = self.take(self.rng.randint(30, 50))
        return " ".join(words).capitalize() + "."


def generate(n: int, docs: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The knowledge base and the cases (see the module)."""
    rng = random.Random(seed)
    words = _Words(rng)
    kb = [[words.sentence() for _ in range(SENTENCES)] for _ in range(docs)]
    names = [f"doc-{d:05d}.md" for d in range(docs)]
    kinds, weights = zip(*KINDS)
    cases = []
    for i in range(n):
        expected = rng.sample(range(docs), rng.choice((1, 2, 2, 3)))
        refs = [(d, rng.randrange(SENTENCES)) for d in expected]
        citations = []
        for kind in rng.choices(kinds, weights, k=3):
            d, s = rng.choice(refs)
            text = kb[d][s]
            tokens = text.split()
            if kind == "truncated":
                a = rng.randrange(len(tokens) // 2)
                text = " ".join(tokens[a:a + len(tokens) // 2])
            elif kind == "ellipsis":
                text = " ".join(tokens[:10]) + " ... " + " ".join(tokens[-10:])
            elif kind == "paraphrase":
                fresh = iter(words.take(len(tokens)))
                text = " ".join(next(fresh) if rng.random() < 0.15 else t for t in tokens)
            elif kind == "same_doc":
                text = kb[d][(s + 1 + rng.randrange(SENTENCES - 1)) % SENTENCES]
            elif kind == "other_doc":
                text = kb[rng.randrange(docs)][rng.randrange(SENTENCES)]
            elif kind == "stitched":
                text = kb[d][0] + " " + kb[d][SENTENCES - 1]
            elif kind == "fabricated":
                text = words.sentence()
            citations.append({"source": names[d], "content": text})
        cases.append({"id": f"c{i}", "query": f"question {i}",
                      "references": [{"source": names[d], "content": kb[d][s]} for d, s in refs],
                      "answer": "answer", "citations": citations})
    return cases, [{"source": name, "text": " ".join(text)} for name, text in zip(names, kb)]


def data_files(folder: Path, n: int, docs: int, seed: int) -> tuple[Path, Path]:
    """``cases.jsonl`` and ``kb.jsonl`` of `n` cases and `docs` documents, made if missing."""
    where = folder / f"synth-kb-n{n}-d{docs}-s{seed}"
    cases, kb = where / "cases.jsonl", where / "kb.jsonl"
    if not cases.exists():
        t0 = time.perf_counter()
        where.mkdir(parents=True, exist_ok=True)
        records, documents = generate(n, docs, seed)
        for path, rows in ((kb, documents), (cases, records)):
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
            tmp.replace(path)
        print(f"generated {where} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return cases, kb


def main() -> None:
    """Write the files of the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args()
    print(*data_files(args.out_dir, args.n, args.docs, args.seed))


if __name__ == "__main__":
    main()

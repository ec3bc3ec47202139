"""The optimised `ngram` matcher equals a plain reference implementation of SPEC 4.2.

The reference below follows the SPEC text literally and has no fast path: invisible characters
removed, NFKC, case folding, split on ellipsis markers, ``\\w+`` tokens (each character of the
scripts written without spaces a token of its own under ``tokenizer=auto``, every word
character under ``chars``), multisets of n-grams as Counters, the short-side rule, overlap /
min. The matcher must give exactly the same float for every pair, on the synthetic benchmark
data (bench/synth.py) and on generated ASCII and Unicode text (Chinese, Japanese, Korean, Thai,
Lao, Khmer and Myanmar included), whether a pair is scored alone or in a batch that shares
texts, with either kernel (``numpy``, and the compiled ``numba`` one where numba is
installed).
"""

from __future__ import annotations

import importlib.util
import random
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.matchers import NgramMatcher, ngram_numba
from runner.matchers import text as text_module
from runner.matchers.text import token_ids
from tests.matchers.test_text import token_stretches

_NO_NUMBA = pytest.mark.skipif(not ngram_numba.available(),
                               reason="numba (the `fast` extra) not installed")
KERNELS = pytest.mark.parametrize("kernel", ["numpy", pytest.param("numba", marks=_NO_NUMBA)])

_ELLIPSIS = re.compile(r"\[(?:…|\.{3})\]|…|\.{3,}|\.(?: \.){2,}")
_INVISIBLE = "\u200b\u200c\u200d\u2060\u00ad\ufeff"


def _is_word(char: str) -> bool:
    # Python's \w (str.isalnum() or "_") plus the combining marks (category M).
    return char.isalnum() or char == "_" or unicodedata.category(char).startswith("M")


def _alone(char: str, tokenizer: str) -> bool:
    # A token of its own: every word character (chars), or one of the blocks of the scripts
    # written without spaces (auto).
    blocks = text_module.CHAR_BLOCKS
    return tokenizer == "chars" or (tokenizer == "auto"
                                    and any(a <= ord(char) <= b for a, b in blocks))


def _words(part: str, tokenizer: str) -> list[str]:
    return "".join((f" {c} " if _alone(c, tokenizer) else c) if _is_word(c) else " "
                   for c in part).split()


def reference_stretches(text: str, tokenizer: str = "auto") -> list[list[str]]:
    """Word tokens of each ellipsis-free stretch of the NFKC, case-folded text without invisible
    characters (empty stretches dropped)."""
    visible = "".join(c for c in text if c not in _INVISIBLE)
    norm = unicodedata.normalize("NFKC", visible).casefold()
    return [toks for part in _ELLIPSIS.split(norm) if (toks := _words(part, tokenizer))]


def reference_similarity(ref: str, cit: str, n: int, tokenizer: str = "auto") -> float:
    """|G(ref) ∩ G(cit)| / min(|G(ref)|, |G(cit)|) over multisets of n-grams (SPEC 4.2)."""
    a, b = reference_stretches(ref, tokenizer), reference_stretches(cit, tokenizer)
    longest_a = max((len(s) for s in a), default=0)
    longest_b = max((len(s) for s in b), default=0)
    if longest_a == 0 or longest_b == 0:
        return 0.0
    k = min(n, longest_a, longest_b)
    grams_a = Counter(tuple(s[i : i + k]) for s in a for i in range(len(s) - k + 1))
    grams_b = Counter(tuple(s[i : i + k]) for s in b for i in range(len(s) - k + 1))
    shared = sum((grams_a & grams_b).values())
    return shared / min(sum(grams_a.values()), sum(grams_b.values()))


def _synth() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "synth.py"
    if not path.exists():
        pytest.skip("bench/synth.py not present")
    spec = importlib.util.spec_from_file_location("ragcite_bench_synth", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("ragcite_bench_synth", module)
    spec.loader.exec_module(module)
    return module


def _synthetic_pairs(n_cases: int, seed: int) -> list[tuple[str, str]]:
    pairs = []
    for record in _synth().generate_cases(n_cases, seed=seed):
        for ref in record["references"]:
            for cit in record["response"]["citations"]:
                if ref["content"].strip() and cit["content"].strip():
                    pairs.append((ref["content"], cit["content"]))
    return pairs


@KERNELS
@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
def test_synthetic_data_matches_the_reference(n: int, kernel: str) -> None:
    pairs = _synthetic_pairs(400, seed=n)
    got = NgramMatcher(n=n, kernel=kernel).similarities(pairs)
    want = [reference_similarity(r, c, n) for r, c in pairs]
    assert got == want
    # The data exercise the whole range, not only 0 and 1.
    assert any(0.0 < v < 1.0 for v in want) and 0.0 in want and 1.0 in want


# Words chosen to collide after NFKC and case folding, to repeat, and to cross the ASCII /
# non-ASCII boundary; separators include every ellipsis form and near misses.
_WORDS = [
    "a",
    "b",
    "c",
    "the",
    "The",
    "THE",
    "cat",
    "sat",
    "x_y",
    "42",
    "café",
    "Cafe\u0301",
    "CAFÉ",
    "straße",
    "STRASSE",
    "strasse",
    "ﬁle",
    "file",
    "ＡＢＣ",
    "abc",
    "İstanbul",
    "ǅ",
    "x²",
    "x2",
    "½",
    "٣",
    "東京",
    "タワー",
    "北京大学的图书馆",
    "日本語のテキスト",
    "한국어",
    "ภาษาไทย",
    "ພາສາລາວ",
    "ភាសាខ្មែរ",
    "မြန်မာစာ",
    "ｶﾀｶﾅ",
    "RAG系统",
    "々〇",
    "Ω",
    "ω",
    "ß",
    "ss",
]
_SEPS = [
    " ",
    " ",
    " ",
    "  ",
    ", ",
    ". ",
    "\n",
    "\t",
    "\x1c",
    "-",
    "'",
    "..",
    "...",
    "....",
    " ... ",
    "…",
    " … ",
    "‥",
    "․․․",
    ". . .",
    " . . . ",
    "[...]",
    "[…]",
    "[..]",
    "!",
    "\u200b",
    "\u00ad",
    "\u2060",
    "\ufeff",
    "\u200d",
    "。",
    "、",
    "\u00a0",
    "\u3000",
]

_token_text = st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPS)), max_size=14).map(
    lambda items: "".join(w + s for w, s in items)
)
_ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=60)
_any_text = st.text(max_size=40)


@KERNELS
@settings(max_examples=400, deadline=None)
@given(ref=_token_text, cit=_token_text, n=st.integers(1, 4),
       tokenizer=st.sampled_from(["auto", "words", "chars"]))
def test_generated_word_text_matches_the_reference(ref: str, cit: str, n: int, tokenizer: str,
                                                   kernel: str) -> None:
    got = NgramMatcher(n=n, kernel=kernel, tokenizer=tokenizer).similarities([(ref, cit)])
    assert got == [reference_similarity(ref, cit, n, tokenizer)]


@KERNELS
@settings(max_examples=300, deadline=None)
@given(
    ref=st.one_of(_ascii_text, _any_text),
    cit=st.one_of(_ascii_text, _any_text, _token_text),
    n=st.integers(1, 3),
)
def test_arbitrary_text_matches_the_reference(ref: str, cit: str, n: int, kernel: str) -> None:
    got = NgramMatcher(n=n, kernel=kernel).similarities([(ref, cit)])
    assert got == [reference_similarity(ref, cit, n)]


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(_ascii_text, _token_text, _any_text),
       tokenizer=st.sampled_from(["auto", "words", "chars"]))
def test_ascii_fast_path_equals_the_unicode_path(text: str, tokenizer: str) -> None:
    assert token_stretches(text, tokenizer) == reference_stretches(text, tokenizer)


@KERNELS
def test_batches_that_share_texts_match_the_reference(kernel: str) -> None:
    # Many pairs over few texts, in random order, with short and repeated-gram texts mixed in:
    # per-text caches and the short-side rule must not leak between pairs.
    rnd = random.Random(5)
    texts = [
        *[r for r, _ in _synthetic_pairs(30, seed=9)][:40],
        "a b",
        "a",
        "b a",
        "a b c a b c",
        "a b c x a b c",
        "…",
        "",
        "a b … c d",
        "the the the",
        "The cat sat... on the mat",
        "café crème",
        "CAFÉ CRÈME brûlée",
        "城市的公共图书馆每天早上九点开门。",
        "九点开门",
        "图书馆 [...] 九点\u200b开门",
        "市立図書館は午前九時から開いています。",
        "ภาษาไทย . . . ง่าย",
        "RAG系统 cites 文档",
    ]
    pairs = [(rnd.choice(texts), rnd.choice(texts)) for _ in range(3000)]
    for n in (1, 2, 3, 5):
        got = NgramMatcher(n=n, kernel=kernel).similarities(pairs)
        assert got == [reference_similarity(r, c, n) for r, c in pairs]


def _stretches_from_ids(texts: list[str]) -> list[list[list[int]]]:
    """Per text, its stretches as lists of token ids, read back from token_ids()."""
    tok = token_ids(texts)
    ids, stretch = tok.ids.tolist(), tok.stretch.tolist()
    bounds = [*tok.first.tolist(), len(ids)]
    out: list[list[list[int]]] = [[] for _ in texts]
    for pos, index in enumerate(tok.order.tolist()):
        runs: list[list[int]] = []
        for i in range(bounds[pos], bounds[pos + 1]):
            if i == bounds[pos] or stretch[i] != stretch[i - 1]:
                runs.append([])
            runs[-1].append(ids[i])
        out[index] = runs
    return out


def _check_token_ids(texts: list[str]) -> None:
    got = _stretches_from_ids(texts)
    want = [reference_stretches(t) for t in texts]
    assert [[len(s) for s in text] for text in got] == [[len(s) for s in text] for text in want]
    # Same token <=> same id, across all texts.
    pairs = {(tok, i) for gt, wt in zip(got, want) for gs, ws in zip(gt, wt)
             for i, tok in zip(gs, ws)}
    assert len({tok for tok, _ in pairs}) == len(pairs) == len({i for _, i in pairs})


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.one_of(_token_text, _ascii_text, _any_text), max_size=8))
def test_token_ids_match_the_reference_tokens(texts: list[str]) -> None:
    _check_token_ids(texts)


def test_token_ids_on_synthetic_texts_and_the_collision_fallback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    texts = list(dict.fromkeys(t for pair in _synthetic_pairs(200, seed=2) for t in pair))
    texts += ["x\x01y z", "a\x01\x01b", "C\u0327a\x01 \x02"]  # the stream's mark inside a text
    _check_token_ids(texts)
    pairs = [(texts[i], texts[(i * 7) % len(texts)]) for i in range(len(texts))]
    want = NgramMatcher().similarities(pairs)
    # If two different tokens ever hashed alike, ids come from a dict instead: same results.
    monkeypatch.setattr(text_module, "_exact_ids", lambda *args: (None, 0))
    _check_token_ids(texts)
    assert NgramMatcher().similarities(pairs) == want


@KERNELS
@pytest.mark.parametrize("chunk", [3, 1 << 15])
def test_similarity_array_equals_similarities(chunk: int, kernel: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # The id-based entry point of the batch scorer gives the same values, also when the pairs
    # span several chunks (each with its own texts) and include short sides.
    import numpy as np

    from runner.matchers import ngram

    monkeypatch.setattr(ngram, "CHUNK_PAIRS", chunk)
    pairs = [*_synthetic_pairs(20, seed=3), ("a b", "a"), ("…", "x y z"), ("a b c", "a b c")]
    texts = list(dict.fromkeys(t for p in pairs for t in p))
    index = {t: i for i, t in enumerate(texts)}
    a = np.array([index[r] for r, _ in pairs])
    b = np.array([index[c] for _, c in pairs])
    m = NgramMatcher(n=2, kernel=kernel)
    got = m.similarity_array(texts, a, b)
    assert got.tolist() == m.similarities(pairs) == [reference_similarity(r, c, 2)
                                                     for r, c in pairs]

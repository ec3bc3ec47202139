"""The `ngram` matcher (SPEC 4.2): multiset n-gram overlap measured on the shorter passage."""

from __future__ import annotations

import os

import numpy as np
import pytest

from runner.errors import RagciteError
from runner.matchers import Matcher, NgramMatcher, ngram_numba
from runner.matchers.base import FastPath, Local
from runner.matchers.ngram import CHUNK_PAIRS, resolve_threads
from runner.matchers.text import token_stream
from tests.helpers import ENCRYPTION, PROBATION, REMOTE_REQUEST, RESIGNATION, VPN


def sim(ref: str, cit: str, n: int = 3) -> float:
    (value,) = NgramMatcher(n=n).similarities([(ref, cit)])
    assert isinstance(value, float)
    return value


def test_identical_passages() -> None:
    assert sim(REMOTE_REQUEST, REMOTE_REQUEST) == 1.0
    assert sim("a b c d", "a b c d") == 1.0


def test_disjoint_passages() -> None:
    # Trigrams: a b c / b c d vs x y z -> nothing shared -> 0/1.
    assert sim("a b c d", "x y z") == 0.0


def test_overlap_is_measured_on_the_shorter_passage() -> None:
    long = "t1 t2 t3 t4 t5 t6 t7 t8 t9 t10"  # 10 tokens -> 8 trigrams
    # Citation t1..t4 -> 2 trigrams (t1t2t3, t2t3t4), both in the reference -> 2 / min(8, 2) = 1.
    assert sim(long, "t1 t2 t3 t4") == 1.0
    # Symmetric: the short side may be the reference.
    assert sim("t1 t2 t3 t4", long) == 1.0
    # Citation t7..t10 plus x y: t7t8t9, t8t9t10, t9t10x, t10xy -> 2 of 4 shared -> 2/4.
    assert sim(long, "t7 t8 t9 t10 x y") == 0.5


def test_paraphrase_of_the_seed_passage() -> None:
    cit = ("Employees must submit a remote work request at least five business days before the "
           "start date.")
    # Reference: 18 tokens -> 16 trigrams; citation: 16 tokens -> 14 trigrams. Shared: "submit a
    # remote", "a remote work", "remote work request", "work request at", "request at least",
    # "at least five" -> 6 / min(16, 14) = 6/14 = 3/7.
    assert sim(REMOTE_REQUEST, cit) == 6 / 14


def test_repeated_ngram_counts_as_a_multiset() -> None:
    # ref "a b c a b c": abc, bca, cab, abc (4, abc twice).
    # cit "a b c x a b c": abc, bcx, cxa, xab, abc (5, abc twice).
    # Multiset intersection: abc min(2, 2) = 2 -> 2 / min(4, 5) = 2/4 = 0.5.
    # (Set semantics would give 1 / min(3, 4) = 1/3.)
    assert sim("a b c a b c", "a b c x a b c") == 0.5


def test_repeated_ngram_on_one_side_counts_once_against_a_single_occurrence() -> None:
    # ref "x a b c y": xab, abc, bcy (3); cit "a b c a b c": abc, bca, cab, abc (4).
    # abc: min(1, 2) = 1 -> 1 / min(3, 4) = 1/3.
    assert sim("x a b c y", "a b c a b c") == 1 / 3
    # ref abc x2 (4 grams) vs cit "a b c" (1 gram): min(2, 1) = 1 -> 1 / min(4, 1) = 1.
    assert sim("a b c a b c", "a b c") == 1.0


def test_repeated_unigrams_with_n_1() -> None:
    # n = 1: ref {the, cat, sat}; cit {the x2, dog}: the min(1, 2) = 1 -> 1 / min(3, 3) = 1/3.
    assert sim("the cat sat", "the the dog", n=1) == 1 / 3
    # cit "the the": {the x2}; ref "the the the cat": {the x3, cat} -> min(3, 2) = 2 -> 2/2.
    assert sim("the the the cat", "the the", n=1) == 1.0


def test_side_shorter_than_n_uses_its_length() -> None:
    # ref has 2 tokens < n = 3 -> both sides use bigrams: ref {ab}; cit ab, bc, cd -> 1 / 1.
    assert sim("a b", "a b c d") == 1.0
    # 1 token -> unigrams: ref {a}; cit {b, a} -> 1 / 1.
    assert sim("a", "b a") == 1.0
    # Bigrams: ref {ab} vs cit {bc, cd} -> 0 / 1.
    assert sim("a b", "b c d") == 0.0
    # Order matters: ref {ba} vs cit {ab, bc} -> 0.
    assert sim("b a", "a b c") == 0.0


def test_side_shorter_than_n_because_of_an_ellipsis() -> None:
    # cit "a b … c d": longest stretch 2 -> bigrams; cit {ab, cd} (no bc across the ellipsis),
    # ref "a b c d" {ab, bc, cd} -> 2 / min(3, 2) = 1.
    assert sim("a b c d", "a b … c d") == 1.0
    # ref "b c" {bc}; cit {ab, cd}: bc would cross the ellipsis -> 0 / 1.
    assert sim("b c", "a b … c d") == 0.0


@pytest.mark.parametrize("marker", ["…", "...", "...."])
def test_no_ngram_crosses_an_ellipsis(marker: str) -> None:
    cit = f"a b c {marker} d e f"
    # cit trigrams: abc, def (2); ref a..f: abc, bcd, cde, def (4) -> 2 / min(4, 2) = 1.
    assert sim("a b c d e f", cit) == 1.0
    # ref "c d e" {cde}: only obtainable across the marker -> 0 / 1.
    assert sim("c d e", cit) == 0.0
    # A marker in the reference works the same way: ref {abc, def} vs cit {cde} -> 0.
    assert sim(cit, "c d e") == 0.0


def test_two_dots_are_not_a_boundary() -> None:
    # "c..d" is punctuation: trigrams cross it -> ref "c d e" {cde} is in cit -> 1 / 1.
    assert sim("c d e", "a b c..d e f") == 1.0


def test_no_tokens_gives_zero() -> None:
    assert sim("...", "a b c") == 0.0
    assert sim("a b c", "!!! ?") == 0.0
    assert sim("!!!", "!!!") == 0.0


def test_unicode_accents_case_and_decomposition() -> None:
    assert sim("Café crème brûlée", "CAFÉ CRÈME BRÛLÉE") == 1.0
    # Decomposed e + U+0301 is composed by NFKC.
    assert sim("Cafe\u0301 cre\u0300me bru\u0302le\u0301e", "café crème brûlée") == 1.0
    # casefold: ß -> ss.
    assert sim("die große Straße hier", "DIE GROSSE STRASSE HIER") == 1.0
    # Accents are kept: cafe != café -> trigram "cafe creme brulee" vs "café crème brûlée" -> 0.
    assert sim("cafe creme brulee", "café crème brûlée") == 0.0


def test_full_width_digits_through_nfkc() -> None:
    # NFKC: "５" -> "5", "ＤＡＹＳ" -> "days": identical token lists -> 1.
    assert sim("within ５ business ＤＡＹＳ", "within 5 business days") == 1.0


def test_cjk_tokens() -> None:
    words = NgramMatcher(tokenizer="words")
    # words: 東京 タワー は 高い / 東京 タワー は 低い -> trigrams (東京 タワー は),
    # (タワー は 高い) vs (東京 タワー は), (タワー は 低い) -> 1 / min(2, 2) = 1/2.
    assert words.similarities([("東京 タワー は 高い", "東京 タワー は 低い")]) == [0.5]
    # Without spaces a CJK run is one \w+ token: 1 token each side -> unigrams, different -> 0.
    assert words.similarities([("東京タワーは高い", "東京タワーは低い")]) == [0.0]
    # auto: one token per character, spaces or not: 東京タワーは高い -> 6 trigrams, of which
    # ーは高 and は高い are not in 東京タワーは低い -> 4 / 6.
    assert sim("東京 タワー は 高い", "東京 タワー は 低い") == sim("東京タワーは高い",
                                                                   "東京タワーは低い") == 4 / 6


ZH = "城市的公共图书馆每天早上九点开门。"  # 16 characters and 。 -> 14 trigrams
JA = "市立図書館は午前九時から開いています。"  # 18 characters and 。 -> 16 trigrams


@pytest.mark.parametrize(("ref", "cit", "expected"), [
    (ZH, ZH, 1.0),  # exact
    (ZH, "公共图书馆每天早", 1.0),  # cut mid-clause: 8 characters, 6 trigrams, all in ZH -> 6/6
    # Elided: 城市的公共 (3 trigrams) and 九点开门 (2), none across the ellipsis -> 5/5.
    (ZH, "城市的公共……九点开门", 1.0),
    (ZH, "城市的公共[…]九点\u200b开门", 1.0),  # the same, with a zero-width space inside
    # One character changed (九 -> 十): 早上十, 上十点, 十点开 are not in ZH -> 11/14.
    (ZH, "城市的公共图书馆每天早上十点开门。", 11 / 14),
    # Another sentence of the same paragraph: shares only 图书馆 -> 1 / min(14, 10) (12 chars).
    (ZH, "图书馆二楼设有儿童阅览区。", 1 / 10),
    (ZH, "任何居民都可以凭身份证免费办理借书证。", 0.0),  # no trigram shared
    (JA, JA, 1.0),
    (JA, "図書館は午前九", 1.0),  # 7 characters, 5 trigrams -> 5/5
    (JA, "市立図書館は. . .開いています", 1.0),  # 市立図書館は (4) and 開いています (4) -> 8/8
    (JA, "市立図書館は午前十時から開いています。", 13 / 16),  # 前十時 午前十 十時か gone -> 13/16
    (JA, "予約した本が届くと、メールで知らせてくれるので便利です。", 0.0),
    # Mixed text, one pass: tokyo 東 京 タ ワ ー is tall / 東 京 タ ワ ー is -> 東京タ, 京タワ,
    # タワー, ワーis: all 4 in the reference -> 4/4.
    ("Tokyo 東京タワー is tall", "東京タワー is", 1.0),
])
def test_chinese_and_japanese_quotes(ref: str, cit: str, expected: float) -> None:
    assert sim(ref, cit) == expected
    # The default threshold (0.5) separates quotes of the reference from other sentences.
    assert (expected >= NgramMatcher.levels["default"]) == (expected > 0.5)


def test_words_tokenizer_misses_chinese_and_japanese_quotes() -> None:
    # Before `auto`: each run of characters is one token, so a part of a run shares nothing.
    words = NgramMatcher(tokenizer="words")
    assert words.similarities([(ZH, "公共图书馆每天早"), (JA, "図書館は午前九")]) == [0.0, 0.0]
    assert NgramMatcher().identity() != words.identity()  # separate cache entries


def test_seed_passages() -> None:
    # Example 2: no trigram in common between resignation notice and probation -> 0.
    assert sim(RESIGNATION, PROBATION) == 0.0
    # Example 3: wrong passage of the right document -> 0; "remote work must" vs
    # "remote workers must" differ.
    assert sim(ENCRYPTION, REMOTE_REQUEST) == 0.0
    assert sim(VPN, ENCRYPTION) == 0.0


def test_batch_order_and_shared_texts() -> None:
    m = NgramMatcher()
    pairs = [("a b c d", "a b c"), ("a b c d", "x y z"), ("x y z", "a b c d"), ("a b c d", "a b c")]
    # abc in ref -> 1/1; disjoint -> 0; disjoint -> 0; repeated pair -> 1.
    assert m.similarities(pairs) == [1.0, 0.0, 0.0, 1.0]
    assert m.similarities([]) == []


def test_n_parameter_changes_the_similarity() -> None:
    ref, cit = "the cat sat on the mat", "the cat lay on the mat"
    # n=1: ref the x2, cat, sat, on, mat; cit the x2, cat, lay, on, mat -> 5 / 6.
    assert sim(ref, cit, n=1) == 5 / 6
    # n=2: ref the-cat, cat-sat, sat-on, on-the, the-mat; cit the-cat, cat-lay, lay-on,
    # on-the, the-mat -> 3 / 5.
    assert sim(ref, cit, n=2) == 3 / 5
    # n=3: ref the-cat-sat, cat-sat-on, sat-on-the, on-the-mat; cit the-cat-lay,
    # cat-lay-on, lay-on-the, on-the-mat -> 1 / 4.
    assert sim(ref, cit, n=3) == 1 / 4


@pytest.mark.parametrize(("settings", "line"), [
    ({"n": 0}, "matcher.n: must be an integer >= 1, got 0"),
    ({"n": -1}, "matcher.n: must be an integer >= 1, got -1"),
    ({"n": 2.0}, "matcher.n: must be an integer >= 1, got 2.0"),
    ({"n": "3"}, "matcher.n: must be an integer >= 1, got '3'"),
    ({"threads": -1}, "matcher.threads: must be an integer >= 0, got -1"),
    ({"threads": 1.5}, "matcher.threads: must be an integer >= 0, got 1.5"),
    ({"threads": True}, "matcher.threads: must be an integer >= 0, got True"),
    ({"threads": "2"}, "matcher.threads: must be an integer >= 0, got '2'"),
    ({"kernel": "fast"}, "matcher.kernel: unknown kernel 'fast'; choose from: auto, numpy, numba"),
    ({"kernel": ""}, "matcher.kernel: unknown kernel ''; choose from: auto, numpy, numba"),
    ({"kernel": "Numba"},
     "matcher.kernel: unknown kernel 'Numba'; choose from: auto, numpy, numba"),
    ({"kernel": None}, "matcher.kernel: must be set, not null"),
])
def test_a_setting_out_of_its_declared_range_is_refused_when_built(
        settings: dict[str, object], line: str) -> None:
    # The same line as the config check gives for matcher.<key>=<value>.
    with pytest.raises(RagciteError) as exc:
        NgramMatcher(**settings)  # type: ignore[arg-type]
    assert str(exc.value) == line


def test_the_numba_kernel_without_numba_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ngram_numba, "available", lambda: False)
    with pytest.raises(ValueError, match=r"pip install 'ragcite\[fast\]'"):
        NgramMatcher(kernel="numba")
    # auto then always means numpy, however large the workload.
    assert NgramMatcher().for_workload(10**9).kernel == "numpy"
    assert NgramMatcher().similarities([("a b c", "a b c d")]) == [1.0]


@pytest.mark.skipif(not ngram_numba.available(), reason="numba (the `fast` extra) not installed")
def test_auto_kernel_by_workload() -> None:
    limit = ngram_numba.AUTO_MIN_PAIRS
    assert NgramMatcher().for_workload(limit).kernel == "numba"
    below = NgramMatcher().for_workload(limit - 1).kernel
    assert below == ("numba" if ngram_numba.loaded() else "numpy")
    assert NgramMatcher(kernel="numpy").for_workload(limit).kernel == "numpy"
    assert NgramMatcher(kernel="numba").for_workload(1).kernel == "numba"
    # The kernel changes no similarity: not part of the identity.
    assert NgramMatcher(kernel="numba").identity() == NgramMatcher(kernel="numpy").identity()


@pytest.mark.skipif(not ngram_numba.available(), reason="numba (the `fast` extra) not installed")
def test_numba_kernel_hands_over_when_keys_would_overflow() -> None:
    # 300 distinct tokens: 300 ** 8 >= 2 ** 62, so 8-gram keys would not be exact in int64; the
    # kernel declines and the numpy path (which renumbers) scores the chunk.
    words = [f"w{k}" for k in range(300)]
    ref = " ".join(words)
    cit = " ".join(words[:10])  # 10 tokens: 3 8-grams, all of them in ref
    stream, order = token_stream([ref, cit])
    position = np.empty(2, dtype=np.int64)
    position[order] = np.arange(2)
    a, b = np.array([0]), np.array([1])
    assert ngram_numba.similarities(stream, position, a, b, 8) is None
    # The 3 8-grams of cit are all in ref: 3 / min(293, 3) = 1.0. At n=2 the kernel scores it:
    # 9 / min(299, 9) = 1.0, with 299 and 9 bigrams.
    assert NgramMatcher(n=8, kernel="numba").similarities([(ref, cit)]) == [1.0]
    got = ngram_numba.similarities(stream, position, a, b, 2)
    assert got is not None
    assert got[0].tolist() == [1.0]
    assert got[1].tolist() == [299, 9]


def test_resolve_threads() -> None:
    assert resolve_threads(3) == 3
    assert resolve_threads(0) == max(1, min(os.cpu_count() or 1, 4))


def test_chunks_on_threads_give_the_same_values_in_order() -> None:
    # Three and a half chunks of pairs; each chunk's texts are tokenised on their own, so
    # every chunk holds pairs whose similarity is known: (k-th text, same text) -> 1.0,
    # (k-th text, its first three words) -> 1.0, (k-th text, an unrelated text) -> 0.0.
    texts = [f"w{k} alpha{k} beta{k} gamma{k} delta" for k in range(CHUNK_PAIRS * 7 // 6)]
    pairs = []
    expected = []
    for k, t in enumerate(texts):
        pairs += [(t, t), (t, " ".join(t.split()[:3])), (t, f"zz{k} yy{k} xx{k}")]
        expected += [1.0, 1.0, 0.0]
    assert len(pairs) > 3 * CHUNK_PAIRS
    one, two = NgramMatcher(threads=1), NgramMatcher(threads=2)
    assert two.similarities(pairs) == one.similarities(pairs) == expected
    index = {t: i for i, t in enumerate(dict.fromkeys(x for p in pairs for x in p))}
    all_texts = list(index)
    a = np.array([index[r] for r, _ in pairs])
    b = np.array([index[c] for _, c in pairs])
    assert two.similarity_array(all_texts, a, b).tolist() == expected
    assert one.similarity_array(all_texts, a, b).tolist() == expected


def test_defaults_and_identity() -> None:
    m = NgramMatcher()
    assert isinstance(m, Matcher)
    assert (m.n, m.threads, m.kernel) == (3, 0, "auto")
    assert m.levels == {"strict": 0.75, "default": 0.5, "lenient": 0.3}
    assert m.similarity_range == (0.0, 1.0)
    assert isinstance(m, Local) and isinstance(m, FastPath)  # never cached; ids, not strings
    assert m.identity() == {"class": "runner.matchers.ngram.NgramMatcher", "n": 3,
                            "tokenizer": "auto"}
    # Threads change no similarity: not part of the identity either.
    assert NgramMatcher(threads=3).identity() == m.identity()
    assert NgramMatcher(n=2).identity() != m.identity()


def test_a_combining_mark_changes_the_word() -> None:
    # हिंदी (with the vowel signs ि and ी) and हिंद (without ी) are different words; were
    # combining marks dropped, both would read ह द and the bigrams would match.
    pairs = [("हिंदी भाषा", "हिंदी भाषा"), ("हिंदी भाषा", "हिंद भाषा")]
    assert NgramMatcher(n=2).similarities(pairs) == [1.0, 0.0]
    # Unigrams: भाषा is shared, 1 of 2 on either side.
    assert NgramMatcher(n=1).similarities(pairs[1:]) == [0.5]

"""The `llm` matcher: an OpenAI-compatible chat model judges whether two passages refer to the
same part of the source document (SPEC 4.2).

Similarity = the model's probability of answering "yes" (from the log-probabilities of its first
answer token when the server returns them, else 1.0/0.0 from the answer text), at temperature 0.
A pair that still fails after its retries (:func:`runner.api.client.retrying`) is a
:class:`~runner.matchers.base.PairError`.
Each judgment is persisted as it completes, keyed by a digest of the exact request, so an
interrupted run resumes where it stopped; the identity (the pipeline's similarity cache) holds
no threshold, key or concurrency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from runner.api.cache import ResultStore, request_key
from runner.api.client import OpenaiCaller, describe_error, effective_base_url, run_sync, shared
from runner.api.prompts import check_prompt, load_prompt
from runner.config.constraints import POSITIVE, Range, allows
from runner.matchers.base import BaseMatcher, CacheFolder, PairError, Similarity, TextPair

NAMESPACE = "llm-judgments"
_ANSWERS = {**dict.fromkeys(("yes", "y", "true"), 1.0),
            **dict.fromkeys(("no", "n", "false"), 0.0)}
"""The spellings of the judge's two answers (after :func:`_word`) and their similarity."""


def _word(token: str) -> str:
    return token.strip().strip(".,:;!\"'`*").lower()


def _get(obj: Any, name: str) -> Any:
    """A field of a parsed JSON object or of an SDK model."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def yes_probability(logprobs: Any, answer: float | None = None) -> float | None:
    """P(yes) from the ``logprobs.content`` of a chat completion, or None when not readable.

    The first token whose text is not blank is used. Its ``top_logprobs`` give the mass of the
    "yes" spellings (``Yes``, `` yes``, ``YES``, ...) and of the "no" spellings; the result is
    ``p_yes / (p_yes + p_no)``. When no "no" spelling is among the top tokens, ``p_no`` is taken
    as the unlisted mass ``1 - Σ listed`` (its upper bound), so a lone "yes" at 0.6 gives 0.6.

    Args:
        logprobs: The choice's ``logprobs``.
        answer: The answer's own verdict (1.0 yes, 0.0 no; :func:`answer_similarity`), or None.

    Raises:
        ValueError: A log-probability that is not a finite number <= 0 (NaN, infinite, or a
            probability above 1), or log-probabilities that contradict `answer` (the most
            probable listed spelling is of the other word, while at temperature 0 the answer is
            the most probable token): the reply is not a score.
    """
    tok = next((t for t in _get(logprobs, "content") or [] if str(_get(t, "token") or "").strip()),
               None)
    if tok is None:
        return None
    top = list(_get(tok, "top_logprobs") or []) or [tok]
    p_yes = p_no = listed = top_yes = top_no = 0.0
    for cand in top:
        lp = _get(cand, "logprob")
        if lp is None:
            continue
        lp = float(lp)
        if not math.isfinite(lp) or lp > 1e-6:
            raise ValueError(f"the judge's log-probability {lp!r} is not a finite number <= 0")
        p = math.exp(max(lp, -1e4))
        listed += p
        means = _ANSWERS.get(_word(str(_get(cand, "token") or "")))
        if means == 1.0:
            p_yes, top_yes = p_yes + p, max(top_yes, p)
        elif means == 0.0:
            p_no, top_no = p_no + p, max(top_no, p)
    if answer is not None and (top_no > top_yes if answer else top_yes > top_no):
        said, other = ("yes", "no") if answer else ("no", "yes")
        raise ValueError(f"the judge answered {said} but its log-probabilities favour {other} "
                         f"({max(top_yes, top_no):.3f} against {min(top_yes, top_no):.3f})")
    if p_yes == 0.0 and p_no == 0.0:
        return None
    if p_no == 0.0:
        p_no = max(0.0, 1.0 - listed)
    return p_yes / (p_yes + p_no)  # in [0, 1]: both are >= 0, and not both 0


def answer_similarity(text: str | None) -> float | None:
    """1.0 for an answer starting with "yes", 0.0 for "no", None for anything else."""
    words = (text or "").split()
    return _ANSWERS.get(_word(words[0])) if words else None


@dataclass
class LlmMatcher(BaseMatcher, CacheFolder, OpenaiCaller):
    """Similarity = an LLM judge's probability that both passages are the same part of a source.

    The chat ``model``, its server and transport are the settings of :class:`OpenaiCaller`.

    Args:
        prompt: A packaged prompt (``templates/prompts/``) or the path of your own Jinja file
            with ``{% block system %}`` and ``{% block user %}``; variables ``reference`` and
            ``citation``, to be wrapped in the ``data`` filter.
        logprobs: Ask for log-probabilities (turn off for servers that reject the option; the
            similarity is then 1.0/0.0 from the answer).
        top_logprobs: Alternatives returned per token (1-20).
        max_tokens: Completion tokens allowed (the answer is one word).
    """

    levels: ClassVar[Mapping[str, float]] = {"strict": 0.9, "default": 0.5, "lenient": 0.2}
    prompt: str = "llm_judge.j2"
    logprobs: bool = True
    top_logprobs: int = field(default=5, metadata=allows(Range(1, 20, integer=True)))
    max_tokens: int = field(default=3, metadata=allows(POSITIVE))
    concurrency: int = shared("concurrency", 32)

    where: ClassVar[str] = "matcher"
    what: ClassVar[str] = "matcher=llm"

    # --- the optional hooks the pipeline calls ---------------------------------------------

    def check(self) -> None:
        """Fail early with a one-line message: missing key, bad settings, broken prompt."""
        super().check()
        check_prompt(self.prompt, "matcher.prompt")

    def identity(self) -> dict[str, Any]:
        """The fields (model, base_url, prompt, request settings) plus the prompt's SHA-256."""
        return {**super().identity(), "base_url": effective_base_url(self.base_url),
                "prompt_sha": load_prompt(self.prompt).sha, "temperature": 0}

    # --- judging ----------------------------------------------------------------------------

    def request(self, reference: str, citation: str) -> dict[str, Any]:
        """The chat-completion request that judges one pair."""
        logprobs = {"logprobs": True, "top_logprobs": self.top_logprobs} if self.logprobs else {}
        return {"model": self.model,
                "messages": load_prompt(self.prompt).render(reference=reference, citation=citation),
                "temperature": 0, "max_tokens": self.max_tokens, **logprobs}

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        """Judge every distinct pair once, concurrently; failed pairs give PairError."""
        if not pairs:
            return []
        self.check()
        return run_sync(lambda: self._judge_all(pairs))

    async def _judge_all(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        # Keys first (a digest of each exact request); requests are rendered again when sent,
        # so a batch of 100,000 pairs never holds 100,000 rendered prompts.
        server = effective_base_url(self.base_url)
        keys = [request_key("chat", server, self.request(*pair)) for pair in pairs]
        unique = dict(zip(keys, pairs))  # one pair per distinct request
        with ResultStore(self._cache_dir, NAMESPACE, self._memory) as store:
            # A cached similarity that is not a number (an older version's): judged again.
            results: dict[str, Similarity] = {
                k: float(v["similarity"]) for k, v in store.get_many(list(unique)).items()
                if math.isfinite(v["similarity"])}
            self._usage.add(cached=len(results))
            missing = [k for k in unique if k not in results]

            async def judge(client: Any, key: str) -> None:
                value = await self._judge_one(client, self.request(*unique[key]))
                results[key] = value
                if not isinstance(value, PairError):
                    store.put(key, {"similarity": value})

            await self._send_each(missing, judge)
        return [results[k] for k in keys]

    async def _judge_one(self, client: Any, req: dict[str, Any]) -> Similarity:
        resp = await self._post(client, "/chat/completions", req)
        if isinstance(resp, Exception):
            return PairError(f"llm judge call failed: "
                             f"{describe_error(resp, 'matcher', self.max_retry_after)}")
        try:
            usage = _get(resp, "usage") or {}
            self._usage.add(requests=1, input_tokens=_get(usage, "prompt_tokens"),
                            output_tokens=_get(usage, "completion_tokens"))
            message = _get(_get(resp, "choices")[0], "message")
            if _get(message, "refusal"):
                return PairError(f"llm judge refused: {str(_get(message, 'refusal'))[:80]!r}")
            text = _get(message, "content")
            answer = answer_similarity(text)
            if answer is None:
                return PairError(f"llm judge gave no yes/no answer: {str(text)[:80]!r}")
            sim = yes_probability(_get(_get(resp, "choices")[0], "logprobs"), answer)
            return answer if sim is None else float(sim)
        except ValueError as exc:  # a log-probability that is not a number, or contradicts
            return PairError(f"llm judge reply is not a score: {exc}")
        except Exception as exc:  # a malformed reply (no choices, no message, ...)
            return PairError(f"llm judge reply is malformed: {describe_error(exc)}")

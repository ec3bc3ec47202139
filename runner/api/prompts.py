"""Prompt templates: Jinja files with a ``system`` and a ``user`` block.

Packaged prompts live in ``templates/prompts/`` (the ``runner.templates`` package); a config may
name one of them (``llm_judge.j2``) or give the path of the user's own file. A prompt's version
is the SHA-256 of its source, so editing a template changes the cache identity of everything it
produced and nothing stale is ever reused.

Passages from the data are untrusted: the ``data`` filter neutralises anything in them that looks
like the delimiting tags (``<passage>``, ``</reference_passage>``, ``< /cited_passage>``, ...) or
a chat template's turn tokens (``<|im_end|>``, ``[INST]``, ``<end_of_turn>``, ...), so a passage
cannot close its delimiter and smuggle instructions into the prompt. Look-alikes are normalised
first: NFKC (full-width ``＜／cited_passage＞`` becomes ``</cited_passage>``), invisible format
characters (zero-width spaces and joiners, bidi controls) removed, HTML entities
(``&lt;/cited_passage&gt;``) decoded.
"""

from __future__ import annotations

import functools
import hashlib
import html
import re
import unicodedata
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2

from runner.data.text import check_file, read_text
from runner.errors import RagciteError

_TAG = re.compile(r"<\s*/?\s*[A-Za-z_]*(?:passage|reference|citation|document|question)"
                  r"[A-Za-z_]*\b[^>]*>?", re.IGNORECASE)
_TURN = re.compile(r"<\|[^<>|]{0,64}\|>|</?s>|<\s*/?\s*(?:start|end)_of_turn\s*>"
                   r"|\[\s*/?\s*INST\s*\]|<<\s*/?\s*SYS\s*>>", re.IGNORECASE)
_MAX_UNESCAPE = 3  # nested escaping (&amp;lt;) decoded this many times at most


def normalise(text: str) -> str:
    """Untrusted text with look-alike characters made plain: HTML entities decoded, NFKC
    (full-width and compatibility forms), invisible format characters (category Cf) removed."""
    for _ in range(_MAX_UNESCAPE):  # text without "&" comes back from unescape as it is
        text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def fence(value: Any) -> str:
    """Neutralise delimiter-like tags and chat-template tokens in untrusted text, after
    :func:`normalise` (``<`` → ``‹``, ``>`` → ``›``, ``[`` → ``⁅``, ``]`` → ``⁆``)."""
    text = normalise("" if value is None else str(value))
    for pattern in (_TAG, _TURN):
        text = pattern.sub(lambda m: m.group(0).translate(_NEUTRAL), text)
    return text


_NEUTRAL = str.maketrans({"<": "‹", ">": "›", "[": "⁅", "]": "⁆"})


@dataclass(frozen=True)
class Prompt:
    """A loaded prompt template.

    Attributes:
        name: What the config gave (a packaged name or a path).
        sha: First 12 hex digits of the SHA-256 of the source: the prompt version.
    """

    name: str
    sha: str
    template: jinja2.Template

    def render(self, **variables: Any) -> list[dict[str, str]]:
        """Chat messages: the ``system`` block (if any) and the ``user`` block.

        Raises:
            ValueError: The template has no ``user`` block, or a variable is missing.
        """
        blocks = self.template.blocks
        if "user" not in blocks:
            raise ValueError(f"prompt {self.name!r} has no {{% block user %}}")
        ctx = self.template.new_context(variables)
        try:
            texts = {role: "".join(blocks[role](ctx)).strip() for role in ("system", "user")
                     if role in blocks}
        except jinja2.UndefinedError as exc:
            raise ValueError(f"prompt {self.name!r}: {exc}") from None
        return [{"role": role, "content": text} for role, text in texts.items() if text]


def check_prompt(name: str, key: str) -> None:
    """Refuse a prompt that cannot be loaded (:func:`load_prompt`), before any work.

    Raises:
        RagciteError: One line naming the config key (``matcher.prompt: ...``).
    """
    try:
        load_prompt(name)
    except ValueError as exc:
        raise RagciteError(f"{key}: {exc}") from None


@functools.lru_cache(maxsize=32)
def load_prompt(name: str) -> Prompt:
    """Load a packaged prompt by file name, or the user's template by path.

    Raises:
        ValueError: No such prompt, a path that is no readable UTF-8 file, or a syntax error
            in it.
    """
    path = Path(name).expanduser()
    if path.exists():  # a folder, a FIFO, a device or a file that cannot be read: one line
        check_file(path)
        source = read_text(path)
    else:
        folder = files("runner.templates").joinpath("prompts")
        if not folder.joinpath(name).is_file():
            packaged = sorted(p.name for p in folder.iterdir() if p.name.endswith(".j2"))
            raise ValueError(f"prompt {name!r}: no such file, and no packaged prompt of that "
                             f"name (packaged: {', '.join(packaged)})")
        source = folder.joinpath(name).read_text(encoding="utf-8")
    env = jinja2.Environment(autoescape=False, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
    env.filters["data"] = fence
    try:
        template = env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"prompt {name!r}: line {exc.lineno}: {exc.message}") from None
    sha = hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]
    return Prompt(name=name, sha=sha, template=template)

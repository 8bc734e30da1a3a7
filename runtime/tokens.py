"""Counting tokens offline, so that every level of detail carries its cost when it is written.

The history store renders to a token budget (DESIGN.md, "The history store"): each entry's
LIVE, RECENT and GIST texts are counted once, when the entry is written, and rendering only
adds the cached counts up. Counting uses :mod:`quicktok`, which ships its vocabulary files:
nothing is downloaded, so it works on a machine with the network off.

Public: ``from livecontext.runtime.tokens import TokenCounter``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

import quicktok  # type: ignore[import-untyped]  # (it ships no type information)

from livecontext.protocol import Content, LevelText

from ._errors import UsageError

__all__ = ["BUNDLED_ENCODINGS", "DEFAULT_ENCODING", "MESSAGE_OVERHEAD_TOKENS", "TOKENIZER_ENV_VAR", "TokenCounter"]

BUNDLED_ENCODINGS: tuple[str, ...] = (
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
    "llama3",
    "qwen3",
)
"""The encodings :mod:`quicktok` bundles, hence the ones a :class:`TokenCounter` accepts."""

DEFAULT_ENCODING = "cl100k_base"
"""The encoding used when none is chosen (GPT-4 and GPT-3.5's; close enough for budgeting)."""

TOKENIZER_ENV_VAR = "LIVECONTEXT_TOKENIZER"
"""The environment variable :meth:`TokenCounter.from_env` reads the encoding name from."""

CACHED_COUNTS = 4096
"""How many counts of short texts a :class:`TokenCounter` keeps (least recently used first out)."""

CACHED_TEXT_CHARS = 2048
"""The longest text whose count a :class:`TokenCounter` keeps: longer ones are counted each
time (tokenizing them dwarfs the lookup, and they would pin memory)."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a chat API spends on each message besides its text (role and separators).

OpenAI's cookbook ("How to count tokens with tiktoken") counts 3 per message for current
models and 4 for older ones; 4 errs on the safe side of a budget. Add it once per rendered
chat message.
"""


class TokenCounter:
    """Counts tokens of text with one encoding, offline.

    Loading an encoding reads its vocabulary from disk (a fraction of a second the first time
    in a process; later counters of the same encoding share it), so make one counter when the
    runtime starts and pass it to whoever writes entries, rather than one per entry.

    Text is counted as ordinary text: a special-token string such as ``<|endoftext|>`` typed
    by a user counts as the tokens of its characters, and never raises.

    A counter remembers the counts of the last :data:`CACHED_COUNTS` distinct short texts
    (up to :data:`CACHED_TEXT_CHARS` characters; at most ~32 MiB held, usually far less). One
    counter is shared by every agent of a runtime, and their texts repeat: a system prompt,
    tool names and their arguments, an app's window, short tool results and their gists.
    Counting is a pure function of the text, so the cache changes no result; looking a text
    up costs a hash (computed once per string object) where tokenizing costs a call into the
    tokenizer plus time in the text's length.

    Args:
        encoding: One of :data:`BUNDLED_ENCODINGS`.

    Raises:
        UsageError: if ``encoding`` is not one of :data:`BUNDLED_ENCODINGS`.
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        if encoding not in BUNDLED_ENCODINGS:
            raise UsageError(
                f"unknown tokenizer encoding {encoding!r}: choose one of "
                f"{', '.join(BUNDLED_ENCODINGS)} (pass encoding=... or set {TOKENIZER_ENV_VAR})"
            )
        self._encoding = encoding
        self._tokenizer = quicktok.get_encoding(encoding)
        self._count_short = functools.lru_cache(maxsize=CACHED_COUNTS)(self._count_text)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TokenCounter:
        """A counter for the encoding named by ``LIVECONTEXT_TOKENIZER``, or the default.

        Args:
            environ: Where to read the variable; ``os.environ`` when omitted.

        Raises:
            UsageError: if the variable names an encoding not in :data:`BUNDLED_ENCODINGS`.
        """
        env = os.environ if environ is None else environ
        name = env.get(TOKENIZER_ENV_VAR, "").strip()
        if not name:
            return cls()
        if name not in BUNDLED_ENCODINGS:
            raise UsageError(
                f"{TOKENIZER_ENV_VAR}={name!r} is not a known tokenizer encoding: set it to one "
                f"of {', '.join(BUNDLED_ENCODINGS)}, or unset it to use {DEFAULT_ENCODING}"
            )
        return cls(name)

    @property
    def encoding(self) -> str:
        """The name of the encoding this counter uses."""
        return self._encoding

    def count(self, text: str) -> int:
        """The number of tokens of ``text`` (0 for the empty string)."""
        if text.__class__ is str and len(text) <= CACHED_TEXT_CHARS:
            return self._count_short(text)
        return int(self._tokenizer.count(text))

    def _count_text(self, text: str) -> int:
        return int(self._tokenizer.count(text))

    def content(self, live: str, recent: str, gist: str) -> Content:
        """A :class:`~livecontext.protocol.Content` holding the three levels and their counts.

        Each distinct string is counted once: when two levels hold the same text (a short
        tool result is often its own gist), the count is reused.
        """
        # (written out: every entry and tool result is built here) Equal texts share one
        # LevelText: it is immutable, and its count is the same.
        count = self.count
        live_level = LevelText(live, count(live))
        recent_level = live_level if recent == live else LevelText(recent, count(recent))
        if gist == live:
            gist_level = live_level
        elif gist == recent:
            gist_level = recent_level
        else:
            gist_level = LevelText(gist, count(gist))
        return Content(live_level, recent_level, gist_level)

    def __repr__(self) -> str:
        return f"TokenCounter(encoding={self._encoding!r})"

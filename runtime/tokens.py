"""Token counting, offline (public re-export of the tokenizer wrapper)."""

from __future__ import annotations

from ._tokens import BUNDLED_ENCODINGS, DEFAULT_ENCODING, MESSAGE_OVERHEAD_TOKENS, TOKENIZER_ENV_VAR, TokenCounter

__all__ = ["BUNDLED_ENCODINGS", "DEFAULT_ENCODING", "MESSAGE_OVERHEAD_TOKENS", "TOKENIZER_ENV_VAR", "TokenCounter"]

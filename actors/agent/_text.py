"""Checking text that a user gives an agent before anything of it is written.

Bytes that are not UTF-8 reach Python as lone surrogates (a command line, or a pipe read with
``surrogateescape``); nothing downstream can count, store or send them, so they are refused
where they enter, with the bytes shown, rather than failing deep inside a step.
"""

from __future__ import annotations

from livecontext.runtime import UsageError

_SHOWN = 60
"""How much of the bad text an error shows."""


class InvalidTextError(UsageError):
    """Text given to an agent (an input, a pinned input, a system prompt) is not valid UTF-8;
    nothing of it was written."""

    def __init__(self, what: str, text: str, position: int) -> None:
        self.what = what
        self.text = text
        self.position = position
        """The index of the first character that is no valid text."""
        super().__init__(
            f"the {what} {_shown(text)} is not valid UTF-8 (at character {position}); give it as "
            "UTF-8 text (check the encoding of your terminal or file); nothing was written"
        )


def check_text(text: str, what: str) -> str:
    """``text`` if it is valid Unicode text (no lone surrogates).

    Raises:
        InvalidTextError: it holds bytes that were not UTF-8 (decoded as surrogates).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidTextError(what, text, exc.start) from None
    return text


def _shown(text: str) -> str:
    """``text`` as the bytes it came from, quoted, invalid bytes written as ``\\xNN``."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
        shown = raw.decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        shown = text.encode("utf-8", "backslashreplace").decode("ascii")
    shown = " ".join(shown.split())
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 1] + "…"
    return f"'{shown}'"

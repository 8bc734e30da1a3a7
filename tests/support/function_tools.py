"""Plain functions marked as tools, importable by path (``tests.support.function_tools:add``)."""

from __future__ import annotations

import threading

import trio

from livecontext.actors.apps import ToolFailure, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@tool(idempotent=True)
def which_thread() -> str:
    """Say which thread runs this tool."""
    return threading.current_thread().name


@tool
async def slow_echo(text: str, delay: float = 0.0) -> str:
    """Say the text back after a while.

    Args:
        text: What to say.
        delay: Seconds to wait first.
    """
    await trio.sleep(delay)
    return text


@tool
def count_words(text: str) -> dict[str, int]:
    """Count each word of a text.

    Args:
        text: The text.
    """
    words = text.split()
    return {w: words.count(w) for w in sorted(set(words))}


@tool
def refuse(reason: str) -> str:
    """Refuse, saying why.

    Args:
        reason: Why.
    """
    raise ToolFailure(f"refused: {reason}")


def unmarked(word: str) -> str:
    """Shout a word.

    Args:
        word: The word.
    """
    return word.upper()


NOT_A_FUNCTION = 3

"""Building entries' content at every level of detail, once, when they are written."""

from __future__ import annotations

from collections.abc import Sequence

from livecontext.protocol import Content, LevelText, Notification, ToolCall
from livecontext.runtime.tokens import TokenCounter

GIST_CHARS = 160
"""The longest gist line, in characters."""


def gist_line(text: str, limit: int = GIST_CHARS) -> str:
    """The first non-blank line of ``text``, shortened to ``limit`` characters."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def notifications_text(notifications: Sequence[Notification]) -> str:
    """The block of notifications appended to an observation."""
    if not notifications:
        return ""
    lines = [f"- [{n.id} from {n.sender}] {n.text}" for n in notifications]
    return "[Notifications]\n" + "\n".join(lines)


def input_content(text: str, notifications: Sequence[Notification], counter: TokenCounter) -> Content:
    """A model input: the text, then the notifications it delivers."""
    note = notifications_text(notifications)
    full = "\n\n".join(part for part in (text, note) if part)
    gist_notes = f" (+{len(notifications)} notifications)" if notifications else ""
    gist = f"user: {gist_line(text)}{gist_notes}" if text else f"{len(notifications)} notifications"
    return counter.content(full, full, gist)


def output_content(text: str, tool_calls: Sequence[ToolCall], counter: TokenCounter) -> Content:
    """A model output: the answer's text; token counts include the tool calls it makes."""
    calls_tokens = sum(counter.count(c.name) + counter.count(c.arguments) + 3 for c in tool_calls)
    calls = ", ".join(c.name for c in tool_calls)
    gist = gist_line(text) or (f"(called {calls})" if calls else "")
    if not calls_tokens:
        return counter.content(text, text, gist)
    # what counter.content(text, text, gist) gives, each level's count plus the calls'
    live = LevelText(text, counter.count(text) + calls_tokens)
    short = live if gist == text else LevelText(gist, counter.count(gist) + calls_tokens)
    return Content(live, live, short)


def results_content(notifications: Sequence[Notification], counter: TokenCounter) -> Content:
    """A tool-results entry's own content: the notifications it delivers (results carry theirs)."""
    note = notifications_text(notifications)
    gist = f"{len(notifications)} notifications" if notifications else ""
    return counter.content(note, note, gist)

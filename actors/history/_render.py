"""Rendering a history into chat messages under a token budget (DESIGN.md, "Rendering").

Order of priority: the system prompt, the latest observation at LIVE with the apps' windows,
the recap, then older entries newest first at RECENT while they fit and at GIST after that,
stopping at the first that does not fit even at GIST. A model output and its tool results are
one unit, rendered together or not at all. The work done is proportional to what is rendered,
not to the history's length.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from livecontext.protocol import (
    ChatMessage,
    HistoryEntry,
    Level,
    ModelInputEntry,
    ModelOutputEntry,
    RecapEntry,
    Role,
    ToolResultsEntry,
)
from livecontext.runtime import UsageError
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS as OVERHEAD


class BudgetTooSmallError(UsageError):
    """Not even the system prompt and the latest observation at GIST fit in the budget."""

    def __init__(self, budget: int, needed: int) -> None:
        self.budget = budget
        self.needed = needed
        super().__init__(
            f"token budget {budget} is too small: the system prompt and the latest observation "
            f"need at least {needed} tokens; raise --budget"
        )


@frozen
class RenderResult:
    """The rendered messages (oldest first) and their token count."""

    messages: tuple[ChatMessage, ...]
    tokens: int
    entries: int


_Piece = tuple[list[ChatMessage], int]


def _entry_messages(entry: HistoryEntry, level: Level, windows: str | None,
                    windows_tokens: int) -> _Piece:
    """The messages of one entry at ``level`` (``windows`` injected if given) and their tokens."""
    if isinstance(entry, ModelInputEntry):
        lt = entry.content.at(level)
        text, tokens = lt.text, lt.tokens
        if windows:
            text, tokens = f"{text}\n\n{windows}" if text else windows, tokens + windows_tokens
        return [ChatMessage(Role.USER, text)], tokens + OVERHEAD
    if isinstance(entry, ModelOutputEntry):
        lt = entry.content.at(level)
        return [ChatMessage(Role.ASSISTANT, lt.text, entry.tool_calls)], lt.tokens + OVERHEAD
    if isinstance(entry, ToolResultsEntry):
        msgs: list[ChatMessage] = []
        tokens = 0
        for result in entry.results:
            rt = result.content.at(level)
            msgs.append(ChatMessage(Role.TOOL, f"[{result.status.value}] {rt.text}", tool_call_id=result.call_id))
            tokens += rt.tokens + OVERHEAD + 2
        note = entry.content.at(level)
        extra = "\n\n".join(p for p in (note.text, windows or "") if p)
        if extra:
            msgs.append(ChatMessage(Role.USER, extra))
            tokens += note.tokens + (windows_tokens if windows else 0) + OVERHEAD
        return msgs, tokens
    raise TypeError(f"cannot render a {type(entry).__name__} as an entry")


def _unit_messages(unit: Sequence[HistoryEntry], level: Level) -> _Piece:
    msgs: list[ChatMessage] = []
    tokens = 0
    for entry in unit:
        m, t = _entry_messages(entry, level, None, 0)
        msgs += m
        tokens += t
    return msgs, tokens


def render(active: Sequence[HistoryEntry], recaps: Sequence[RecapEntry], budget: int, *,
           system_prompt: str, system_tokens: int, windows: str, windows_tokens: int) -> RenderResult:
    """Render ``active`` entries (oldest first, none folded) under ``budget`` tokens.

    Raises:
        BudgetTooSmallError: the system prompt and the latest observation do not fit.
    """
    head: list[ChatMessage] = []
    used = 0
    if system_prompt:
        head.append(ChatMessage(Role.SYSTEM, system_prompt))
        used += system_tokens + OVERHEAD
    if used > budget:
        raise BudgetTooSmallError(budget, used)
    tail: list[list[ChatMessage]] = []  # units, newest first
    count = 0
    i = len(active) - 1
    # The latest observation, at LIVE with the windows (falling back level by level).
    if i >= 0 and not isinstance(active[i], ModelOutputEntry):
        latest = active[i]
        unit_start = i - 1 if isinstance(latest, ToolResultsEntry) and i > 0 else i
        prefix = list(active[unit_start:i])
        chosen: _Piece | None = None
        for level, with_windows in ((Level.LIVE, True), (Level.RECENT, True), (Level.GIST, True), (Level.GIST, False)):
            pm, pt = _unit_messages(prefix, level)
            lm, lt = _entry_messages(latest, level, windows if with_windows else None, windows_tokens)
            if used + pt + lt <= budget:
                chosen = (pm + lm, pt + lt)
                break
        if chosen is None:
            pm, pt = _unit_messages(prefix, Level.GIST)
            _, lt = _entry_messages(latest, Level.GIST, None, 0)
            raise BudgetTooSmallError(budget, used + pt + lt)
        tail.append(chosen[0])
        used += chosen[1]
        count += len(prefix) + 1
        i = unit_start - 1
    # The recap, if it fits (newest recaps first).
    recap_msgs: list[ChatMessage] = []
    for recap in reversed(recaps):
        for level in (Level.LIVE, Level.GIST):
            lt = recap.content.at(level)
            if used + lt.tokens + OVERHEAD <= budget:
                recap_msgs.insert(0, ChatMessage(Role.SYSTEM, f"[Recap of earlier steps]\n{lt.text}"))
                used += lt.tokens + OVERHEAD
                break
    # Older units, newest first: RECENT while they fit, then GIST; stop at the first misfit.
    level = Level.RECENT
    while i >= 0:
        entry = active[i]
        start = i - 1 if isinstance(entry, ToolResultsEntry) and i > 0 and isinstance(active[i - 1], ModelOutputEntry) else i
        unit = active[start : i + 1]
        if isinstance(entry, ModelOutputEntry) and entry.tool_calls:
            # an output whose results are not in an entry yet: its calls would be orphans
            unit_msgs, unit_tokens = _unit_messages(unit, level)
            unit_msgs = [ChatMessage(Role.ASSISTANT, unit_msgs[0].content)]
        else:
            unit_msgs, unit_tokens = _unit_messages(unit, level)
        if used + unit_tokens > budget and level is Level.RECENT:
            level = Level.GIST
            continue
        if used + unit_tokens > budget:
            break
        tail.append(unit_msgs)
        used += unit_tokens
        count += len(unit)
        i = start - 1
    messages = head + recap_msgs
    for unit_msgs in reversed(tail):
        messages += unit_msgs
    return RenderResult(tuple(messages), used, count)

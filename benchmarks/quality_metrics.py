"""What one rendered context kept of a transcript: the metrics of ``bench_context_quality.py``.

Each is computed from what the model was actually given (the messages of a
:class:`~livecontext.protocol.history.ModelRequest`) and from how the history store says it showed
each entry (the ``spans`` of :class:`~livecontext.protocol.agent.BeforeModelCall`). Where a
runtime publishes no spans, :func:`infer_spans` reads them back from the messages.

A *unit* is one step of the history as the entries' ids name it: the task's input entry
alone, or a model output with the tool results after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence

from attrs import frozen

from livecontext.actors.history._render import RECAP_PREFIX
from livecontext.protocol.agent import RenderedSpan
from livecontext.protocol.history import (
    ChatMessage,
    HistoryEntry,
    ModelInputEntry,
    ModelOutputEntry,
    RecapEntry,
    Role,
    Shown,
    ToolResult,
    ToolResultsEntry,
)

MESSAGE_TOKENS = 4
"""What a chat message costs beyond its text (the runtime's ``MESSAGE_OVERHEAD_TOKENS``)."""
CALL_TOKENS = 3
"""What a tool call costs beyond its name and arguments (as the runtime's renderer counts it)."""

IN_WINDOW = frozenset({Shown.LIVE, Shown.RECENT})
REPRESENTED = frozenset({Shown.LIVE, Shown.RECENT, Shown.GIST})
_RANK = {Shown.LIVE: 4, Shown.RECENT: 3, Shown.GIST: 2, Shown.RECAP: 1, Shown.OMITTED: 0}

_ID = re.compile(r"\be(\d+)\b")
_RANGE = re.compile(r"\be(\d+)\s*(?:–|—|-|\.\.\.?|to)\s*e?(\d+)\b")
"""An id range: ``e12–e40``, ``e12-e40``, ``e12..40``, ``e12 to e40``."""


def number(entry_id: str) -> int:
    """The number in an entry id: ``e12`` -> 12."""
    return int(entry_id.lstrip("e"))


def message_tokens(messages: Iterable[ChatMessage], count: Callable[[str], int]) -> int:
    """The tokens of ``messages``: their texts and tool calls, counted, plus each message's
    and call's fixed cost (as the runtime's renderer charges them)."""
    total = 0
    for m in messages:
        total += count(m.content) + MESSAGE_TOKENS
        for call in m.tool_calls:
            total += count(call.name) + count(call.arguments) + CALL_TOKENS
    return total


def task_present(messages: Iterable[ChatMessage], task: str) -> bool:
    """Whether the task statement appears verbatim in one of the messages."""
    return any(task in m.content for m in messages)


def recap_text(messages: Sequence[ChatMessage]) -> str:
    """The rendered recaps: the messages that say they are one. (Not the line saying what was
    left out: it names entries that are not shown.)"""
    return "\n".join(m.content for m in messages if m.content.startswith(RECAP_PREFIX))


@frozen
class Names:
    """The entries a recap's text names: single ids and inclusive id ranges."""

    ids: frozenset[int]
    ranges: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, text: str) -> Names:
        ranges = tuple((int(a), int(b)) for a, b in _RANGE.findall(text))
        return cls(frozenset(int(n) for n in _ID.findall(text)), ranges)

    def __contains__(self, entry_number: object) -> bool:
        return entry_number in self.ids or any(lo <= entry_number <= hi for lo, hi in self.ranges)  # type: ignore[operator]


def shown_by_number(spans: Iterable[RenderedSpan]) -> dict[int, Shown]:
    """How each entry was shown, by id number; an entry in no span (folded) is absent."""
    shown: dict[int, Shown] = {}
    for span in spans:
        for n in range(number(span.first), number(span.last) + 1):
            shown[n] = span.shown
    return shown


def units_of(entries: Sequence[HistoryEntry]) -> list[tuple[str, ...]]:
    """The units of a thread's entries (folded ones included; recaps left out), oldest first."""
    units: list[tuple[str, ...]] = []
    calling = {e.id for e in entries if isinstance(e, ModelOutputEntry) and e.tool_calls}
    for e in entries:
        if isinstance(e, RecapEntry):
            continue
        if isinstance(e, ToolResultsEntry) and units and units[-1][-1] in calling:
            units[-1] += (e.id,)
        else:
            units.append((e.id,))
    return units


@frozen
class Coverage:
    """Of the units older than the rendered window, how many are still represented."""

    older: int
    represented: int
    window: int
    """Units in the rendered window."""


def coverage(units: Sequence[Sequence[str]], spans: Iterable[RenderedSpan], recap: str) -> Coverage:
    """Coverage of one call: ``units`` are the history's units at that call, oldest first.

    The rendered window is the newest unbroken run of units shown at LIVE or RECENT (a pinned
    task shown whole at the start does not make the window the whole history). An older unit
    is represented when one of its entries is shown (at GIST, or whole), or when the recap's
    text names one of them, by id or inside an id range.
    """
    shown = shown_by_number(spans)
    names = Names.of(recap)
    start = len(units)
    while start > 0 and any(shown.get(number(e)) in IN_WINDOW for e in units[start - 1]):
        start -= 1
    represented = sum(1 for unit in units[:start]
                      if any(shown.get(number(e)) in REPRESENTED or number(e) in names for e in unit))
    return Coverage(start, represented, len(units) - start)


# -- spans read back from the messages -----------------------------------------------------------


def infer_spans(messages: Sequence[ChatMessage], entries: Sequence[HistoryEntry]) -> tuple[RenderedSpan, ...]:
    """How each entry was shown in ``messages``, read back from them (for a runtime that does
    not say so in ``BeforeModelCall.spans``): a unit's level is that of its tool results' text
    (its input's, for an input), the newest unit's is LIVE; entries not found are left out,
    as folded ones are. Recaps are left out too (their text is read by :func:`recap_text`)."""
    results: dict[str, tuple[str, str, ToolResult]] = {}
    output_of: dict[str, str] = {}
    for e in entries:
        if isinstance(e, ModelOutputEntry):
            for c in e.tool_calls:
                output_of[c.id] = e.id
        elif isinstance(e, ToolResultsEntry):
            for r in e.results:
                results[r.call_id] = (e.id, output_of.get(r.call_id, e.id), r)
    inputs = [e for e in entries if isinstance(e, ModelInputEntry) and e.text]
    shown: dict[str, Shown] = {}
    for m in messages:
        if m.role is Role.TOOL and m.tool_call_id in results:
            results_id, output_id, result = results[m.tool_call_id]
            level = _level(m.content.split("] ", 1)[-1], result.content.live.text,
                           result.content.recent.text, result.content.gist.text)
            for entry_id in (output_id, results_id):
                if _RANK[level] > _RANK.get(shown.get(entry_id, Shown.OMITTED), 0):
                    shown[entry_id] = level
        elif m.role is Role.USER:
            for e in inputs:
                if e.content.live.text in m.content:
                    shown[e.id] = Shown.RECENT
                elif e.content.gist.text and m.content.startswith(e.content.gist.text):
                    shown[e.id] = Shown.GIST
    if shown:
        newest = max(shown, key=number)
        if shown[newest] is Shown.RECENT:
            shown[newest] = Shown.LIVE
    return tuple(RenderedSpan(i, i, s) for i, s in sorted(shown.items(), key=lambda kv: number(kv[0])))


def _level(text: str, live: str, recent: str, gist: str) -> Shown:
    """Which level ``text`` is (RECENT when it is also LIVE: the caller marks the newest)."""
    if text == gist and gist != recent:
        return Shown.GIST
    if text == recent or text.startswith(recent):
        return Shown.RECENT
    if text == live or text.startswith(live):
        return Shown.LIVE
    return Shown.GIST if len(text) < len(recent) else Shown.RECENT


# -- facts of the ground truth -------------------------------------------------------------------


def facts_kept(text: str, facts: Iterable[str]) -> tuple[int, int]:
    """How many of ``facts`` (lines the agent wrote, error lines) occur in ``text``, as written
    or escaped as in a call's JSON arguments: (kept, all)."""
    facts = list(facts)
    return sum(1 for f in facts if f in text or json.dumps(f)[1:-1] in text), len(facts)


def context_text(messages: Iterable[ChatMessage]) -> str:
    """Everything the model reads in ``messages``: texts and tool-call arguments."""
    parts: list[str] = []
    for m in messages:
        parts.append(m.content)
        parts += [c.arguments for c in m.tool_calls]
    return "\n".join(parts)

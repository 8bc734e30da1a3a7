"""What one model call was sent, piece by piece: each entry at its level and what it cost.

The history store's renderer chooses each unit's level and says so (``RenderResult.spans``);
what a unit cost is what the renderer counts for it (``_units.unit_messages``: the counts
cached in the entries plus fixed overheads), split between a model output and its results
as their messages are. Beside the entries a call carries its system prompt, the tools'
schemas, the recaps shown and the line saying what was left out: every token of the
rendered total is in one piece, so the pieces add up to it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from attrs import frozen

from livecontext.protocol.history import (
    ChatMessage,
    HistoryEntry,
    Level,
    ModelOutputEntry,
    RecapEntry,
    Role,
    Shown,
    ToolSpec,
    id_number,
)
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter

from ..history import (
    RECAP_PREFIX,
    RECAP_PREFIX_TOKENS,
    HistoryState,
    RenderCache,
    RenderResult,
    answers,
    tools_tokens,
    unit_messages,
)

_LEVEL = {Shown.LIVE: Level.LIVE, Shown.RECENT: Level.RECENT, Shown.GIST: Level.GIST}


@frozen
class Piece:
    """One piece of a rendered context: its id, level, tokens and text."""

    id: str
    level: str
    tokens: int
    text: str


@frozen
class CallContext:
    """What one model call was sent, oldest first, and how many entries it left out."""

    pieces: tuple[Piece, ...]
    omitted: int
    tokens: int
    """The rendered total (what the renderer counted)."""


class ContextReader:
    """Turns renders of one thread into :class:`CallContext`; keeps the pieces of older
    units, which render the same way every time at a level (an entry never changes without
    a new revision)."""

    def __init__(self, counter: TokenCounter, cache: RenderCache) -> None:
        self.counter = counter
        self.cache = cache
        self._units: dict[tuple[str, int, str, int, Shown], tuple[Piece, ...]] = {}
        self._tools: tuple[tuple[ToolSpec, ...], Piece] | None = None
        self._system: Piece | None = None

    def read(self, state: HistoryState, result: RenderResult, windows: str) -> CallContext:
        """The pieces of ``result``, a render of ``state`` with ``windows``.

        The work grows with what was rendered, not with the history: the entries are found
        from the render's spans (runs of consecutive ids) by binary search on their ids.
        """
        active = state.active
        # (the stable policy sends entries that were folded since its last compaction: they
        # are looked for among all the entries, the recaps passed over)
        every = state.entries
        recap_ids = {span.first for span in result.spans
                     if span.first == span.last and isinstance(_entry(state, span.first), RecapEntry)}
        start = _latest_start(active)
        latest_entry = active[start].id if start is not None else None
        final = result.messages[-1] if result.messages else None
        # the windows: a message of their own last (the stable policy), or in the latest observation's
        apart = bool(windows) and final is not None and final.role is Role.USER and final.content == windows
        with_windows = bool(windows) and final is not None and final.content.endswith(windows) and not apart
        entries: list[tuple[int, tuple[Piece, ...]]] = []  # (id number of the unit's first entry, pieces)
        omitted = 0
        recaps_shown: set[str] = set()
        first_left_out: int | None = None
        i = 0  # (the spans are in id order, as the entries are: each is looked for after the one before)
        for span in result.spans:
            if span.first in recap_ids:
                if span.shown is Shown.RECAP:
                    recaps_shown.add(span.first)
                continue
            first, last = id_number(span.first), id_number(span.last)
            if span.shown not in _LEVEL:  # (an omitted run may hold an omitted recap's id too)
                if first_left_out is None:
                    first_left_out = first
                omitted += last - first + 1
                i = _position(every, last + 1, i)
                continue
            i = _position(every, first, i)
            while i < len(every) and (number := id_number(every[i].id)) <= last:
                entry = every[i]
                if isinstance(entry, RecapEntry):
                    i += 1
                    continue
                j = i + 1  # (a recap made while a tool ran may stand between an output and its results)
                while j < len(every) and isinstance(every[j], RecapEntry):
                    j += 1
                unit: list[HistoryEntry] = [entry, every[j]] if j < len(every) and answers(entry, every[j]) else [entry]
                if entry.id == latest_entry:
                    shown = self._pieces(unit, span.shown, windows if with_windows else None)
                else:
                    shown = self._kept_pieces(unit, span.shown)
                entries.append((number, shown))
                i = j + 1 if len(unit) == 2 else i + 1
        sent_recaps = [r for r in (_entry(state, i) for i in sorted(recap_ids, key=id_number))
                       if isinstance(r, RecapEntry)]
        recaps = self._recaps(sent_recaps, recaps_shown, result.messages)
        pieces = _lay_out(self._head(state), entries, recaps, self._note(result.messages), sent_recaps,
                          first_left_out)
        if apart:
            pieces.append(Piece("windows", "live", self.counter.count(windows) + MESSAGE_OVERHEAD_TOKENS,
                                f"user: {windows}"))
        omitted += sum(1 for r in sent_recaps if r.id not in recaps_shown)
        return CallContext(tuple(pieces), omitted, result.tokens)

    def _head(self, state: HistoryState) -> list[Piece]:
        """What every call carries before the history: the system prompt, the tools' schemas."""
        head = []
        prompt = state.system_prompt
        if prompt:
            if self._system is None or self._system.text != prompt:
                self._system = Piece("system", "live", self.counter.count(prompt) + MESSAGE_OVERHEAD_TOKENS, prompt)
            head.append(self._system)
        specs = state.config.tools if state.config is not None else ()
        if specs:
            kept = self._tools
            if kept is None or kept[0] != specs:
                kept = self._tools = (specs, self._tools_piece(specs))
            head.append(kept[1])
        return head

    def _tools_piece(self, specs: tuple[ToolSpec, ...]) -> Piece:
        """The tools' schemas, each as a chat API is sent it, one a line, counted as the
        renderer counts them."""
        lines = [json.dumps({"type": "function", "function": {
            "name": spec.name, "description": spec.description,
            "parameters": json.loads(spec.parameters_json)}}, ensure_ascii=False) for spec in specs]
        return Piece("tools", "live", tools_tokens(specs, self.counter), "\n".join(lines))

    def _kept_pieces(self, unit: list[HistoryEntry], how: Shown) -> tuple[Piece, ...]:
        """An older unit's pieces: from the render cache's messages for that unit (the
        renderer has just used them), kept by the unit's entries and revisions and the level."""
        first, last = unit[0], unit[-1]
        key = (first.id, first.revision, last.id, last.revision, how)
        found = self._units.get(key)
        if found is None:
            if len(self._units) >= 16_384:  # (a long thread: start afresh, as the render cache does)
                self._units.clear()
            messages, tokens = self.cache.levels(unit).piece(_LEVEL[how])
            found = self._units[key] = _split(unit, how, messages, tokens)
        return found

    def _pieces(self, unit: list[HistoryEntry], how: Shown, windows: str | None) -> tuple[Piece, ...]:
        """The latest unit's pieces, its windows in its last message (if they were sent)."""
        counted = (windows, self.counter.count(windows)) if windows else None
        messages, tokens = unit_messages(unit, _LEVEL[how], counted)
        return _split(unit, how, messages, tokens)

    def _recaps(self, recaps: Sequence[RecapEntry], shown: set[str],
                messages: Sequence[ChatMessage]) -> dict[str, Piece]:
        """The recaps shown, by id: each at LIVE, or at GIST where LIVE did not fit."""
        if not shown:
            return {}
        sent = {m.content for m in messages if m.role is Role.SYSTEM and m.content.startswith(RECAP_PREFIX)}
        pieces = {}
        for recap in recaps:
            if recap.id not in shown:
                continue
            live = recap.content.at(Level.LIVE)
            lt = live if f"{RECAP_PREFIX}{live.text}" in sent else recap.content.at(Level.GIST)
            pieces[recap.id] = Piece(recap.id, "recap", lt.tokens + RECAP_PREFIX_TOKENS + MESSAGE_OVERHEAD_TOKENS,
                                     f"{RECAP_PREFIX}{lt.text}")
        return pieces

    def _note(self, messages: Sequence[ChatMessage]) -> Piece | None:
        """The line saying what was left out, if the render has one."""
        for m in messages:
            if m.role is Role.SYSTEM and m.content.startswith("[") and "left out for want of budget" in m.content:
                return Piece("omitted", "gist", self.counter.count(m.content) + MESSAGE_OVERHEAD_TOKENS, m.content)
        return None


def _split(unit: list[HistoryEntry], how: Shown, messages: Sequence[ChatMessage], tokens: int) -> tuple[Piece, ...]:
    """A unit's pieces: one entry's, or a model output's and its results', split as their
    messages are (an output is one message costing its level's count and a message's
    overhead: see ``history._units``)."""
    if len(unit) == 1:
        return (Piece(unit[0].id, how.value, tokens, _text(messages)),)
    output = unit[0].content.at(_LEVEL[how]).tokens + MESSAGE_OVERHEAD_TOKENS
    return (Piece(unit[0].id, how.value, output, _text(messages[:1])),
            Piece(unit[1].id, how.value, tokens - output, _text(messages[1:])))


def _entry(state: HistoryState, entry_id: str) -> HistoryEntry | None:
    at = state.pos.get(entry_id)
    return None if at is None else state.entries[at]


def _position(active: Sequence[HistoryEntry], number: int, lo: int = 0) -> int:
    """The position in ``active`` (ids increasing), from ``lo`` on, of the first entry whose
    id's number is ``number`` or more."""
    hi = len(active)
    if lo < hi and id_number(active[lo].id) >= number:
        return lo  # (the next span starts where the one before ended)
    while lo < hi:
        mid = (lo + hi) // 2
        if id_number(active[mid].id) < number:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _latest_start(active: Sequence[HistoryEntry]) -> int | None:
    """Where the latest observation's unit starts (it carries the windows), as the renderer finds it."""
    i = len(active) - 1
    if i < 0 or isinstance(active[i], ModelOutputEntry):
        return None
    return i - 1 if i > 0 and answers(active[i - 1], active[i]) else i


def _lay_out(head: list[Piece], entries: list[tuple[int, tuple[Piece, ...]]], recaps: dict[str, Piece],
             note: Piece | None, all_recaps: Sequence[RecapEntry], first_left_out: int | None) -> list[Piece]:
    """The pieces in the order the renderer lays the messages out: the recaps before the
    first unit newer than all they stand for, the omission line where the oldest entry left
    out was (see ``history._render._Planner._lay_out``)."""
    boundary = max((id_number(r.covers[-1]) for r in all_recaps if r.id in recaps and r.covers), default=-1)
    out = list(head)
    recap_pieces = [recaps[r.id] for r in all_recaps if r.id in recaps]
    recaps_placed = not recap_pieces
    note_placed = note is None
    for number, pieces in entries:
        if not recaps_placed and number > boundary:
            out += recap_pieces
            recaps_placed = True
        if not note_placed and first_left_out is not None and number > first_left_out:
            out.append(note)  # type: ignore[arg-type]
            note_placed = True
        out += pieces
    if not recaps_placed:
        out += recap_pieces
    if not note_placed:
        out.append(note)  # type: ignore[arg-type]
    return out


def _text(messages: Sequence[ChatMessage]) -> str:
    """Messages as the model got them, as readable text: role, content, tool calls."""
    parts = []
    for m in messages:
        lines = [m.content] if m.content else []
        lines += [f"-> {c.name}({c.arguments})" for c in m.tool_calls]
        parts.append(f"{m.role.value}: " + "\n".join(lines))
    return "\n\n".join(parts)

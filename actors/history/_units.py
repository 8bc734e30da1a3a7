"""A unit's chat messages at one level of detail, and what they cost (DESIGN.md, "Rendering").

A *unit* is an entry, or a model output and the tool results answering its calls: a chat API
rejects a tool call without its result, so the two are rendered together or not at all.
Costs are the counts cached in the entries plus fixed overheads no smaller than what any
bundled encoding spends on what rendering adds around them, so they bound the tokens sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from livecontext.protocol.history import (
    ChatMessage,
    HistoryEntry,
    Level,
    ModelInputEntry,
    ModelOutputEntry,
    Role,
    ToolResultsEntry,
)
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS as OVERHEAD

JOIN_TOKENS = 1
"""The blank line joining two texts in one message: its own token. No token spans it, because
every bundled encoding splits text at runs of newlines before merging."""
STATUS_PREFIX_TOKENS = 7
"""``[interrupted] `` and its neighbours before a tool result's text (at most 6 tokens in any
bundled encoding, the boundary with the text included), plus one to spare."""

Piece = tuple[Sequence[ChatMessage], int]
"""A unit's messages and what they cost."""
Windows = tuple[str, int]
"""The apps' windows and their token count, injected into the latest observation."""

def answers(output: HistoryEntry, results: HistoryEntry) -> bool:
    """Whether ``results`` holds the results of exactly ``output``'s tool calls, in order."""
    if not isinstance(output, ModelOutputEntry) or not isinstance(results, ToolResultsEntry):
        return False
    calls, made = output.tool_calls, results.results
    if not calls or len(calls) != len(made):
        return False
    for call, result in zip(calls, made):
        if call.id != result.call_id:
            return False
    return True


def _with_windows(text: str, tokens: int, windows: Windows | None) -> tuple[str, int]:
    if windows is None or not windows[0]:
        return text, tokens
    if not text:
        return windows
    return f"{text}\n\n{windows[0]}", tokens + JOIN_TOKENS + windows[1]


def _results_messages(entry: ToolResultsEntry, level: Level, paired: bool,
                      windows: Windows | None) -> tuple[list[ChatMessage], int]:
    """Tool messages answering the calls (``paired``), or, for results whose output is not
    rendered, one user message: a tool message without its call is refused by chat APIs."""
    msgs: list[ChatMessage] = []
    tokens = 0
    texts: list[str] = []
    for result in entry.results:
        rt = result.content.at(level)
        text = f"[{result.status.value}] {rt.text}"
        if paired:
            msgs.append(ChatMessage(Role.TOOL, text, tool_call_id=result.call_id))
            tokens += rt.tokens + STATUS_PREFIX_TOKENS + OVERHEAD
        else:
            texts.append(text)
            tokens += rt.tokens + STATUS_PREFIX_TOKENS + JOIN_TOKENS
    note = entry.content.at(level)
    extra, extra_tokens = note.text, note.tokens
    if texts:
        extra = "\n\n".join([*texts, extra] if extra else texts)
    extra, extra_tokens = _with_windows(extra, extra_tokens, windows)
    if extra:
        msgs.append(ChatMessage(Role.USER, extra))
        tokens += extra_tokens + OVERHEAD
    return msgs, tokens


def _entry_messages(entry: HistoryEntry, level: Level, *, windows: Windows | None = None,
                    paired: bool = True) -> tuple[list[ChatMessage], int]:
    """The messages of one entry at ``level`` (``windows`` injected if given) and their tokens.

    ``paired``: a model output's calls are answered by the results rendered after it (else
    they are left out), and tool results follow their calls (else they become user text).
    """
    if isinstance(entry, ModelInputEntry):
        lt = entry.content.at(level)
        text, tokens = _with_windows(lt.text, lt.tokens, windows)
        return [ChatMessage(Role.USER, text)], tokens + OVERHEAD
    if isinstance(entry, ModelOutputEntry):
        lt = entry.content.at(level)  # its tokens include the tool calls' (of that level)
        calls = entry.calls_at(level) if paired else ()
        return [ChatMessage(Role.ASSISTANT, lt.text, calls)], lt.tokens + OVERHEAD
    if isinstance(entry, ToolResultsEntry):
        return _results_messages(entry, level, paired, windows)
    raise TypeError(f"cannot render a {type(entry).__name__} as an entry")


def unit_messages(unit: Sequence[HistoryEntry], level: Level, windows: Windows | None = None) -> Piece:
    """The messages of one unit (an entry, or a model output and its results), the windows
    on its last entry."""
    if len(unit) == 1:
        return _entry_messages(unit[0], level, windows=windows, paired=False)
    output, results = unit
    out_msgs, out_tokens = _entry_messages(output, level)
    res_msgs, res_tokens = _entry_messages(results, level, windows=windows)
    return out_msgs + res_msgs, out_tokens + res_tokens


class UnitLevels:
    """One unit's messages and their cost at each level (without windows), and whether each
    level shows more than the one below it: all that rendering asks of an older unit, made
    at once so that a render reads it instead of rebuilding it."""

    __slots__ = ("gist", "live", "live_shows_more", "recent", "recent_shows_more")

    def __init__(self, unit: Sequence[HistoryEntry]) -> None:
        self.gist = _kept(unit_messages(unit, Level.GIST))
        self.recent = _kept(unit_messages(unit, Level.RECENT))
        self.live = _kept(unit_messages(unit, Level.LIVE))
        self.recent_shows_more = differs(unit, Level.GIST, Level.RECENT)
        self.live_shows_more = differs(unit, Level.RECENT, Level.LIVE)

    def piece(self, level: Level) -> Piece:
        """The unit's messages at ``level`` and what they cost."""
        if level is Level.GIST:
            return self.gist
        return self.recent if level is Level.RECENT else self.live

    def shows_more(self, level: Level) -> bool:
        """Whether the unit shows more at ``level`` (RECENT or LIVE) than at the level below."""
        return self.recent_shows_more if level is Level.RECENT else self.live_shows_more


def _kept(piece: Piece) -> Piece:
    return tuple(piece[0]), piece[1]


class RenderCache:
    """The :class:`UnitLevels` of older units, kept between renders (a history store keeps one).

    An older unit renders the same way every time at a level (no windows), and an entry never
    changes without a new revision, so a unit is keyed by its entries' ids and revisions. A
    render after an append builds the new units alone and reads the others. At ``max_units``
    the cache starts afresh: it holds at most what a few renders touch.
    """

    def __init__(self, max_units: int = 4096) -> None:
        self.max_units = max_units
        self._units: dict[tuple[str, int, str, int], UnitLevels] = {}
        self._system: ChatMessage | None = None

    def system_message(self, prompt: str) -> ChatMessage:
        """``ChatMessage(Role.SYSTEM, prompt)``, the same one while the prompt stays the same."""
        kept = self._system
        if kept is None or kept.content != prompt:
            kept = self._system = ChatMessage(Role.SYSTEM, prompt)
        return kept

    def levels(self, unit: Sequence[HistoryEntry]) -> UnitLevels:
        """``UnitLevels(unit)``, kept."""
        first, last = unit[0], unit[-1]
        key = (first.id, first.revision, last.id, last.revision)
        found = self._units.get(key)
        if found is None:
            if len(self._units) >= self.max_units:
                self._units.clear()
            found = self._units[key] = UnitLevels(unit)
        return found

    def __len__(self) -> int:
        return len(self._units)


def differs(unit: Sequence[HistoryEntry], lower: Level, higher: Level) -> bool:
    """Whether any entry of ``unit`` shows more at ``higher`` than at ``lower``."""
    for entry in unit:
        if not _same(entry.content.at(higher), entry.content.at(lower)):  # (an output's count includes its calls)
            return True
        if isinstance(entry, ToolResultsEntry):
            for result in entry.results:
                if not _same(result.content.at(higher), result.content.at(lower)):
                    return True
    return False


def _same(a: object, b: object) -> bool:
    return a is b or a == b  # (levels with the same text are one object, as the counter makes them)

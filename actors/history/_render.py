"""Rendering a history into chat messages under a token budget (DESIGN.md, "Rendering").

Order of priority: the system prompt, the latest observation at LIVE with the apps' windows,
the recap, then older entries newest first at RECENT while they fit and at GIST after that,
stopping at the first that does not fit even at GIST. A model output and its tool results are
one unit, rendered together or not at all. The work done is proportional to what is rendered,
not to the history's length.

Token counts are added up from the counts cached in the entries, never recounted. What
rendering adds around the cached texts (a tool result's ``[status]`` prefix, the blank line
before the windows, the recap's heading) is charged at a fixed cost no smaller than what any
bundled encoding spends on it, so the total is an upper bound of the tokens sent.
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

# Enum members bound once: in Python 3.11 every attribute lookup on an Enum class takes
# the slow path EnumType.__getattr__ forces (~75 ns against ~15), and these are read at every step.
_LIVE, _RECENT, _GIST = Level.LIVE, Level.RECENT, Level.GIST

JOIN_TOKENS = 1
"""The blank line joining two texts in one message: its own token. No token spans it, because
every bundled encoding splits text at runs of newlines before merging."""
STATUS_PREFIX_TOKENS = 7
"""``[interrupted] `` and its neighbours before a tool result's text (at most 6 tokens in any
bundled encoding, the boundary with the text included), plus one to spare."""
RECAP_PREFIX = "[Recap of earlier steps]\n"
RECAP_PREFIX_TOKENS = 8
""":data:`RECAP_PREFIX` (7 tokens in every bundled encoding), plus one to spare."""


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
    """An upper bound of the tokens the messages cost (cached counts plus fixed overheads)."""
    entries: int
    """How many history entries the messages represent."""


_Piece = tuple[list[ChatMessage], int]


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


def _with_windows(text: str, tokens: int, windows: str | None, windows_tokens: int) -> tuple[str, int]:
    if not windows:
        return text, tokens
    if not text:
        return windows, windows_tokens
    return f"{text}\n\n{windows}", tokens + JOIN_TOKENS + windows_tokens


def _results_messages(entry: ToolResultsEntry, level: Level, paired: bool, windows: str | None,
                      windows_tokens: int) -> _Piece:
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
        extra, extra_tokens = "\n\n".join([*texts, extra] if extra else texts), extra_tokens
    extra, extra_tokens = _with_windows(extra, extra_tokens, windows, windows_tokens)
    if extra:
        msgs.append(ChatMessage(Role.USER, extra))
        tokens += extra_tokens + OVERHEAD
    return msgs, tokens


def _entry_messages(entry: HistoryEntry, level: Level, *, windows: str | None = None,
                    windows_tokens: int = 0, paired: bool = True) -> _Piece:
    """The messages of one entry at ``level`` (``windows`` injected if given) and their tokens.

    ``paired``: a model output's calls are answered by the results rendered after it (else
    they are left out), and tool results follow their calls (else they become user text).
    """
    if isinstance(entry, ModelInputEntry):
        lt = entry.content.at(level)
        text, tokens = _with_windows(lt.text, lt.tokens, windows, windows_tokens)
        return [ChatMessage(Role.USER, text)], tokens + OVERHEAD
    if isinstance(entry, ModelOutputEntry):
        lt = entry.content.at(level)  # its tokens include the tool calls' (of that level)
        calls = entry.calls_at(level) if paired else ()
        return [ChatMessage(Role.ASSISTANT, lt.text, calls)], lt.tokens + OVERHEAD
    if isinstance(entry, ToolResultsEntry):
        return _results_messages(entry, level, paired, windows, windows_tokens)
    raise TypeError(f"cannot render a {type(entry).__name__} as an entry")


def _unit(active: Sequence[HistoryEntry], i: int) -> int:
    """Where the unit ending at ``active[i]`` starts: a model output and its results are one."""
    if i > 0 and answers(active[i - 1], active[i]):
        return i - 1
    return i


def _unit_messages(active: Sequence[HistoryEntry], start: int, stop: int, level: Level, *,
                   windows: str | None = None, windows_tokens: int = 0) -> _Piece:
    """The messages of ``active[start:stop]`` (one unit), the windows on its last entry."""
    if stop - start == 1:  # (what the loop below does for one entry: most units are one)
        return _entry_messages(active[start], level, windows=windows, windows_tokens=windows_tokens,
                               paired=False)
    entries = [active[k] for k in range(start, stop)]
    paired = len(entries) == 2
    msgs: list[ChatMessage] = []
    tokens = 0
    for k, entry in enumerate(entries):
        last = k == len(entries) - 1
        m, t = _entry_messages(entry, level, windows=windows if last else None,
                               windows_tokens=windows_tokens, paired=paired)
        msgs += m
        tokens += t
    return msgs, tokens


class RenderCache:
    """The messages of older units, kept between renders (a history store keeps one).

    An older unit renders the same way every time at a level (no windows), and an entry never
    changes without a new revision, so a unit is keyed by its entries' ids and revisions. At
    ``max_units`` the cache starts afresh: it holds at most what a few renders touch.

    It also keeps the last render's older units when all of them fit at RECENT (a history
    shorter than the budget, rendered at every model call): the next render, which has the
    same entries before its newer ones, takes them whole when they still fit (see
    :meth:`older_prefix`), instead of unit by unit.
    """

    def __init__(self, max_units: int = 4096) -> None:
        self.max_units = max_units
        self._units: dict[tuple[str, int, str, int, Level], tuple[tuple[ChatMessage, ...], int]] = {}
        self._prefix: _Prefix | None = None
        self._system: ChatMessage | None = None

    def system_message(self, prompt: str) -> ChatMessage:
        """``ChatMessage(Role.SYSTEM, prompt)``, the same one while the prompt stays the same."""
        kept = self._system
        if kept is None or kept.content != prompt:
            kept = self._system = ChatMessage(Role.SYSTEM, prompt)
        return kept

    def prefix_end(self) -> int:
        """Where the kept older units end (-1: none kept): see :meth:`older_prefix`."""
        return len(self._prefix.entries) - 1 if self._prefix is not None else -1

    def older_prefix(self, active: Sequence[HistoryEntry], i: int, room: int) -> _Prefix | None:
        """The kept older units if they are exactly ``active[: i + 1]`` and cost at most
        ``room`` tokens: then a render that reached ``i`` at RECENT would take every one of
        them, unit by unit, as they are (no unit costs fewer than zero tokens, so if the whole
        fits, each fits when its turn comes). Their entries are compared only once they fit,
        so a render reads no more entries than it renders."""
        prefix = self._prefix
        if prefix is None or i != len(prefix.entries) - 1 or prefix.tokens > room:
            return None
        same = active[i] is prefix.entries[i]
        if same:
            head = active[: i + 1]
            same = (head if type(head) is list else list(head)) == prefix.entries
        if not same:
            self._prefix = None
            return None
        return prefix

    def keep_prefix(self, entries: list[HistoryEntry], units: list[Sequence[ChatMessage]],
                    tokens: int) -> None:
        """Keep a render's older units: ``entries``, every one rendered at RECENT in ``units``
        (newest first), costing ``tokens``."""
        messages: list[ChatMessage] = []
        for unit_msgs in reversed(units):
            messages += unit_msgs
        self._prefix = _Prefix(entries, tuple(messages), tokens)

    def unit(self, active: Sequence[HistoryEntry], start: int, stop: int,
             level: Level) -> tuple[Sequence[ChatMessage], int]:
        first, last = active[start], active[stop - 1]
        key = (first.id, first.revision, last.id, last.revision, level)
        found = self._units.get(key)
        if found is None:
            msgs, tokens = _unit_messages(active, start, stop, level)
            if len(self._units) >= self.max_units:
                self._units.clear()
            found = self._units[key] = (tuple(msgs), tokens)
        return found

    def __len__(self) -> int:
        return len(self._units)


class _Prefix:
    """Older units kept by a :class:`RenderCache`: their entries, messages and tokens."""

    __slots__ = ("entries", "messages", "tokens")

    def __init__(self, entries: list[HistoryEntry], messages: tuple[ChatMessage, ...], tokens: int) -> None:
        self.entries = entries
        self.messages = messages
        self.tokens = tokens


def render(active: Sequence[HistoryEntry], recaps: Sequence[RecapEntry], budget: int, *,
           system_prompt: str, system_tokens: int, windows: str, windows_tokens: int,
           cache: RenderCache | None = None) -> RenderResult:
    """Render ``active`` entries (oldest first, none folded) under ``budget`` tokens.

    ``cache`` keeps the messages of older units between calls (same result, less work).

    Raises:
        BudgetTooSmallError: the system prompt and the latest observation do not fit.
    """
    return RenderResult(*render_parts(active, recaps, budget, system_prompt=system_prompt,
                                      system_tokens=system_tokens, windows=windows,
                                      windows_tokens=windows_tokens, cache=cache))


def render_parts(active: Sequence[HistoryEntry], recaps: Sequence[RecapEntry], budget: int, *,
                 system_prompt: str, system_tokens: int, windows: str, windows_tokens: int,
                 cache: RenderCache | None = None) -> tuple[tuple[ChatMessage, ...], int, int]:
    """What :func:`render` gives, as ``(messages, tokens, entries)``: for a caller that puts
    them in a message of its own (the history store's ``Rendered``)."""
    head: list[ChatMessage] = []
    used = 0
    if system_prompt:
        head.append(cache.system_message(system_prompt) if cache is not None
                    else ChatMessage(Role.SYSTEM, system_prompt))
        used += system_tokens + OVERHEAD
    if used > budget:
        raise BudgetTooSmallError(budget, used)
    tail: list[Sequence[ChatMessage]] = []  # units, newest first
    count = 0
    i = len(active) - 1
    if i >= 0 and not isinstance(active[i], ModelOutputEntry):
        start = _unit(active, i)
        msgs, tokens = _latest(active, start, i + 1, budget, used, windows, windows_tokens)
        tail.append(msgs)
        used += tokens
        count += i + 1 - start
        i = start - 1
    recap_msgs, used = _recaps(recaps, budget, used)
    used, count = _older(active, i, budget, used, count, tail, cache)
    messages = head + recap_msgs
    for unit_msgs in reversed(tail):
        messages += unit_msgs
    return tuple(messages), used, count


def _latest(active: Sequence[HistoryEntry], start: int, stop: int, budget: int, used: int,
            windows: str, windows_tokens: int) -> _Piece:
    """The latest observation's unit, at LIVE with the windows, falling back level by level."""
    needed = 0
    for level, with_windows in ((_LIVE, True), (_RECENT, True), (_GIST, True),
                                (_GIST, False)):
        msgs, tokens = _unit_messages(active, start, stop, level,
                                      windows=windows if with_windows else None,
                                      windows_tokens=windows_tokens)
        needed = used + tokens
        if needed <= budget:
            return msgs, tokens
    raise BudgetTooSmallError(budget, needed)


def _recaps(recaps: Sequence[RecapEntry], budget: int, used: int) -> tuple[list[ChatMessage], int]:
    """The recaps' messages, newest first while they fit, and the tokens used after them."""
    recap_msgs: list[ChatMessage] = []
    for recap in reversed(recaps):
        fitted = False
        for level in (_LIVE, _GIST):
            lt = recap.content.at(level)
            cost = lt.tokens + RECAP_PREFIX_TOKENS + OVERHEAD
            if used + cost <= budget:
                recap_msgs.insert(0, ChatMessage(Role.SYSTEM, f"{RECAP_PREFIX}{lt.text}"))
                used += cost
                fitted = True
                break
        if not fitted:
            break
    return recap_msgs, used


def _older(active: Sequence[HistoryEntry], i: int, budget: int, used: int, count: int,
           tail: list[Sequence[ChatMessage]], cache: RenderCache | None) -> tuple[int, int]:
    """Older units ending at ``active[i]``, newest first (added to ``tail``): RECENT while they
    fit, then GIST; stop at the first misfit. Returns the tokens used and entries rendered."""
    level = _RECENT
    older, older_tokens, older_end = len(tail), 0, i
    prefix_end = cache.prefix_end() if cache is not None else -1
    while i >= 0:
        if i == prefix_end and level is _RECENT:
            assert cache is not None
            prefix = cache.older_prefix(active, i, budget - used)
            if prefix is not None:  # the rest, as the loop would take it
                tail.append(prefix.messages)
                used += prefix.tokens
                older_tokens += prefix.tokens
                count += i + 1
                i = -1
                break
        start = _unit(active, i)
        if cache is not None:
            msgs, tokens = cache.unit(active, start, i + 1, level)
        else:
            msgs, tokens = _unit_messages(active, start, i + 1, level)
        if used + tokens > budget:
            if level is _RECENT:
                level = _GIST
                continue
            break
        tail.append(msgs)
        used += tokens
        older_tokens += tokens
        count += i + 1 - start
        i = start - 1
    if cache is not None and level is _RECENT and i < 0 and older_end >= 0:
        cache.keep_prefix(list(active[: older_end + 1]), tail[older:], older_tokens)
    return used, count

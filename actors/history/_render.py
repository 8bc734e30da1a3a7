"""Rendering a history into chat messages under a token budget (DESIGN.md, "Rendering").

What goes in, in order of priority:

1. the system prompt and the tools' schemas (they are sent with every call, so they count);
2. the latest observation at LIVE with the apps' windows, else cut to its head and tail
   (RECENT) with them, else at RECENT without them, with room kept for the pinned entries'
   gists if it can be; never at GIST (an input or a tool's output replaced by one line is lost
   without a word): if even RECENT does not fit, :class:`BudgetTooSmallError`;
3. the pinned entries (retention CRITICAL: the task), at RECENT, else GIST;
4. the recaps, newest first, at LIVE else GIST, stopping at the first that does not fit;
5. older entries, newest first: at RECENT while they fit in half of the room left
   (:data:`RECENT_SHARE`), then at GIST, so the older steps keep a line each before the newer
   ones get more. A unit that does not fit even at GIST is left out and rendering goes on
   with older ones (a smaller one may fit), until the budget is spent: :data:`MAX_MISFITS`
   misfits in a row end it;
6. with budget left once everything has its place, the newest units are shown in more
   detail (GIST to RECENT, then RECENT to LIVE), so a budget larger than the history's
   RECENT is spent on full outputs rather than left unused.

What was left out is said in one line (:func:`omission_note`), placed where it was. Messages
are sent oldest first; the recaps come right before the first entry newer than everything
they stand for (after the pinned task, before the steps that followed the fold).

Where this goes past DESIGN.md's order (system prompt, recap, entries newest first): pinned
entries come before the recap, and what is left once every unit has its place is spent on
more detail (step 6), so that a large budget is not left unused.

Units and their costs are in :mod:`._units`: a model output and its tool results are one
unit, shown together at one level or not at all; costs add up the counts cached in the
entries (never recounted) and fixed overheads, so the total bounds the tokens sent. The work
done grows with what is rendered (and at most :data:`MAX_MISFITS` units more), not with the
history's length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter

from attrs import frozen

from livecontext.protocol.agent import RenderedSpan
from livecontext.protocol.history import (
    ChatMessage,
    HistoryEntry,
    Level,
    ModelInputEntry,
    ModelOutputEntry,
    RecapEntry,
    Role,
    Shown,
    id_number,
)
from livecontext.runtime import UsageError
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS as OVERHEAD

from ._units import Piece, RenderCache, UnitLevels, Windows, answers, unit_messages

RECAP_PREFIX = "[Recap of earlier steps]\n"
RECAP_PREFIX_TOKENS = 8
""":data:`RECAP_PREFIX` (7 tokens in every bundled encoding), plus one to spare."""
RECENT_SHARE = 0.5
"""The share of the room left (after the system prompt, the tools, the pinned entries, the
latest observation and the recap) that the newest older units may take at RECENT before
every older unit has its GIST; what is left after that is spent on more detail, newest
first."""
MAX_MISFITS = 16
"""Older units in a row that do not fit even at GIST before rendering stops looking further
back (what is older is left out, and said so)."""
SHOWN_RANGES = 3
"""The omission line names at most this many runs of ids (then ``…``)."""


class BudgetTooSmallError(UsageError):
    """Not even the system prompt, the tools and the latest observation cut to its head and
    tail (RECENT) fit in the budget: rendering refuses rather than send less of it."""

    def __init__(self, budget: int, needed: int, fixed: int | None = None) -> None:
        self.budget = budget
        self.needed = needed
        """What the system prompt, the tools and the latest observation at RECENT cost."""
        self.fixed = fixed
        """What the system prompt and the tools cost (``None``: they alone do not fit)."""
        if fixed is None:
            what = "the system prompt, the tools and the latest observation"
        else:
            what = (f"the system prompt and the tools ({fixed} tokens) and the latest observation "
                    f"cut to its head and tail ({needed - fixed})")
        super().__init__(f"token budget {budget} is too small: {what} need at least {needed} tokens; raise --budget")


@frozen
class RenderResult:
    """The rendered messages (oldest first), their token count, and how each entry was shown."""

    messages: tuple[ChatMessage, ...]
    tokens: int
    """An upper bound of the tokens the messages and the tools' schemas cost (cached counts
    plus fixed overheads)."""
    entries: int
    """How many unfolded history entries the messages show (at any level)."""
    spans: tuple[RenderedSpan, ...] = ()
    """How each unfolded entry and recap was shown, oldest first, in runs of consecutive ids
    (a run never reaches over a folded entry)."""


def render(active: Sequence[HistoryEntry], recaps: Sequence[RecapEntry], budget: int, *,
           system_prompt: str, system_tokens: int, windows: str, windows_tokens: int,
           tools_tokens: int = 0, pinned: Sequence[int] = (), cache: RenderCache | None = None,
           count: Callable[[str], int] | None = None) -> RenderResult:
    """Render ``active`` entries (oldest first, none folded) under ``budget`` tokens.

    Args:
        active: The unfolded entries, oldest first (recaps apart).
        recaps: The unfolded recaps, oldest first.
        budget: Tokens the messages and the tools' schemas may cost.
        system_prompt: The system prompt (``""``: none); ``system_tokens`` its count.
        windows: The apps' windows, injected into the latest observation alone;
            ``windows_tokens`` their count.
        tools_tokens: What the tools' schemas cost (they are sent with the messages).
        pinned: Positions in ``active`` of the CRITICAL entries, ascending.
        cache: Keeps the messages of older units between calls (same result, less work).
        count: Counts the omission line's tokens; its UTF-8 length (never fewer than its
            tokens) when omitted.

    Raises:
        BudgetTooSmallError: the system prompt, the tools and the latest observation do not fit.
    """
    plan = _Planner(active, recaps, budget, cache, count)
    return plan.run(system_prompt, system_tokens, tools_tokens, (windows, windows_tokens), pinned)


class _Planner:
    """One render: chooses each unit's level (or leaves it out), then lays the messages out."""

    def __init__(self, active: Sequence[HistoryEntry], recaps: Sequence[RecapEntry], budget: int,
                 cache: RenderCache | None, count: Callable[[str], int] | None) -> None:
        self.active = active
        self.recaps = recaps
        self.budget = budget
        self.cache = cache
        self.count = count if count is not None else _utf8_length
        self.used = 0
        self.taken: dict[int, _Taken] = {}
        """Units shown, by start."""
        self.omitted: list[tuple[int, int]] = []
        """Units left out, as (start, stop)."""
        self.kept: set[int] = set()
        """Starts of the units never given back for the omission line: the latest, the pinned."""
        self.at = active.__getitem__
        """``active[k]`` (a snapshot's entries are decoded once, when first read)."""

    def entries(self, start: int, stop: int) -> list[HistoryEntry]:
        return [self.at(k) for k in range(start, stop)]

    def unit_start(self, i: int) -> int:
        """Where the unit ending at position ``i`` starts: a model output and its results are one."""
        return i - 1 if i > 0 and answers(self.at(i - 1), self.at(i)) else i

    def unit_of(self, i: int) -> tuple[int, int]:
        """The unit position ``i`` belongs to, as ``(start, stop)``."""
        if i + 1 < len(self.active) and answers(self.at(i), self.at(i + 1)):
            return i, i + 2
        return self.unit_start(i), i + 1

    def levels(self, unit: Sequence[HistoryEntry]) -> UnitLevels:
        """An older unit at every level (kept in the cache, if any)."""
        return self.cache.levels(unit) if self.cache is not None else UnitLevels(unit)

    def fits(self, tokens: int, reserve: int = 0) -> bool:
        return self.used + tokens + reserve <= self.budget

    def take(self, start: int, stop: int, shown: Shown, piece: Piece, entries: list[HistoryEntry],
             levels: UnitLevels | None) -> None:
        self.taken[start] = _Taken(stop, shown, piece[0], piece[1], entries, levels)
        self.used += piece[1]

    def run(self, system_prompt: str, system_tokens: int, tools_tokens: int, windows: Windows,
            pinned: Sequence[int]) -> RenderResult:
        head: list[ChatMessage] = []
        if system_prompt:
            head.append(self.cache.system_message(system_prompt) if self.cache is not None
                        else ChatMessage(Role.SYSTEM, system_prompt))
            self.used += system_tokens + OVERHEAD
        self.used += tools_tokens
        if self.used > self.budget:
            raise BudgetTooSmallError(self.budget, self.used)
        latest = self._latest_unit()
        pins = self._pinned_units(pinned, latest)
        self.kept = {start for start, _ in pins} | ({latest[0]} if latest is not None else set())
        pin_levels = {start: self.levels(self.entries(start, stop)) for start, stop in pins}
        reserve = sum(levels.gist[1] for levels in pin_levels.values())
        if latest is not None:
            self._place_latest(latest, windows, reserve)
        self._place_pinned(pins, pin_levels, reserve)
        recap_msgs, recap_shown = self._place_recaps()
        older_end = latest[0] if latest is not None else len(self.active)
        self._place_older(older_end, dict(pins), self._note_reserve(len(recap_shown)))
        note = self._note(recap_shown)
        self._upgrade(latest[0] if latest is not None else None)
        messages = self._lay_out(head, recap_msgs, recap_shown, note)
        shown = sum(t.stop - start for start, t in self.taken.items())
        return RenderResult(tuple(messages), self.used, shown, self._spans(recap_shown))

    # -- choosing ---------------------------------------------------------------------------------

    def _latest_unit(self) -> tuple[int, int] | None:
        """The latest observation's unit (none when the history ends with a model output)."""
        i = len(self.active) - 1
        if i < 0 or isinstance(self.at(i), ModelOutputEntry):
            return None
        return self.unit_start(i), i + 1

    def _pinned_units(self, pinned: Sequence[int], latest: tuple[int, int] | None) -> list[tuple[int, int]]:
        units: dict[int, int] = {}
        for p in pinned:
            start, stop = self.unit_of(p)
            if latest is None or start < latest[0]:
                units[start] = stop
        return sorted(units.items())

    def _place_latest(self, latest: tuple[int, int], windows: Windows, reserve: int) -> None:
        """The latest observation: at LIVE with the windows, else cut to its head and tail
        (RECENT) with them, else at RECENT without them; first keeping room for the pinned
        entries' gists (``reserve``), then not. Never at GIST: an observation is not replaced
        by its one-line gist without a word (the span says it was cut; the engine tells).

        Raises:
            BudgetTooSmallError: it does not fit even at RECENT without the windows.
        """
        start, stop = latest
        choices = ((Level.LIVE, True), (Level.RECENT, True), (Level.RECENT, False))
        entries = self.entries(start, stop)
        for keep in (reserve, 0):  # room for the pinned entries' gists first, if there is any
            for level, with_windows in choices:
                piece = unit_messages(entries, level, windows if with_windows else None)
                if self.fits(piece[1], keep):
                    # no levels kept: its messages hold the windows, and it is never upgraded
                    self.take(start, stop, _SHOWN[level], piece, entries, None)
                    return
        raise BudgetTooSmallError(self.budget, self.used + unit_messages(entries, Level.RECENT)[1], self.used)

    def _place_pinned(self, pins: list[tuple[int, int]], pin_levels: dict[int, UnitLevels], reserve: int) -> None:
        """The pinned units, oldest first, at RECENT else GIST, keeping room for the gists of
        those still to come (``reserve``: all their gists); one that fits not even so is left out.
        A pinned input whose RECENT is cut (a long task) is sent whole where it fits: a task is
        pinned so that the model always has all of it."""
        for start, stop in pins:
            levels = pin_levels[start]
            reserve -= levels.gist[1]
            whole = levels.live_shows_more and isinstance(self.at(start), ModelInputEntry) and stop == start + 1
            if whole and self.fits(levels.live[1], reserve):
                self.take(start, stop, Shown.LIVE, levels.live, self.entries(start, stop), levels)
            elif self.fits(levels.recent[1], reserve):
                self.take(start, stop, Shown.RECENT, levels.recent, self.entries(start, stop), levels)
            elif self.fits(levels.gist[1], reserve):
                self.take(start, stop, Shown.GIST, levels.gist, self.entries(start, stop), levels)
            else:
                self.omitted.append((start, stop))

    def _place_recaps(self) -> tuple[list[ChatMessage], list[bool]]:
        """The recaps' messages (oldest first) and which recaps were shown: newest first at
        LIVE else GIST while they fit; the first that does not fit ends it (an older recap
        is superseded by a newer one)."""
        msgs: list[ChatMessage] = []
        shown = [False] * len(self.recaps)
        for k in range(len(self.recaps) - 1, -1, -1):
            content = self.recaps[k].content
            for level in (Level.LIVE, Level.GIST):
                lt = content.at(level)
                cost = lt.tokens + RECAP_PREFIX_TOKENS + OVERHEAD
                if self.fits(cost):
                    msgs.insert(0, ChatMessage(Role.SYSTEM, f"{RECAP_PREFIX}{lt.text}"))
                    self.used += cost
                    shown[k] = True
                    break
            if not shown[k]:
                break
        return msgs, shown

    def _note_reserve(self, recaps: int) -> int:
        """Room kept from the older units for the omission line, should one be needed: the
        line naming one run from the oldest id to the newest. If it is not needed, what is
        left is spent by :meth:`_upgrade`; a line naming more runs takes room back from the
        older units."""
        if not self.active:
            return 0
        run = (self.at(0).id, self.at(len(self.active) - 1).id)
        return self.count(omission_note([run], len(self.active), recaps)) + OVERHEAD

    def _place_older(self, end: int, pinned: dict[int, int], reserve: int) -> None:
        """Units before ``end``, newest first: at RECENT while they fit in :data:`RECENT_SHARE`
        of the room left, then at GIST, so that the older steps keep a line each before the
        newer ones get more (:meth:`_upgrade` spends what is left on them); misfits are left
        out; :data:`MAX_MISFITS` in a row leave out everything older. ``reserve`` tokens are
        kept free for the line saying so."""
        at = self.at
        level = Level.RECENT
        recent_room = int((self.budget - reserve - self.used) * RECENT_SHARE)
        misfits = 0
        i = end - 1
        while i >= 0:
            last = at(i)
            previous = at(i - 1) if i > 0 else None
            if previous is not None and answers(previous, last):
                start, unit = i - 1, [previous, last]
            else:
                start, unit = i, [last]
            if start in pinned:
                i = start - 1
                continue
            levels = self.levels(unit)
            piece = levels.piece(level)
            if level is Level.RECENT and piece[1] > recent_room:
                level = Level.GIST
                continue
            if not self.fits(piece[1], reserve):
                if level is Level.RECENT:
                    level = Level.GIST
                    continue
                self.omitted.append((start, i + 1))
                misfits += 1
                if misfits >= MAX_MISFITS:
                    self._omit_all_before(start, pinned)
                    return
            else:
                misfits = 0
                if level is Level.RECENT:
                    recent_room -= piece[1]
                self.take(start, i + 1, _SHOWN[level], piece, unit, levels)
            i = start - 1

    def _upgrade(self, latest: int | None) -> None:
        """With budget left once every unit has its place, show more of the newest ones: GIST
        to RECENT, then RECENT to LIVE, newest first (one whose next level does not fit is
        passed over). What is shown stays shown: this only spends what would go unused."""
        for shown, level in ((Shown.GIST, Level.RECENT), (Shown.RECENT, Level.LIVE)):
            for start in sorted(self.taken, reverse=True):
                if self.used >= self.budget:
                    return
                was = self.taken[start]
                levels = was.levels
                if was.shown is not shown or start == latest or levels is None or not levels.shows_more(level):
                    continue
                piece = levels.piece(level)
                if self.used - was.tokens + piece[1] <= self.budget:
                    self.taken[start] = _Taken(was.stop, _SHOWN[level], piece[0], piece[1], was.entries, levels)
                    self.used += piece[1] - was.tokens

    # -- the omission line ----------------------------------------------------------------------

    def _omit_all_before(self, end: int, pinned: dict[int, int]) -> None:
        """Leave out every unit before position ``end`` but the pinned ones ``{start: stop}``
        (already placed: shown, or left out by :meth:`_place_pinned`)."""
        start = 0
        for first in sorted(s for s in pinned if s < end):
            if start < first:
                self.omitted.append((start, first))
            start = pinned[first]
        if start < end:
            self.omitted.append((start, end))

    def _omitted_runs(self) -> list[tuple[int, int]]:
        """Left-out positions as runs ``(first, last)`` of consecutive active positions,
        oldest first (pinned units rendered between two left-out ones split a run)."""
        spans = sorted(self.omitted)
        runs: list[tuple[int, int]] = []
        for start, stop in spans:
            if runs and runs[-1][1] + 1 == start:
                runs[-1] = (runs[-1][0], stop - 1)
            else:
                runs.append((start, stop - 1))
        return runs

    def _note(self, recap_shown: list[bool]) -> ChatMessage | None:
        """The one line saying what was left out, fitted in by leaving out the oldest older
        units if need be (never the latest or the pinned ones). If it cannot fit even so,
        there is no line and nothing more is left out."""
        recaps_left = recap_shown.count(False)
        before = (dict(self.taken), list(self.omitted), self.used)
        while True:
            runs = self._omitted_runs()
            if not runs and not recaps_left:
                return None
            text = omission_note([(self.at(a).id, self.at(b).id) for a, b in runs],
                                 sum(b - a + 1 for a, b in runs), recaps_left)
            cost = self.count(text) + OVERHEAD
            if self.fits(cost):
                self.used += cost
                return ChatMessage(Role.SYSTEM, text)
            if not self._drop_oldest_older():
                self.taken, self.omitted, self.used = before
                return None

    def _drop_oldest_older(self) -> bool:
        """Leave out the oldest older unit shown (to make room for the omission line)."""
        for start in sorted(self.taken):
            if start not in self.kept:
                gone = self.taken.pop(start)
                self.used -= gone.tokens
                self.omitted.append((start, gone.stop))
                return True
        return False

    # -- laying out -------------------------------------------------------------------------------

    def _lay_out(self, head: list[ChatMessage], recap_msgs: list[ChatMessage], recap_shown: list[bool],
                 note: ChatMessage | None) -> list[ChatMessage]:
        """Oldest first: the recaps before the first unit newer than all they stand for, the
        omission line where the oldest left-out unit was."""
        boundary = max((id_number(r.covers[-1]) for r, on in zip(self.recaps, recap_shown) if on and r.covers),
                       default=-1)
        runs = self._omitted_runs()
        note_at = runs[0][0] if runs else len(self.active)
        messages = list(head)
        recaps_placed = not recap_msgs
        note_placed = note is None
        for start in sorted(self.taken):
            taken = self.taken[start]
            if not recaps_placed and id_number(taken.entries[0].id) > boundary:
                messages += recap_msgs
                recaps_placed = True
            if not note_placed and start > note_at:
                messages.append(note)  # type: ignore[arg-type]
                note_placed = True
            messages += taken.messages
        if not recaps_placed:
            messages += recap_msgs
        if not note_placed:
            messages.append(note)  # type: ignore[arg-type]
        return messages

    def _spans(self, recap_shown: list[bool]) -> tuple[RenderedSpan, ...]:
        """How each unfolded entry and recap was shown, oldest first (by id), in runs."""
        marks: list[_Mark] = []
        for taken in self.taken.values():
            entries = taken.entries
            marks.append(_mark(entries[0].id, entries[-1].id, taken.shown))
        for a, b in self._omitted_runs():
            marks.append(_mark(self.at(a).id, self.at(b).id, Shown.OMITTED))
        for recap, on in zip(self.recaps, recap_shown):
            marks.append(_mark(recap.id, recap.id, Shown.RECAP if on else Shown.OMITTED))
        marks.sort(key=itemgetter(0))
        runs: list[_Mark] = []
        for mark in marks:
            # one span for runs of consecutive ids only: one reaching over folded entries
            # (or removed ones) would seem to say how they were shown
            if runs and runs[-1][4] is mark[4] and mark[4] is not Shown.RECAP and runs[-1][1] + 1 == mark[0]:
                runs[-1] = (runs[-1][0], mark[1], runs[-1][2], mark[3], mark[4])
            else:
                runs.append(mark)
        return tuple(RenderedSpan(first, last, shown) for _, _, first, last, shown in runs)


class _Taken:
    """A unit shown: where it stops, how, its messages and their tokens, its entries, and
    the unit at every level (``None`` for the latest: shown with the windows, never upgraded)."""

    __slots__ = ("entries", "levels", "messages", "shown", "stop", "tokens")

    def __init__(self, stop: int, shown: Shown, messages: Sequence[ChatMessage], tokens: int,
                 entries: list[HistoryEntry], levels: UnitLevels | None) -> None:
        self.stop = stop
        self.shown = shown
        self.messages = messages
        self.tokens = tokens
        self.entries = entries
        self.levels = levels


_Mark = tuple[int, int, str, str, Shown]
"""Entries (or a recap) shown one way: the first and last ids' numbers, the ids, how."""


def _mark(first: str, last: str, shown: Shown) -> _Mark:
    number = id_number(first)
    return number, number if last == first else id_number(last), first, last, shown


_SHOWN = {Level.LIVE: Shown.LIVE, Level.RECENT: Shown.RECENT, Level.GIST: Shown.GIST}


def omission_note(runs: Sequence[tuple[str, str]], entries: int, recaps: int) -> str:
    """The line saying what a render left out: ``[12 earlier entries left out for want of
    budget: e3–e9, e15–e19]``."""
    named = [first if first == last else f"{first}–{last}" for first, last in runs[:SHOWN_RANGES]]
    if len(runs) > SHOWN_RANGES:
        named.append("…")
    what = []
    if entries:
        what.append(f"{entries} earlier {'entry' if entries == 1 else 'entries'}")
    if recaps:
        what.append(f"{recaps} {'recap' if recaps == 1 else 'recaps'}")
    where = f": {', '.join(named)}" if named else ""
    return f"[{' and '.join(what)} left out for want of budget{where}]"


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8"))


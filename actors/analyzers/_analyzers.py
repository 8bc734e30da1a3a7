"""Analyzer sub-agents: actors that watch a thread's history and post notifications to it."""

from __future__ import annotations

import enum
import logging
from collections import deque
from typing import NoReturn, assert_never

import trio
from attrs import field, frozen

from livecontext.protocol.agent import HistoryChanged, PostNotification
from livecontext.protocol.context import AccessDenied, Capability, HistorySlice, HistoryUsage, LimitLevel, ReadHistory
from livecontext.protocol.history import (
    ChatMessage,
    HistoryEntry,
    ModelRequest,
    Role,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
    id_number,
)
from livecontext.protocol.kernel import ActorId, Topic
from livecontext.runtime import Actor, ModelError, UsageError, handler
from livecontext.runtime.models import ModelClient

log = logging.getLogger("livecontext.analyzers")

_RANK = [LimitLevel.OK, LimitLevel.SOFT, LimitLevel.HARD, LimitLevel.TRUNCATE]
_APPENDS = frozenset({"EntryAppended", "ToolResultsAppended"})
"""The kinds of the records that append an entry (a :class:`HistoryChanged` carries it)."""



class AnalyzerKind(enum.StrEnum):
    """The built-in analyzers that :class:`AnalyzerSettings` (and a blueprint's
    ``[[analyzers]]``) name. A closed set: an analyzer of your own is a subclass of
    :class:`Analyzer` that you spawn, not another kind of these settings.

    Its values are the strings blueprints use; an unknown one is refused with a
    :class:`~livecontext.runtime.UsageError` listing them.
    """

    REPEATED_FAILURES = "repeated_failures"
    """:class:`RepeatedFailures`: posts when ``threshold`` tool calls in a row failed."""
    MODEL = "model"
    """:class:`ModelAnalyzer`: asks a model (``prompt``) about the newest entries."""
    USAGE = "usage"
    """:class:`UsageWatcher`: posts when the history crosses a limit's threshold."""

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        raise UsageError(f"analyzer kind must be one of {', '.join(cls)}, got {value!r}")


class AnalyzerTrigger(enum.StrEnum):
    """When an analyzer analyzes (its values are the strings blueprints use)."""

    HISTORY = "history"
    """After the history changes (an entry was appended)."""
    PERIOD = "period"
    """Every ``period_s`` seconds."""

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        raise UsageError(f"analyzer trigger must be one of {', '.join(cls)}, got {value!r}")


@frozen
class AnalyzerSettings:
    """One analyzer of a thread."""

    name: str
    kind: AnalyzerKind = field(default=AnalyzerKind.REPEATED_FAILURES, converter=AnalyzerKind)
    """Which built-in analyzer (given as a member or its string)."""
    trigger: AnalyzerTrigger = field(default=AnalyzerTrigger.HISTORY, converter=AnalyzerTrigger)
    period_s: float = 5.0
    prompt: str = ""
    """For ``model`` analyzers: what to look for."""
    threshold: int = 3
    """For ``repeated_failures``: how many failures in a row."""
    window: int = 12
    """How many recent entries the analyzer reads."""
    capabilities: tuple[str, ...] = ("read", "notify")
    """What it may do to the history (``read``, ``notify``; ``edit``/``fold`` only if you mean it)."""

    def __attrs_post_init__(self) -> None:
        if self.kind is AnalyzerKind.MODEL and not self.prompt.strip():
            raise UsageError(f"analyzer {self.name!r}: a model analyzer needs a prompt")
        known = {c.value for c in Capability}
        unknown = [c for c in self.capabilities if c not in known]
        if unknown:
            raise UsageError(f"analyzer {self.name!r}: unknown capabilities {unknown}; use {', '.join(sorted(known))}")
        if self.threshold < 2 or self.window < 1 or self.period_s <= 0:
            raise UsageError(f"analyzer {self.name!r}: threshold >= 2, window >= 1 and period_s > 0")


class Analyzer(Actor):
    """Base of analyzers: reads the parent thread's history, posts notifications to it.

    There are two ways to look at the history, with different guarantees:

    - **Each entry as it comes** (:meth:`judge`): the history store publishes every change
      with the entry it appended, in the log's order, and none is dropped or merged (the
      store waits for room in the mailbox). :meth:`judge` is called with every entry
      appended while the analyzer runs, exactly once each, in order, however fast they
      come, whether or not a fold or a drop removes it before anyone could read it; on
      start it is also called with the newest ``settings.window`` unfolded entries already
      there (a streak that began before a restart or a resume counts). It runs in the
      handler, so it must be quick and must not wait: it notes what it found and asks the
      worker (:meth:`wake`) to act on it. ``repeated_failures`` works this way.
    - **A window at a time** (:meth:`analyze`): handlers only note that something happened
      and wake one worker task, which reads the newest ``settings.window`` unfolded entries,
      analyzes them and posts. An analysis may take long (a model call); meanwhile the
      mailbox keeps draining, and the changes seen during one analysis make one more
      analysis, not one each. So every analysis sees the history as it is then, but entries
      appended and pushed out of the window (or folded) between two analyses are never
      in one: a ``model`` analyzer samples a fast run, it does not judge each entry.

    Either way the history store never blocks publishing to a slow analyzer (it would then
    never answer the analyzer's own read). The same text is never posted twice in a row.
    """

    def __init__(self, thread_id: str, history: ActorId, settings: AnalyzerSettings) -> None:
        self.thread_id = thread_id
        self.history = history
        self.settings = settings
        self.last_posted: str | None = None
        self.last_seen: tuple[tuple[str, int], ...] | None = None
        """The entries (ids and revisions) of the last analysis."""
        self.posted = 0
        self.judged = 0
        """The number of the newest entry given to :meth:`judge` (entry ids grow: ``e12`` is 12)."""
        self._early: list[HistoryEntry] | None = [] if self._judges() else None
        """Entries pushed before the worker read those already there (then ``None``)."""
        self._dirty = False
        self._wake = trio.Event()

    async def on_start(self) -> None:
        self.ctx.subscribe(Topic(f"history.{self.thread_id}"))
        self.ctx.nursery.start_soon(self._worker)
        if self.settings.trigger is AnalyzerTrigger.PERIOD:
            self.ctx.nursery.start_soon(self._periodic)

    async def _periodic(self) -> None:
        while True:
            await trio.sleep(self.settings.period_s)
            self.request_analysis()

    async def _worker(self) -> None:
        if self._early is not None:
            await self._catch_up()
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self.work()

    async def _catch_up(self) -> None:
        """Judge the newest entries that were there before the first one pushed, then those
        pushed meanwhile; an entry the read returned is skipped when pushed (by its number).

        Of the read, only entries older than the first pushed are taken: ids grow, so a newer
        one was (or will be) pushed, and one pushed early may since be folded away and stand
        behind a newer recap in the read."""
        view = await self.read_recent()
        early, self._early = self._early or [], None
        first = id_number(early[0].id) if early else None
        for entry in view.entries:
            if first is None or id_number(entry.id) < first:
                self._take(entry)
        for entry in early:
            self._take(entry)

    def _take(self, entry: HistoryEntry) -> None:
        if self._early is not None:  # the worker has not read what was there yet
            self._early.append(entry)
            return
        number = id_number(entry.id)
        if number > self.judged:
            self.judged = number
            self.judge(entry)

    def _judges(self) -> bool:
        return type(self).judge is not Analyzer.judge

    def judge(self, entry: HistoryEntry) -> None:
        """Look at one entry, as it comes (see the class docs); by default nothing."""

    def wake(self) -> None:
        """Have the worker call :meth:`work` (once, however many wakes come before it runs)."""
        self._wake.set()

    def request_analysis(self) -> None:
        """Have the worker analyze (once, however many requests come before it gets to it)."""
        self._dirty = True
        self._wake.set()

    async def work(self) -> None:
        """What the worker does when woken (never two at once): the analysis requested."""
        if self._dirty:
            self._dirty = False
            await self.run_once()

    @handler(inline=True)
    def on_changed(self, msg: HistoryChanged) -> None:
        if msg.entry is not None and self._judges():
            self._take(msg.entry)
        if self.settings.trigger is AnalyzerTrigger.HISTORY and self.wants(msg):
            self.request_analysis()

    def wants(self, msg: HistoryChanged) -> bool:
        """Whether this change calls for an analysis (by default: an entry was appended)."""
        return msg.kind in _APPENDS

    async def post(self, text: str) -> bool:
        """Post ``text`` to the agent unless it was the last text posted; whether it was posted."""
        if not text or text == self.last_posted:
            return False
        reply = await self.ctx.ask(self.history, PostNotification(text))
        if isinstance(reply, AccessDenied):
            log.error("%s may not notify %s: grant it Capability.NOTIFY", self.ctx.self_id, self.thread_id)
            return False
        self.last_posted = text
        self.posted += 1
        return True

    async def read_recent(self) -> HistorySlice:
        """The newest unfolded entries (at most ``settings.window``)."""
        view = await self.ctx.ask(self.history, ReadHistory())
        if isinstance(view, AccessDenied):
            raise UsageError(f"{self.ctx.self_id} may not read the history: grant it Capability.READ")
        assert isinstance(view, HistorySlice)
        return HistorySlice(view.entries[-self.settings.window:], view.total, view.active_tokens, view.seq)

    async def run_once(self) -> None:
        """Read, analyze, and post what the analysis found (unless it was just posted)."""
        view = await self.read_recent()
        seen = tuple((e.id, e.revision) for e in view.entries)
        if seen == self.last_seen:  # nothing new to read (a notification posted is no entry)
            return
        self.last_seen = seen
        text = await self.analyze(view)
        if text:
            await self.post(text)

    async def analyze(self, view: HistorySlice) -> str | None:
        """What to tell the agent about ``view``, or ``None``."""
        raise NotImplementedError


class RepeatedFailures(Analyzer):
    """Notices when ``threshold`` tool calls in a row failed the same way.

    It judges every tool result, call by call, as its entry comes (:meth:`Analyzer.judge`):
    a streak is never missed because the agent ran on before the analyzer looked, nor
    because it ended inside one step's results. It speaks once per streak, at the end of the
    entry where the streak reached ``threshold``: a streak that goes on is not news, a new
    streak is (even if it reads the same as an earlier one). It reads the history only once,
    on start, and keeps nothing but the current streak. Its trigger does not apply: it
    judges each entry as it comes, whatever the trigger.
    """

    def __init__(self, thread_id: str, history: ActorId, settings: AnalyzerSettings) -> None:
        super().__init__(thread_id, history, settings)
        self.last: ToolResult | None = None
        """The newest failure of the current streak (``None``: the last call did not fail)."""
        self.length = 0
        """How many calls in a row the current streak has."""
        self.reported = False
        """Whether the current streak was reported."""
        self._reports: deque[str] = deque()
        """Texts to post, oldest first (the worker posts them)."""

    def wants(self, msg: HistoryChanged) -> bool:
        return False  # (it reads nothing after the start: it judges each entry as it comes)

    def judge(self, entry: HistoryEntry) -> None:
        if not isinstance(entry, ToolResultsEntry):
            return
        for result in entry.results:
            failed = result.status is ToolStatus.FAILED
            if not (failed and self.last is not None and _reason(result) == _reason(self.last)):
                self._report(going_on=False)  # the streak so far ends here
                self.last, self.length, self.reported = None, 0, False
            if failed:
                self.last = result
                self.length += 1
        self._report(going_on=True)

    def _report(self, *, going_on: bool) -> None:
        """Report the current streak if it is long enough and not reported yet: it goes on
        at the end of an entry (``going_on``), or it ended inside one."""
        if self.reported or self.length < self.settings.threshold or self.last is None:
            return
        self.reported = True
        what = f"({self.last.name}: {self.last.content.gist.text})"
        if going_on:
            text = f"the last {self.length} tool calls failed the same way {what}; try something different"
        else:
            text = (f"{self.length} tool calls in a row failed the same way {what}, then one did not; "
                    f"if it fails so again, try something different")
        self._reports.append(text)
        self.wake()

    async def work(self) -> None:
        while self._reports:
            text = self._reports.popleft()
            self.last_posted = None  # a new streak is news even if it reads like the last one
            await self.post(text)

    async def analyze(self, view: HistorySlice) -> str | None:
        return None


def _reason(result: ToolResult) -> str:
    return f"{result.name}: {result.content.gist.text.split(':')[0]}"


class UsageWatcher(Analyzer):
    """Tells the agent when its history passes the hard limit, so it can be brief.

    It speaks when the level rises to HARD or TRUNCATE, not at every change while it stays
    there (each notification would itself add to the history). The history store's usage
    reports say all it needs: it reads nothing.
    """

    def __init__(self, thread_id: str, history: ActorId, settings: AnalyzerSettings) -> None:
        super().__init__(thread_id, history, settings)
        self.level = LimitLevel.OK
        self._rise: HistoryUsage | None = None

    def wants(self, msg: HistoryChanged) -> bool:
        return False

    @handler(inline=True)
    def on_usage(self, msg: HistoryUsage) -> None:
        # the rise is judged here, at each report, not by the worker: reports that come
        # while it is busy (or not yet scheduled) must not hide a dip and the rise after it
        rose = _RANK.index(msg.level) > _RANK.index(self.level)
        self.level = msg.level
        if msg.level in (LimitLevel.HARD, LimitLevel.TRUNCATE):
            if rose:
                self._rise = msg
                self._wake.set()
        else:
            self._rise = None  # back under the limit before the worker spoke: nothing to say

    async def work(self) -> None:
        rise, self._rise = self._rise, None
        if rise is not None:
            await self.post(f"your history is at its {rise.level.value} limit ({rise.entries} entries, "
                            f"{rise.tokens} tokens): older steps are being folded into a recap")

    async def analyze(self, view: HistorySlice) -> str | None:
        return None


class ModelAnalyzer(Analyzer):
    """Asks its own model about the recent entries; posts the answer unless it is ``OK``."""

    def __init__(self, thread_id: str, history: ActorId, settings: AnalyzerSettings, model: ModelClient) -> None:
        super().__init__(thread_id, history, settings)
        self.model = model
        self.calls = 0

    async def analyze(self, view: HistorySlice) -> str | None:
        lines = [f"[{e.id}] {e.content.gist.text}" for e in view.entries]
        request = ModelRequest((
            ChatMessage(Role.SYSTEM, f"{self.settings.prompt}\nAnswer OK if there is nothing to say."),
            ChatMessage(Role.USER, "\n".join(lines) or "(empty history)"),
        ), (), self.calls, f"{self.thread_id}/{self.settings.name}")
        self.calls += 1
        try:
            reply = await self.model.complete(request)
        except ModelError as exc:  # an analyzer's failure is logged, never the agent's problem
            log.warning("analyzer %s: model call failed: %s", self.settings.name, exc)
            return None
        text = reply.text.strip()
        return None if not text or text.upper().rstrip(".") == "OK" else text


def make_analyzer(thread_id: str, history: ActorId, settings: AnalyzerSettings,
                  model: ModelClient | None = None) -> Analyzer:
    """A new analyzer of ``settings.kind``.

    Raises:
        UsageError: a ``model`` analyzer is given no model.
    """
    kind = settings.kind
    if kind is AnalyzerKind.REPEATED_FAILURES:
        return RepeatedFailures(thread_id, history, settings)
    if kind is AnalyzerKind.USAGE:
        return UsageWatcher(thread_id, history, settings)
    if kind is AnalyzerKind.MODEL:
        if model is None:
            raise UsageError(f"analyzer {settings.name!r} of kind model needs a model")
        return ModelAnalyzer(thread_id, history, settings, model)
    assert_never(kind)

"""Analyzer sub-agents: actors that watch a thread's history and post notifications to it."""

from __future__ import annotations

import logging

import trio
from attrs import frozen

from livecontext.protocol import (
    AccessDenied,
    ActorId,
    Capability,
    ChatMessage,
    HistoryChanged,
    HistorySlice,
    HistoryUsage,
    LimitLevel,
    ModelRequest,
    PostNotification,
    ReadHistory,
    Role,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
    Topic,
)
from livecontext.runtime import Actor, ModelError, UsageError, handler
from livecontext.runtime.models import ModelClient

log = logging.getLogger("livecontext.analyzers")

_RANK = [LimitLevel.OK, LimitLevel.SOFT, LimitLevel.HARD, LimitLevel.TRUNCATE]
_APPENDS = frozenset({"EntryAppended", "ToolResultsAppended"})
"""The kinds of the records that append an entry (a :class:`HistoryChanged` carries it)."""

TRIGGERS = ("history", "period")
"""When an analyzer runs: after history changes, or every ``period_s`` seconds."""


@frozen
class AnalyzerSettings:
    """One analyzer of a thread."""

    name: str
    kind: str = "repeated_failures"
    """``repeated_failures``, ``model`` or ``usage``."""
    trigger: str = "history"
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
        if self.kind not in ANALYZER_KINDS:
            raise UsageError(f"analyzer {self.name!r}: kind must be one of {', '.join(ANALYZER_KINDS)}, got {self.kind!r}")
        if self.trigger not in TRIGGERS:
            raise UsageError(f"analyzer {self.name!r}: trigger must be one of {', '.join(TRIGGERS)}, got {self.trigger!r}")
        if self.kind == "model" and not self.prompt.strip():
            raise UsageError(f"analyzer {self.name!r}: a model analyzer needs a prompt")
        known = {c.value for c in Capability}
        unknown = [c for c in self.capabilities if c not in known]
        if unknown:
            raise UsageError(f"analyzer {self.name!r}: unknown capabilities {unknown}; use {', '.join(sorted(known))}")
        if self.threshold < 2 or self.window < 1 or self.period_s <= 0:
            raise UsageError(f"analyzer {self.name!r}: threshold >= 2, window >= 1 and period_s > 0")


class Analyzer(Actor):
    """Base of analyzers: reads the parent thread's history, posts notifications to it.

    Subclasses implement :meth:`analyze`, which returns the text to post or ``None``. The
    same text is never posted twice in a row.

    Handlers only note that something happened and wake one worker task, which reads,
    analyzes and posts. An analysis may take long (a model call); meanwhile the mailbox keeps
    draining, so the history store never blocks publishing to a slow analyzer (it would then
    never answer the analyzer's own read), and the changes seen during one analysis make
    one more analysis, not one each.
    """

    def __init__(self, thread_id: str, history: ActorId, settings: AnalyzerSettings) -> None:
        self.thread_id = thread_id
        self.history = history
        self.settings = settings
        self.last_posted: str | None = None
        self.last_seen: tuple[tuple[str, int], ...] | None = None
        """The entries (ids and revisions) of the last analysis."""
        self.posted = 0
        self._dirty = False
        self._wake = trio.Event()

    async def on_start(self) -> None:
        self.ctx.subscribe(Topic(f"history.{self.thread_id}"))
        self.ctx.nursery.start_soon(self._worker)
        if self.settings.trigger == "period":
            self.ctx.nursery.start_soon(self._periodic)

    async def _periodic(self) -> None:
        while True:
            await trio.sleep(self.settings.period_s)
            self.request_analysis()

    async def _worker(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self.work()

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
    async def on_changed(self, msg: HistoryChanged) -> None:
        if self.settings.trigger == "history" and self.wants(msg):
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
    """Notices when the last ``threshold`` tool calls failed the same way.

    It speaks once per streak of such failures: a streak that goes on is not news, a new
    streak is (even if it reads the same as an earlier one).
    """

    def __init__(self, thread_id: str, history: ActorId, settings: AnalyzerSettings) -> None:
        super().__init__(thread_id, history, settings)
        self.reported: set[str] = set()
        """Call ids of the streak last reported (grown as that streak goes on)."""
        self._seen: dict[str, ToolResult] = {}
        """The newest results read so far, oldest first: a streak counts results that the
        recap maintainer folded away after this analyzer read them (folding, which runs
        beside it, must not hide a streak from it)."""

    def wants(self, msg: HistoryChanged) -> bool:
        # only a tool-results entry is news: the other entries (inputs, outputs) need no read
        return msg.kind == "ToolResultsAppended"

    async def analyze(self, view: HistorySlice) -> str | None:
        for e in view.entries:  # the window is the newest entries, so what is new comes last
            if isinstance(e, ToolResultsEntry):
                for r in e.results:
                    self._seen.setdefault(r.call_id, r)
        keep = max(4 * self.settings.threshold, 32)
        while len(self._seen) > keep:
            del self._seen[next(iter(self._seen))]
        results = list(self._seen.values())
        streak: list[ToolResult] = []
        for r in reversed(results):  # the trailing failures that read the same
            if r.status is not ToolStatus.FAILED or (streak and _reason(r) != _reason(streak[0])):
                break
            streak.append(r)
        ids = {r.call_id for r in streak}
        if ids & self.reported:  # the streak already reported, going on
            self.reported |= ids
            return None
        if len(streak) < self.settings.threshold:
            return None
        self.reported = ids
        last = streak[0]
        self.last_posted = None  # a new streak is news even if it reads like the last one
        return (f"the last {len(streak)} tool calls failed the same way ({last.name}: "
                f"{last.content.gist.text}); try something different")


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
    async def on_usage(self, msg: HistoryUsage) -> None:
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


ANALYZER_KINDS = ("repeated_failures", "model", "usage")
"""The built-in analyzer kinds."""


def make_analyzer(thread_id: str, history: ActorId, settings: AnalyzerSettings,
                  model: ModelClient | None = None) -> Analyzer:
    """A new analyzer of ``settings.kind``."""
    if settings.kind == "repeated_failures":
        return RepeatedFailures(thread_id, history, settings)
    if settings.kind == "usage":
        return UsageWatcher(thread_id, history, settings)
    if model is None:
        raise UsageError(f"analyzer {settings.name!r} of kind model needs a model")
    return ModelAnalyzer(thread_id, history, settings, model)

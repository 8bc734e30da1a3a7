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
    ToolResultsEntry,
    ToolStatus,
    Topic,
)
from livecontext.runtime import Actor, ModelError, UsageError, handler
from livecontext.runtime.models import ModelClient

log = logging.getLogger("livecontext.analyzers")

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
    """

    def __init__(self, thread_id: str, history: ActorId, settings: AnalyzerSettings) -> None:
        self.thread_id = thread_id
        self.history = history
        self.settings = settings
        self.last_posted: str | None = None
        self.last_seq = -1
        self.posted = 0

    async def on_start(self) -> None:
        self.ctx.subscribe(Topic(f"history.{self.thread_id}"))
        if self.settings.trigger == "period":
            self.ctx.nursery.start_soon(self._periodic)

    async def _periodic(self) -> None:
        while True:
            await trio.sleep(self.settings.period_s)
            await self.run_once()

    @handler
    async def on_changed(self, msg: HistoryChanged) -> None:
        if self.settings.trigger == "history" and msg.kind == "EntryAppended":
            await self.run_once()

    @handler
    async def on_usage(self, msg: HistoryUsage) -> None:
        await self.on_usage_level(msg)

    async def on_usage_level(self, msg: HistoryUsage) -> None:
        """Hook for analyzers that watch the limits."""

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
        if view.seq == self.last_seq:
            return
        self.last_seq = view.seq
        text = await self.analyze(view)
        if text and text != self.last_posted:
            reply = await self.ctx.ask(self.history, PostNotification(text))
            if isinstance(reply, AccessDenied):
                log.error("%s may not notify %s: grant it Capability.NOTIFY", self.ctx.self_id, self.thread_id)
                return
            self.last_posted = text
            self.posted += 1

    async def analyze(self, view: HistorySlice) -> str | None:
        """What to tell the agent about ``view``, or ``None``."""
        raise NotImplementedError


class RepeatedFailures(Analyzer):
    """Notices when the last ``threshold`` tool calls failed the same way."""

    async def analyze(self, view: HistorySlice) -> str | None:
        results = [r for e in view.entries if isinstance(e, ToolResultsEntry) for r in e.results]
        n = self.settings.threshold
        last = results[-n:]
        if len(last) < n or any(r.status is not ToolStatus.FAILED for r in last):
            return None
        reasons = {r.content.gist.text.split(":")[0] for r in last}
        if len(reasons) != 1:
            return None
        return (f"the last {n} tool calls failed the same way ({last[-1].name}: "
                f"{last[-1].content.gist.text}); try something different")


class UsageWatcher(Analyzer):
    """Tells the agent when its history passes the hard limit, so it can be brief."""

    async def on_usage_level(self, msg: HistoryUsage) -> None:
        if msg.level in (LimitLevel.HARD, LimitLevel.TRUNCATE):
            text = (f"your history is at its {msg.level.value} limit ({msg.entries} entries, "
                    f"{msg.tokens} tokens): older steps are being folded into a recap")
            if text != self.last_posted:
                await self.ctx.ask(self.history, PostNotification(text))
                self.last_posted = text
                self.posted += 1

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

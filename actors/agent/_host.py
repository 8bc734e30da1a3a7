"""The app host actor: gathers the apps' windows, routes tool calls, applies committed effects."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import trio

from livecontext.protocol.agent import (
    AppEffects,
    ApplyEffect,
    CancelTool,
    CheckTool,
    GetAppEffects,
    GetWindows,
    InvokeTool,
    ListTools,
    ReplayAppEffects,
    SaveAppState,
    ToolChecked,
    ToolInvoked,
    Tools,
    Windows,
)
from livecontext.protocol.history import ToolCall, ToolResult, ToolStatus
from livecontext.protocol.kernel import ActorId, Message
from livecontext.protocol.records import AppEffect, AppHistory, AppWindow, UndecodedEffect
from livecontext.runtime import Actor, LivecontextError, MailboxFullError, UsageError, handler
from livecontext.runtime.tokens import TokenCounter

from ..apps import App, ToolOutcome, check_tool, describe_tools, start_tool, tool_owner

log = logging.getLogger("livecontext.apps")


def recorded_app(app: App) -> bool:
    """Whether a thread records ``app``'s window (:class:`AppWindowsRecorded`): the user's
    apps' are, so that the thread can be shown without their code; the built-in apps' are
    not, their code being wherever livecontext is."""
    return not type(app).__module__.startswith("livecontext.")


class AppHost(Actor):
    """Hosts a thread's apps.

    A tool whose call returns a plain value is over when the call returns: the host answers
    at once, from the handler. An ``async`` tool runs on in the host's own nursery, one cancel
    scope each, so a ``CancelTool`` can stop it while it runs (and the engine's tool timeout,
    which sends one). A tool never changes its app: the app changes only when the
    effect, committed to the log with the tool's result, comes back as ``ApplyEffect``.

    On (re)start each app is rebuilt from what the history store keeps of it: its latest
    saved state (:meth:`App.load_state`) and the effects committed after it. An app that
    cannot load its state is rebuilt from every effect it committed, read from the log, and
    the host says so in its log. Every ``snapshot_every`` effects the host sends the history
    store the app's :meth:`App.state_text`, to keep with the thread's snapshots.
    """

    def __init__(self, apps: Sequence[App], history: ActorId, counter: TokenCounter) -> None:
        names = [a.name for a in apps]
        if len(set(names)) != len(names):
            raise UsageError(f"two apps share a name: {names}; give each app its own name")
        self.apps = {a.name: a for a in apps}
        self.history = history
        self.counter = counter
        self._running: dict[str, tuple[trio.CancelScope, trio.Event]] = {}
        self._applied: dict[str, int] = {}
        """How many committed effects each app has folded in."""
        self._unsaved: dict[str, int] = {}
        """How many of those came after the app's latest saved state."""
        self._states: dict[str, tuple[int, str | None]] = {}
        """Each app's state text and how many effects it had applied when it was asked."""

    async def on_start(self) -> None:
        for app in self.apps.values():
            app.bind(self.ctx)
        for history in (await self._ask_effects(GetAppEffects())).apps:
            app = self._app_named(history.app, f"has committed effects ({history.count})")
            if history.state is not None and not self._loaded(app, history):
                app = self.apps[app.name] = app.fresh()
                app.bind(self.ctx)
                replayed = await self._ask_effects(ReplayAppEffects(app.name))
                history = replayed.apps[0] if replayed.apps else AppHistory(app.name)
            for effect in history.effects:
                self._apply(app, effect)
            self._applied[app.name] = history.count
            self._unsaved[app.name] = len(history.effects)
            self._save_if_due(app)

    async def _ask_effects(self, request: Message) -> AppEffects:
        reply = await self.ctx.ask(self.history, request)
        if not isinstance(reply, AppEffects):
            raise UsageError(
                f"{self.ctx.self_id} cannot rebuild its apps: {self.history} answered "
                f"{type(request).__name__} with {type(reply).__name__}; spawn the host with the "
                "read capability"
            )
        return reply

    def _loaded(self, app: App, history: AppHistory) -> bool:
        """Load the app's saved state; ``False`` (and why, in the log) if it cannot."""
        assert history.state is not None
        try:
            app.load_state(history.state)
        except Exception as exc:  # noqa: BLE001 - any failure: the effects rebuild it all the same
            log.warning("%s: app %r cannot load its state saved as of its effect %d (%s: %s); "
                        "rebuilding it from every effect it committed, read from the log",
                        self.ctx.self_id, app.name, history.saved, type(exc).__name__, exc)
            return False
        return True

    def _app_named(self, name: str, what: str) -> App:
        app = self.apps.get(name)
        if app is None:
            raise UsageError(
                f"app {name!r} {what}, but this host does not run it (apps: "
                f"{', '.join(self.apps) or 'none'}); give the agent that app to run this thread"
            )
        return app

    def _apply(self, app: App, effect: AppEffect) -> None:
        inner = effect.effect
        if isinstance(inner, UndecodedEffect):
            where = f"import {effect.module}" if effect.module else "import the module that defines it"
            raise UsageError(
                f"app {app.name!r} cannot apply its committed {inner.tag} effect: that class is not "
                f"known in this process; declare it in {type(app).__qualname__}.effects ({where})"
            )
        app.apply(inner)

    def _save_if_due(self, app: App) -> None:
        """Send the history store the app's state if ``snapshot_every`` effects came after
        its last (if the history's mailbox is full, at a later effect)."""
        if self._unsaved.get(app.name, 0) < app.snapshot_every:
            return
        text = app.state_text()
        if text is None:  # the app saves no state: its effects are replayed
            return
        try:
            self.ctx.tell_nowait(self.history, SaveAppState(app.name, self._applied[app.name], text))
        except MailboxFullError:
            return
        self._unsaved[app.name] = 0

    @handler(inline=True)
    def on_get_windows(self, msg: GetWindows) -> Windows:
        return self._windows()

    def _windows(self) -> Windows:
        windows = [(app, app.window()) for app in self.apps.values()]
        return Windows("\n\n".join(w for _, w in windows if w),
                       tuple(AppWindow(app.name, w, self._state_text(app)) for app, w in windows if recorded_app(app)))

    def _state_text(self, app: App) -> str | None:
        """The app's :meth:`App.state_text`, asked again only once it applied an effect."""
        applied = self._applied.get(app.name, 0)
        known = self._states.get(app.name)
        if known is None or known[0] != applied:
            known = self._states[app.name] = (applied, app.state_text())
        return known[1]

    @handler(inline=True)
    def on_list_tools(self, msg: ListTools) -> Tools:
        return Tools(tuple(spec for app in self.apps.values() for spec in describe_tools(app)))

    @handler
    async def on_invoke(self, msg: InvokeTool) -> ToolInvoked | None:
        call = msg.call
        try:
            started = start_tool(list(self.apps.values()), call, msg.context)
            if isinstance(started, ToolOutcome):  # a sync tool (or a mistake): over already
                return self._invoked(call, started)
        except Exception as exc:  # noqa: BLE001 - a host bug must not leave the asker waiting
            return self._crashed(call, exc)
        # the tool's call returned an awaitable: await it in a task of its own, cancellable
        pending = self.ctx.defer_reply()
        scope = trio.CancelScope()
        done = trio.Event()
        self._running[call.id] = (scope, done)

        async def run() -> None:
            try:
                with scope:
                    try:
                        invoked = self._invoked(call, await started)
                    except Exception as exc:  # noqa: BLE001 - a host bug must not leave the asker waiting
                        invoked = self._crashed(call, exc)
                    if pending is not None:
                        pending.send(invoked)
                if scope.cancelled_caught and pending is not None:
                    pending.fail(LivecontextError(f"tool call {call.id} was cancelled"))
            finally:
                if self._running.get(call.id) == (scope, done):
                    del self._running[call.id]
                done.set()

        try:
            self.ctx.nursery.start_soon(run)
        except BaseException:
            self._running.pop(call.id, None)
            close = getattr(started, "close", None)
            if close is not None:  # a coroutine never awaited: say nothing of it
                close()
            raise
        return None

    @handler
    async def on_check(self, msg: CheckTool) -> ToolChecked:
        """Ask the check of a side-effecting tool whether an interrupted call did its effect
        (in the handler: a check is a quick look-up, made once per interrupted call on resume,
        and one that is not is cancelled at the message's deadline)."""
        try:
            found = await check_tool(list(self.apps.values()), msg.call, msg.context, msg.timeout_s)
        except Exception as exc:  # noqa: BLE001 - a host bug must not leave the asker waiting
            return ToolChecked(self._crashed(msg.call, exc))
        if found is None:
            return ToolChecked(None)
        if found is False:
            return ToolChecked(None, not_done=True)
        return ToolChecked(self._invoked(msg.call, found))

    def _invoked(self, call: ToolCall, outcome: ToolOutcome) -> ToolInvoked:
        effect = None
        if outcome.effect is not None:
            owner = tool_owner(list(self.apps.values()), call.name)
            assert owner is not None  # (an effect comes only from a tool that was found)
            effect = AppEffect(owner.name, outcome.effect)
        return ToolInvoked(outcome.to_result(call, self.counter), effect)

    def _crashed(self, call: ToolCall, exc: Exception) -> ToolInvoked:
        text = f"{call.name} could not be run: {type(exc).__name__}: {exc}"
        return ToolInvoked(ToolResult(call.id, call.name, ToolStatus.FAILED,
                                      self.counter.content(text, text, f"{call.name} could not be run")))

    @handler
    async def on_cancel_tool(self, msg: CancelTool) -> None:
        running = self._running.get(msg.call_id)
        if running is not None:
            scope, done = running
            scope.cancel()
            await done.wait()

    @handler(inline=True)
    def on_apply(self, msg: ApplyEffect) -> Windows:
        """Apply the effect; the answer is the windows it leaves (what the engine's next model
        call shows: it need not ask for them again)."""
        app = self._app_named(msg.effect.app, f"is named by a committed {type(msg.effect.effect).__name__} effect")
        self._apply(app, msg.effect)
        self._applied[app.name] = self._applied.get(app.name, 0) + 1
        self._unsaved[app.name] = self._unsaved.get(app.name, 0) + 1
        self._save_if_due(app)
        return self._windows()

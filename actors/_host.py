"""The app host actor: gathers the apps' windows, routes tool calls, applies committed effects."""

from __future__ import annotations

from collections.abc import Sequence

import trio

from livecontext.protocol import (
    ActorId,
    AppEffects,
    ApplyEffect,
    CancelTool,
    ErrorReply,
    GetAppEffects,
    GetWindows,
    InvokeTool,
    ListTools,
    ToolCall,
    ToolInvoked,
    ToolResult,
    Tools,
    ToolStatus,
    Windows,
)
from livecontext.runtime import Actor, UsageError, handler
from livecontext.runtime.tokens import TokenCounter

from .apps import App, ToolOutcome, describe_tools
from .apps._invoke import start_tool


class AppHost(Actor):
    """Hosts a thread's apps.

    A tool whose call returns a plain value is over when the call returns: the host answers
    at once, from the handler. An ``async`` tool runs on in the host's own nursery, one cancel
    scope each, so a ``CancelTool`` can stop it while it runs (and the engine's tool timeout,
    which sends one). A tool never changes its app: the app changes only when the
    effect, committed to the log with the tool's result, comes back as ``ApplyEffect``.
    On (re)start the apps are rebuilt from the effects the history store committed.
    """

    def __init__(self, apps: Sequence[App], history: ActorId, counter: TokenCounter) -> None:
        names = [a.name for a in apps]
        if len(set(names)) != len(names):
            raise UsageError(f"two apps share a name: {names}; give each app its own name")
        self.apps = {a.name: a for a in apps}
        self.history = history
        self.counter = counter
        self._running: dict[str, tuple[trio.CancelScope, trio.Event]] = {}

    async def on_start(self) -> None:
        for app in self.apps.values():
            app.bind(self.ctx)
        effects = await self.ctx.ask(self.history, GetAppEffects())
        if not isinstance(effects, AppEffects):
            raise UsageError(
                f"{self.ctx.self_id} cannot rebuild its apps: {self.history} answered GetAppEffects "
                f"with {type(effects).__name__}; spawn the host with the read capability"
            )
        for effect in effects.effects:
            self._app_of(effect).apply(effect)

    def _app_of(self, effect: object) -> App:
        name = getattr(effect, "app", None)
        app = self.apps.get(name) if isinstance(name, str) else None
        if app is None:
            raise UsageError(
                f"effect {type(effect).__name__} names app {name!r}, which this host does not run "
                f"(apps: {', '.join(self.apps) or 'none'})"
            )
        return app

    @handler(inline=True)
    async def on_get_windows(self, msg: GetWindows) -> Windows:
        return Windows("\n\n".join(w for w in (app.window() for app in self.apps.values()) if w))

    @handler(inline=True)
    async def on_list_tools(self, msg: ListTools) -> Tools:
        return Tools(tuple(spec for app in self.apps.values() for spec in describe_tools(app)))

    @handler(inline=True)
    async def on_invoke(self, msg: InvokeTool) -> ToolInvoked | None:
        call = msg.call
        try:
            started = start_tool(list(self.apps.values()), call)
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
                    pending.send(ErrorReply("Cancelled", f"tool call {call.id} was cancelled"))
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

    def _invoked(self, call: ToolCall, outcome: ToolOutcome) -> ToolInvoked:
        return ToolInvoked(outcome.to_result(call, self.counter), outcome.effect)

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
    async def on_apply(self, msg: ApplyEffect) -> None:
        self._app_of(msg.effect).apply(msg.effect)

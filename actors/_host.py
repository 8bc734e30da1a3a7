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

from .apps import App, describe_tools, invoke_tool


class AppHost(Actor):
    """Hosts a thread's apps.

    Tool calls run in the host's own nursery, one cancel scope each, so a ``CancelTool`` can
    stop one while it runs. A tool never changes its app: the app changes only when the
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
        return Windows("\n\n".join(app.window() for app in self.apps.values()))

    @handler(inline=True)
    async def on_list_tools(self, msg: ListTools) -> Tools:
        return Tools(tuple(spec for app in self.apps.values() for spec in describe_tools(app)))

    @handler(inline=True)
    async def on_invoke(self, msg: InvokeTool) -> ToolInvoked | None:
        pending = self.ctx.defer_reply()
        scope = trio.CancelScope()
        done = trio.Event()
        self._running[msg.call.id] = (scope, done)

        async def run() -> None:
            try:
                with scope:
                    try:
                        invoked = await self._invoke(msg.call)
                    except Exception as exc:  # noqa: BLE001 - a host bug must not leave the asker waiting
                        invoked = self._crashed(msg.call, exc)
                    if pending is not None:
                        pending.send(invoked)
                if scope.cancelled_caught and pending is not None:
                    pending.send(ErrorReply("Cancelled", f"tool call {msg.call.id} was cancelled"))
            finally:
                if self._running.get(msg.call.id) == (scope, done):
                    del self._running[msg.call.id]
                done.set()

        self.ctx.nursery.start_soon(run)
        return None

    async def _invoke(self, call: ToolCall) -> ToolInvoked:
        outcome = await invoke_tool(list(self.apps.values()), call)
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

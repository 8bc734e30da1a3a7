"""An MCP server's tools offered to the model: the app :class:`McpTools` (``mcp.NAME``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import trio

from livecontext.protocol.history import ToolCall, ToolContext, ToolSpec, ToolStatus
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.mcp import CallMcpTool, CancelMcpCall, McpCallResult
from livecontext.protocol.records import AppInfo

from livecontext.runtime import ActorStoppedError, LivecontextError, RemoteActorError

from ..apps import App, DataTool, ToolOutcome
from ._server import McpServer, McpServerError, mcp_server

if TYPE_CHECKING:
    from livecontext.runtime import Context


class McpTools(App):
    """The tools of one MCP server, as an app named ``mcp.NAME``: no state, no window.

    It is made from the server's settings alone (a thread records them as its options, so a
    resumed thread and ``render`` make it again without flags, and without connecting). The
    agent's start hands it the tools its connection listed and the connection's actor id
    (:meth:`offer`); each call is sent to that actor (:class:`CallMcpTool`).
    """

    name = "mcp"  # (each instance's own: mcp.NAME)

    def __init__(self, name: str, command: list[str] | None = None, url: str | None = None,
                 tools: list[str] | None = None, env: dict[str, str] | None = None, approval: bool = False,
                 offered: list[str] | None = None) -> None:
        self.server = mcp_server({k: v for k, v in (("name", name), ("command", command), ("url", url),
                                                   ("tools", tools), ("env", env), ("approval", approval))
                                  if v is not None})
        self.name = self.server.app_name  # type: ignore[misc]  # (an instance's name: one app per server)
        self._specs: tuple[ToolSpec, ...] | None = None
        self._connection: ActorId | None = None
        self._ctx: Context | None = None
        self.offered = tuple(offered or ())
        """The names of the tools its server offered when its thread was recorded (what
        inspection, such as the trace, names the server by); it makes no difference to a run."""

    @classmethod
    def of(cls, server: McpServer) -> McpTools:
        """The app of ``server``."""
        return cls(**server.options())

    def offer(self, specs: tuple[ToolSpec, ...], connection: ActorId) -> None:
        """Offer ``specs``, the server's tools, each call of which goes to ``connection``."""
        self._specs = specs
        self._connection = connection
        self.offered = tuple(spec.name for spec in specs)

    def fresh(self) -> McpTools:
        made = McpTools.of(self.server)
        if self._specs is not None and self._connection is not None:
            made.offer(self._specs, self._connection)
        return made

    def options(self) -> dict[str, Any]:
        """The server's settings, and the tools it offers once started (see :attr:`offered`)."""
        offered = [spec.name for spec in self._specs] if self._specs is not None else list(self.offered)
        return {**self.server.options(), **({"offered": offered} if offered else {})}

    def window(self) -> str:
        return ""  # nothing to show: the server's state is its own

    def bind(self, ctx: Context) -> None:
        self._ctx = ctx

    def data_tools(self) -> tuple[DataTool, ...]:
        """The server's tools as its connection listed them (none before the agent starts it)."""
        return tuple(DataTool(spec, self._run) for spec in self._specs or ())

    async def _run(self, call: ToolCall, context: ToolContext) -> ToolOutcome:
        if self._ctx is None or self._connection is None:
            raise McpServerError(f"MCP server {self.server.name!r} is not connected: run its tools in an agent")
        try:
            reply = await self._ctx.ask(self._connection, CallMcpTool(call.name, call.arguments, call.id),
                                        timeout=None)
        except trio.Cancelled:  # (a timeout, an interrupt): the server need not go on with it
            try:
                self._ctx.tell_nowait(self._connection, CancelMcpCall(call.id))
            except LivecontextError:
                pass  # (its mailbox is full or it stopped: it answers no one, and ends with the agent)
            raise
        except (ActorStoppedError, RemoteActorError) as exc:
            return ToolOutcome.failed(f"{call.name}: MCP server {self.server.name!r} is not running ({exc}); "
                                      "the call was not made")
        assert isinstance(reply, McpCallResult)
        if reply.cut:  # (as a call cut by a crash is told: its outcome unknown)
            return ToolOutcome(ToolStatus.INTERRUPTED, reply.text)
        if reply.failed:
            return ToolOutcome.failed(reply.text)
        return ToolOutcome.ok(reply.text)


MCP_TOOLS = f"{McpTools.__module__}:{McpTools.__qualname__}"
"""How a thread records an MCP server's app (``AppInfo.source``)."""


def mcp_servers_of(apps: Sequence[AppInfo]) -> dict[str, str]:
    """The MCP server of each tool a thread's MCP apps offered (tool name -> server name),
    from its recorded apps."""
    found: dict[str, str] = {}
    for info in apps:
        if info.source != MCP_TOOLS or not info.options:
            continue
        try:
            options = json.loads(info.options)
        except ValueError:
            continue
        names = options.get("offered") or options.get("tools") or () if isinstance(options, dict) else ()
        for name in names if isinstance(names, list) else ():
            if isinstance(name, str):
                found.setdefault(name, str(options.get("name", "")))
    return found

"""The actor that holds one MCP server's connection: :class:`McpConnection`."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from typing import IO, TYPE_CHECKING, Any

import trio

from livecontext.protocol.history import ToolSpec
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.mcp import (
    CallMcpTool,
    CancelMcpCall,
    ListMcpTools,
    McpCallResult,
    McpToolList,
    RecordMcpRestart,
)
from livecontext.runtime import Actor, LivecontextError, PendingReply, handler

from ._server import McpServer, McpServerError

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult, Tool

log = logging.getLogger("livecontext.mcp")

_CONNECTION_CLOSED = -32000
"""The code of the error an MCP client raises when its connection is gone (JSON-RPC's
``CONNECTION_CLOSED`` in the ``mcp`` package)."""


class ConnectionMemory:
    """What a connection keeps across its actor's restarts: the tools its first start found,
    and why the last instance failed (the next one records it)."""

    def __init__(self) -> None:
        self.tools: tuple[ToolSpec, ...] | None = None
        self.failure: str | None = None


class ServerDied(LivecontextError):
    """The MCP server's connection is gone (its process died, its HTTP endpoint went away):
    the actor fails with it, and the runtime restarts it."""


class McpConnection(Actor):
    """Holds one MCP server's client open, in a task of its own nursery, and runs its tools.

    On start it connects (starting a stdio server's process) and lists the server's tools.
    Each :class:`CallMcpTool` runs in a task of its own, so calls run side by side and a slow
    one holds up nothing. A server that dies fails the actor: every call in flight is answered
    as cut (its outcome unknown), and the runtime restarts the actor, which connects again and
    records :class:`McpServerRestarted` through the history store. Stopping the actor closes
    the client (a stdio server's process ends).
    """

    def __init__(self, server: McpServer, history: ActorId | None, memory: ConnectionMemory) -> None:
        self.server = server
        self.history = history
        self.memory = memory
        self._client: Client | None = None
        self._tools: tuple[ToolSpec, ...] = ()
        self._stderr: IO[str] | None = None
        self._last_line = ""
        self._running: dict[str, trio.CancelScope] = {}
        """The calls in flight that a :class:`CancelMcpCall` may name, by call id."""

    async def on_start(self) -> None:
        try:
            self._client = await self.ctx.nursery.start(self._hold)
            listed = await self._list_tools()
        except McpServerError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever stopped the start is said in one line
            raise McpServerError(f"MCP server {self.server.name!r} could not be started: {self._why(exc)}") from None
        self._tools = self._kept(listed)
        if self.memory.tools is None:
            self.memory.tools = self._tools
        if self.memory.failure is not None and self.history is not None:
            reason, self.memory.failure = self.memory.failure, None
            await self.ctx.ask(self.history, RecordMcpRestart(self.server.name, reason))

    async def _hold(self, task_status: trio.TaskStatus[Client] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the client and keep it open until the actor stops (or fails)."""
        try:
            from mcp import Client, StdioServerParameters
            from mcp.client.stdio import get_default_environment, stdio_client
        except ImportError:
            raise McpServerError("MCP servers need the mcp package: pip install 'livecontext[mcp]'") from None
        if self.server.command is not None:
            self._stderr = await trio.to_thread.run_sync(tempfile.TemporaryFile, "w+")
            params = StdioServerParameters(
                command=self.server.command[0], args=list(self.server.command[1:]),
                env={**get_default_environment(), **(self.server.env or {})}, cwd=os.getcwd())
            client = Client(stdio_client(params, errlog=self._stderr))
        else:
            assert self.server.url is not None
            client = Client(self.server.url)
        opened = False
        try:
            async with client:
                task_status.started(client)
                opened = True
                await trio.sleep_forever()
        except Exception as exc:
            if not opened:
                raise  # (the start failed: on_start says why)
            # the transport itself failed (an HTTP server gone): the actor fails, and restarts
            lost: BaseException = exc
            while isinstance(lost, BaseExceptionGroup) and len(lost.exceptions) == 1:
                lost = lost.exceptions[0]
            self.memory.failure = self.memory.failure or f"connection lost: {type(lost).__name__}: {lost}"
            raise ServerDied(self.memory.failure) from None
        finally:
            if self._stderr is not None:  # (its last line says why a server that stopped did; a small
                # local file, read here at once: this may run while the task is being cancelled)
                self._stderr.seek(0)
                lines = [line.strip() for line in self._stderr.read().splitlines() if line.strip()]
                self._last_line = lines[-1] if lines else ""
                self._stderr.close()

    async def _list_tools(self) -> list[Tool]:
        assert self._client is not None
        found: list[Tool] = []
        cursor: str | None = None
        while True:
            page = await self._client.list_tools(cursor=cursor)
            found += page.tools
            cursor = page.next_cursor
            if not cursor:
                return found

    def _kept(self, listed: list[Tool]) -> tuple[ToolSpec, ...]:
        offered = {tool.name: tool for tool in listed}
        wanted = self.server.tools
        if wanted is not None:
            missing = [name for name in wanted if name not in offered]
            if missing:
                raise McpServerError(
                    f"MCP server {self.server.name!r} offers no tool {missing[0]!r}; it offers "
                    f"{', '.join(offered) or 'no tools'}")
        names = wanted if wanted is not None else tuple(offered)
        return tuple(_spec(offered[name], self.server.approval) for name in names)

    def _why(self, exc: BaseException) -> str:
        """One line for a start that failed: the stdio server's last line on stderr, if any."""
        last = self._last_line
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if self.server.command is not None:
            where = f"{shell_line(self.server.command)} "
            return f"{where}stopped ({last})" if last else f"{where}failed: {said}"
        return f"{self.server.url}: {said}"

    @property
    def calls_in_flight(self) -> int:
        """How many calls of the server's tools are running now (those a cancellation may stop)."""
        return len(self._running)

    @handler(inline=True)
    def on_list(self, msg: ListMcpTools) -> McpToolList:
        return McpToolList(self._tools)

    @handler
    async def on_call(self, msg: CallMcpTool) -> McpCallResult | None:
        known = {spec.name for spec in self._tools}
        if msg.name not in known:
            return McpCallResult(f"MCP server {self.server.name!r} offers no tool {msg.name!r} here "
                                 f"(offered: {', '.join(sorted(known)) or 'none'})", failed=True)
        try:
            arguments = json.loads(msg.arguments_json) if msg.arguments_json.strip() else {}
        except ValueError as exc:
            return McpCallResult(f"arguments of {msg.name} are not valid JSON: {exc}", failed=True)
        if not isinstance(arguments, dict):
            return McpCallResult(f"arguments of {msg.name} must be a JSON object", failed=True)
        pending = self.ctx.defer_reply()
        scope = trio.CancelScope()
        if msg.call_id:
            self._running[msg.call_id] = scope
        self.ctx.nursery.start_soon(self._call, msg.name, arguments, pending, scope, msg.call_id)
        return None

    @handler(inline=True)
    def on_cancel(self, msg: CancelMcpCall) -> None:
        scope = self._running.get(msg.call_id)
        if scope is not None:
            scope.cancel()

    async def _call(self, name: str, arguments: dict[str, Any], pending: PendingReply | None,
                    scope: trio.CancelScope, call_id: str) -> None:
        try:
            with scope:
                await self._answer(name, arguments, pending)
        finally:
            if self._running.get(call_id) is scope:
                del self._running[call_id]

    async def _answer(self, name: str, arguments: dict[str, Any], pending: PendingReply | None) -> None:
        from mcp import MCPError

        assert self._client is not None
        cut = McpCallResult(f"interrupted: the MCP server {self.server.name!r} stopped during the call (it is "
                            "restarted), so its outcome is unknown; check its effect before calling it again",
                            failed=True, cut=True)
        try:
            try:
                result = await self._client.call_tool(name, arguments)
            except MCPError as exc:
                if exc.error.code == _CONNECTION_CLOSED:
                    raise ServerDied(f"{exc.error.message} during a call of {name}") from None
                reply = McpCallResult(f"{name} failed: MCP error {exc.error.code}: {exc.error.message}", failed=True)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise ServerDied(f"{type(exc).__name__}: {exc} during a call of {name}") from None
            except Exception as exc:  # noqa: BLE001 - a transport's own errors: the connection is gone
                if type(exc).__module__.split(".")[0] in ("httpx", "httpcore", "anyio"):
                    raise ServerDied(f"{type(exc).__name__}: {exc} during a call of {name}") from None
                raise
            else:
                reply = _result(result)
            if pending is not None:
                pending.send(reply)
        except ServerDied as died:
            self.memory.failure = str(died)
            raise
        finally:
            if pending is not None and not pending.sent:
                pending.send(cut)


def _spec(tool: Tool, approval: bool) -> ToolSpec:
    hints = tool.annotations
    idempotent = hints is not None and bool(hints.idempotent_hint or hints.read_only_hint)
    return ToolSpec(tool.name, tool.description or tool.title or tool.name,
                    json.dumps(tool.input_schema, ensure_ascii=False, separators=(",", ":")),
                    idempotent=idempotent, approval=approval)


def _result(result: CallToolResult) -> McpCallResult:
    """The model's view of a tool's result: its text content, joined (other content named),
    then its structured content as JSON where the text does not say it already."""
    parts: list[str] = []
    for item in result.content:
        text = getattr(item, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(item, 'type', 'content')} content]")
    text = "\n".join(parts)
    structured = result.structured_content
    if structured is not None and not _says(text, structured):
        shown = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        text = f"{text}\nstructured content: {shown}" if text else shown
    if result.is_error:
        return McpCallResult(text or "the tool failed (the server gave no text)", failed=True)
    return McpCallResult(text or "done")


def _says(text: str, structured: object) -> bool:
    """Whether ``text`` is the structured content already (as JSON, or its lone ``result``)."""
    try:
        said = json.loads(text)
    except ValueError:
        return False
    if said == structured:
        return True
    return isinstance(structured, dict) and list(structured) == ["result"] and said == structured["result"]


def shell_line(command: tuple[str, ...]) -> str:
    """A command as one shell line."""
    import shlex

    return shlex.join(command)

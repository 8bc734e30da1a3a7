"""MCP servers' tools: what an agent's app asks the actor that holds a server's connection,
and the record a thread keeps when that server had to be restarted.

An MCP server given to an agent is an app (``mcp.NAME``) whose tools are the server's. The
connection is an actor of the agent's runtime (``mcp/THREAD.NAME``): it answers
:class:`ListMcpTools` with the server's tools as :class:`ToolSpec` data and runs each
:class:`CallMcpTool`. A server that dies under it fails the actor; the runtime restarts it (a
new connection, a new process for a stdio server) and it records :class:`McpServerRestarted`
in the thread's log through the history store (:class:`RecordMcpRestart`).
"""

from __future__ import annotations

from attrs import frozen

from ._message import Message
from ._tools import ToolSpec


@frozen
class ListMcpTools(Message):
    """Ask an MCP connection for its server's tools (those its filter keeps), in the server's order."""


@frozen
class McpToolList(Message):
    """The reply to :class:`ListMcpTools`."""

    tools: tuple[ToolSpec, ...]
    """Each tool as the model is sent it: its name, description and the server's JSON input
    schema as given; ``idempotent`` when the server says so (``idempotentHint`` or ``readOnlyHint``)."""


@frozen
class CallMcpTool(Message):
    """Ask an MCP connection to run one of its server's tools (the reply: :class:`McpCallResult`)."""

    name: str
    arguments_json: str
    """The arguments as a JSON object, as the model gave them."""
    call_id: str = ""
    """The model's call id (what :class:`CancelMcpCall` names)."""


@frozen
class CancelMcpCall(Message):
    """Stop waiting for a call's result (tell): its tool call was cancelled (a timeout, an
    interrupt); the client tells the server the request is cancelled."""

    call_id: str


@frozen
class McpCallResult(Message):
    """What a call of an MCP tool came to."""

    text: str
    """What the model reads: the result's text content (and its structured content as JSON
    where the text does not say it already), or the error's text."""
    failed: bool = False
    """The server answered with an error result, or the call could not be made."""
    cut: bool = False
    """The server died during the call: its outcome is unknown (the connection is restarted)."""


@frozen
class RecordMcpRestart(Message):
    """An MCP connection was made again after its server died (ask: ``Ack`` once durable)."""

    server: str
    reason: str


@frozen
class McpServerRestarted(Message):
    """Log record: an MCP server died and its connection was made again (a new process, for a
    stdio server)."""

    server: str
    """The server's name (its app is ``mcp.NAME``)."""
    reason: str
    """Why it was restarted: the error the connection failed with."""


McpRequest = ListMcpTools | CallMcpTool | CancelMcpCall
"""What an MCP connection answers."""

McpReply = McpToolList | McpCallResult
"""Its answers."""

McpHistoryRequest = RecordMcpRestart
"""What an MCP connection asks a thread's history store."""

McpRecord = McpServerRestarted
"""What the log stores of MCP connections."""

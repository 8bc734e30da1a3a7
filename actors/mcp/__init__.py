"""MCP servers' tools for an agent: each server an app (``mcp.NAME``) whose tools are the
server's, its connection an actor of the agent's runtime (:class:`McpConnection`), started with
the agent, restarted when the server dies (recorded in the thread's log), stopped with it.
docs/mcp.md tells the whole story.
"""

from __future__ import annotations

from ._app import MCP_TOOLS, McpTools, mcp_servers_of
from ._connection import ConnectionMemory, McpConnection
from ._server import McpLike, McpServer, McpServerError, mcp_server, mcp_servers, parse_mcp_flag
from ._start import start_mcp_connections

__all__ = [
    "MCP_TOOLS",
    "ConnectionMemory",
    "McpConnection",
    "McpLike",
    "McpServer",
    "McpServerError",
    "McpTools",
    "mcp_server",
    "mcp_servers",
    "mcp_servers_of",
    "parse_mcp_flag",
    "start_mcp_connections",
]

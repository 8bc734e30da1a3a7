"""MCP servers' tools: the messages between an agent's MCP app and the actor that holds a
server's connection, and the record of a server restarted (see docs/mcp.md)."""

from __future__ import annotations

from ._mcp import (
    CallMcpTool,
    CancelMcpCall,
    ListMcpTools,
    McpCallResult,
    McpHistoryRequest,
    McpRecord,
    McpReply,
    McpRequest,
    McpServerRestarted,
    McpToolList,
    RecordMcpRestart,
)

__all__ = [
    "CallMcpTool",
    "CancelMcpCall",
    "ListMcpTools",
    "McpCallResult",
    "McpHistoryRequest",
    "McpRecord",
    "McpReply",
    "McpRequest",
    "McpServerRestarted",
    "McpToolList",
    "RecordMcpRestart",
]

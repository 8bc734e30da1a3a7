"""Starting an agent's MCP connections, before anything of its thread runs."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from livecontext.protocol.context import Capability
from livecontext.protocol.kernel import ActorId
from livecontext.runtime import Runtime

from ..apps import App, describe_tools
from ._app import McpTools
from ._connection import ConnectionMemory, McpConnection
from ._server import McpServerError


async def start_mcp_connections(rt: Runtime, thread_id: str, apps: Sequence[App], history: ActorId) -> None:
    """Spawn a connection actor (``mcp/THREAD.NAME``) for each MCP app of ``apps`` and offer
    the app the tools it listed, so that the thread records them and the model is sent them.

    Raises:
        McpServerError: a server cannot be started (its stderr's last line, for a stdio one),
            does not offer a tool its filter names, or offers a tool another app offers too.
    """
    for app in apps:
        if not isinstance(app, McpTools):
            continue
        memory = ConnectionMemory()
        server = app.server
        connection = ActorId("mcp", f"{thread_id}.{server.name}")
        await rt.spawn(functools.partial(McpConnection, server, history, memory), connection,
                       capabilities=(Capability.NOTIFY,))  # (to record a restart)
        assert memory.tools is not None  # (set by its first start, which the spawn waited for)
        app.offer(memory.tools, connection)
    owners: dict[str, str] = {}
    for app in apps:
        for spec in describe_tools(app):
            if spec.name in owners and (isinstance(app, McpTools) or owners[spec.name].startswith("mcp.")):
                raise McpServerError(
                    f"tool {spec.name!r} is offered by {owners[spec.name]} and by {app.name}: keep it in one "
                    "of them (an MCP server's tools = [...] chooses the ones it offers)")
            owners.setdefault(spec.name, app.name)

"""A real MCP server for the MCP client's tests: stdio by default, streamable HTTP with
``--http PORT_FILE`` (it binds 127.0.0.1 on a free port and writes the port to that file).

Its tools: ``add``, ``slow`` (waits until a file exists), ``stats`` (structured content),
``broken`` (raises: an error result), ``crash`` (the process exits at once). Each call
appends the tool's name to the file named by ``$MCP_CALLS`` (when set), so a test can count
the calls the server ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("test-server")

if os.environ.get("MCP_PIDS"):  # (a test checks that the process is gone once its agent closed)
    with open(os.environ["MCP_PIDS"], "a", encoding="utf-8") as pids:
        pids.write(f"{os.getpid()}\n")


def _count(name: str) -> None:
    calls = os.environ.get("MCP_CALLS")
    if calls:
        with open(calls, "a", encoding="utf-8") as f:
            f.write(name + "\n")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    _count("add")
    return a + b


@app.tool()
def slow(path: str) -> str:
    """Wait until the file at path exists, then say so."""
    _count("slow-started")
    Path(path + ".started").write_text("started", encoding="utf-8")
    while not Path(path).exists():
        time.sleep(0.02)
    _count("slow")
    return f"{path} is there"


@app.tool()
def stats(values: list[float]) -> dict[str, float]:
    """The count and mean of some values."""
    _count("stats")
    return {"count": len(values), "mean": sum(values) / len(values) if values else 0.0}


@app.tool()
def weather(city: str) -> CallToolResult:
    """The weather in a city: a line of text, and the figures as structured content."""
    _count("weather")
    return CallToolResult(content=[TextContent(type="text", text=f"sunny in {city}")],
                          structured_content={"sky": "sunny", "celsius": 21})


@app.tool()
def broken(why: str) -> str:
    """Always fails, saying why."""
    _count("broken")
    raise ToolError(f"broken on purpose: {why}")


@app.tool()
def crash() -> str:
    """Ends the server process at once."""
    _count("crash")
    sys.stdout.flush()
    os._exit(3)


def _serve_http(port_file: str) -> None:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # (a client connecting before uvicorn accepts waits in the backlog)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    Path(port_file + ".tmp").write_text(str(port), encoding="utf-8")
    os.replace(port_file + ".tmp", port_file)
    server.run(sockets=[sock])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        _serve_http(sys.argv[2])
    else:
        app.run()


def start_http_server(folder: Path, calls: Path | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Start this server over streamable HTTP on 127.0.0.1 in a process of its own; its URL.

    The caller ends the process (``terminate``, then ``wait``)."""
    port_file = folder / "port"
    env = {**os.environ, **({"MCP_CALLS": str(calls)} if calls is not None else {})}
    process = subprocess.Popen([sys.executable, __file__, "--http", str(port_file)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not port_file.exists():  # (readiness, not a test's bound: the socket listens before the file is written)
        if process.poll() is not None:
            raise RuntimeError(f"the MCP test server stopped with status {process.returncode}")
        time.sleep(0.02)
    return process, f"http://127.0.0.1:{port_file.read_text(encoding='utf-8')}/mcp"


SERVER = [sys.executable, __file__]
"""The command that starts this server over stdio."""

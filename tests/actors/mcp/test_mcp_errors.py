"""An MCP server given wrong, or one that cannot start, is said in one line and nothing runs."""

from __future__ import annotations

import sys

import pytest

import livecontext
from livecontext import McpServer, McpServerError
from tests.support.mcp_server import SERVER


@pytest.mark.parametrize(("given", "said"), [
    ({"name": "x", "command": ["srv"], "url": "http://127.0.0.1:1/mcp"},
     "MCP server 'x' has both a command and a url: give one of them"),
    ({"name": "x"}, "MCP server 'x' has neither a command nor a url: give one of them"),
    ({"name": "", "command": ["srv"]}, "MCP server name '' is not valid: use letters, digits, _ and -"),
    ({"command": ["srv"]}, "an MCP server needs a name"),
    ({"name": "x", "command": []}, "MCP server 'x' has an empty command"),
    ({"name": "x", "url": "ftp://host"}, "MCP server 'x': url 'ftp://host' is not an http:// or https:// URL"),
    ({"name": "x", "command": ["srv"], "tool": ["a"]}, "MCP server 'x': unknown key 'tool'"),
])
async def test_a_server_given_wrong_is_refused_in_one_line_before_anything_opens(given: dict[str, object],
                                                                                  said: str) -> None:
    with pytest.raises(McpServerError, match="^" + said.replace("(", r"\(").replace(")", r"\)")) as caught:
        async with livecontext.open_agent(model="echo", mcp=[given]):
            pass
    assert "\n" not in str(caught.value)


async def test_two_servers_of_one_name_are_refused() -> None:
    with pytest.raises(McpServerError, match="^two MCP servers are named 'calc': give each its own name$"):
        async with livecontext.open_agent(model="echo", mcp=[McpServer("calc", command=SERVER),
                                                             McpServer("calc", url="http://127.0.0.1:1/mcp")]):
            pass


async def test_a_server_that_stops_at_start_is_said_with_the_last_line_of_its_stderr() -> None:
    failing = [sys.executable, "-c", "import sys; print('loading', file=sys.stderr); "
               "print('no config file found', file=sys.stderr); sys.exit(2)"]
    with pytest.raises(McpServerError) as caught:
        async with livecontext.open_agent(model="echo", mcp=[McpServer("cfg", command=failing)]):
            pass
    assert str(caught.value).startswith("MCP server 'cfg' could not be started: ")
    assert str(caught.value).endswith("stopped (no config file found)")


async def test_a_tool_filter_naming_a_tool_the_server_lacks_says_what_it_offers() -> None:
    with pytest.raises(McpServerError, match="^MCP server 'calc' offers no tool 'mul'; it offers add, slow, stats, "
                                             "weather, broken, crash$"):
        async with livecontext.open_agent(model="echo", mcp=[McpServer("calc", command=SERVER, tools=["add", "mul"])]):
            pass


async def test_two_servers_offering_one_tool_name_are_refused() -> None:
    with pytest.raises(McpServerError, match="^tool 'add' is offered by mcp.a and by mcp.b: keep it in one of them"):
        async with livecontext.open_agent(model="echo", mcp=[McpServer("a", command=SERVER, tools=["add"]),
                                                             McpServer("b", command=SERVER, tools=["add"])]):
            pass


async def test_without_the_mcp_package_a_server_is_refused_in_one_line_saying_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # (an import of it fails, as when it is not installed)
    with pytest.raises(McpServerError, match=r"^MCP servers need the mcp package: pip install 'livecontext\[mcp\]'$"):
        async with livecontext.open_agent(model="echo", mcp=[McpServer("calc", command=SERVER)]):
            pass

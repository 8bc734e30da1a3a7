"""A stdio MCP server that dies mid-run is restarted by the runtime, with a note in the log;
and a server's process ends with its agent."""

from __future__ import annotations

import os
from pathlib import Path

import livecontext
from livecontext.protocol.history import ToolResultsEntry, ToolStatus
from livecontext.runtime.models import ScriptedModel
from tests.support.command import json_lines, run_cli
from tests.support.mcp_server import SERVER, start_http_server


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_server_that_dies_during_a_call_is_restarted_noted_in_the_log_and_used_again(tmp_path: Path) -> None:
    calls, pids = tmp_path / "calls", tmp_path / "pids"
    model = ScriptedModel.from_turns([
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]},
        {"tool_calls": [{"name": "crash", "arguments": {}}]},
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"text": "done"},
    ])
    server = livecontext.McpServer("calc", command=SERVER, env={"MCP_CALLS": str(calls), "MCP_PIDS": str(pids)})
    store = f"sqlite:{tmp_path / 'store.db'}"
    async with livecontext.open_agent(model=model, mcp=[server], store=store, apps=[]) as agent:
        await agent.send("Add, crash, add.")
        history = await agent.history()
    results = [(r.name, r.status, r.content.live.text) for e in history if isinstance(e, ToolResultsEntry)
               for r in e.results]
    assert results[0] == ("add", ToolStatus.OK, "2")
    assert results[1] == ("crash", ToolStatus.INTERRUPTED,
                          "interrupted: the MCP server 'calc' stopped during the call (it is restarted), so its "
                          "outcome is unknown; check its effect before calling it again")
    assert results[2] == ("add", ToolStatus.OK, "5")  # (a new process answered)
    assert calls.read_text().split() == ["add", "crash", "add"]
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2 and not any(_alive(p) for p in started)
    done = await run_cli("audit", "--store", store, "--thread", "main", "--json")
    assert done.returncode == 0, done.stderr
    audit = json_lines(done.stdout)
    notes = [r for r in audit if r["kind"] == "McpServerRestarted"]
    assert len(notes) == 1 and notes[0]["sender"] == "mcp/main.calc"
    assert notes[0]["summary"] == "MCP server calc restarted: Connection closed during a call of crash"


async def test_the_server_process_is_gone_once_its_agent_is_closed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    server = livecontext.McpServer("calc", command=SERVER, env={"MCP_PIDS": str(pids)})
    async with livecontext.open_agent(model="echo", mcp=[server], store="memory:") as agent:
        pid = int(pids.read_text())
        assert _alive(pid)
        await agent.send("hello")
    assert not _alive(pid)


async def test_an_http_server_that_goes_away_cuts_the_call_in_flight_and_the_agent_goes_on(tmp_path: Path) -> None:
    process, url = start_http_server(tmp_path)
    model = ScriptedModel.from_turns([
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]},
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 2}}]},
        {"text": "done"},
    ])
    store = f"sqlite:{tmp_path / 'store.db'}"
    try:
        async with livecontext.open_agent(model=model, mcp=[{"name": "web", "url": url}], store=store,
                                          apps=[]) as agent:
            first = await agent.send("add twice", max_steps=3)  # the input, the first output, add(1, 1)
            process.kill()
            process.wait()
            reply = await agent.run()
            history = await agent.history()
    finally:
        process.kill()
        process.wait()
    results = [(r.name, r.status, r.content.live.text) for e in history if isinstance(e, ToolResultsEntry)
               for r in e.results]
    assert first.reason == "max_steps" and results[0] == ("add", ToolStatus.OK, "2")
    assert results[1] == ("add", ToolStatus.INTERRUPTED,
                          "interrupted: the MCP server 'web' stopped during the call (it is restarted), so its "
                          "outcome is unknown; check its effect before calling it again")
    assert reply.text == "done"  # (the agent goes on; the server, gone for good, is not restarted forever)

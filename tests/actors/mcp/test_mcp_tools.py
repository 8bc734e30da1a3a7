"""An agent uses the tools of real MCP servers: one over stdio (tests/support/mcp_server.py,
started by the agent), one over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

import livecontext
from livecontext.protocol.history import ModelOutputEntry, ToolResultsEntry, ToolStatus
from livecontext.actors.mcp import McpConnection
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.testing import actor_instance
from tests.support.agent_harness import ProbeModel
from tests.support.mcp_server import SERVER, start_http_server


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    process, url = start_http_server(tmp_path)
    try:
        yield url
    finally:
        process.terminate()
        process.wait()


def _results(history: tuple[object, ...]) -> list[tuple[str, ToolStatus, str]]:
    return [(r.name, r.status, r.content.live.text) for e in history if isinstance(e, ToolResultsEntry)
            for r in e.results]


async def test_an_agent_calls_the_tools_of_a_stdio_server_and_of_a_streamable_http_server(http_url: str) -> None:
    model = ProbeModel(ScriptedModel.from_turns([
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 40}},
                        {"name": "stats", "arguments": {"values": [1, 2, 6]}},
                        {"name": "weather", "arguments": {"city": "Oslo"}},
                        {"name": "broken", "arguments": {"why": "testing"}}]},
        {"text": "42, and a mean of 3."},
    ]))
    servers = [livecontext.McpServer("calc", command=SERVER, tools=["add", "broken"]),
               {"name": "remote", "url": http_url, "tools": ["stats", "weather"]}]
    async with livecontext.open_agent(model=model, mcp=servers, store="memory:", apps=[]) as agent:
        reply = await agent.send("Add 2 and 40; then the mean of 1, 2 and 6.")
        history = await agent.history()
    assert reply.text == "42, and a mean of 3."
    offered = {t.name: t for t in model.requests[0].tools}
    assert {"add", "broken", "stats"} <= set(offered) and "slow" not in offered
    assert json.loads(offered["add"].parameters_json)["properties"]["a"]["type"] == "integer"
    assert offered["stats"].description == "The count and mean of some values."
    assert _results(history) == [
        ("add", ToolStatus.OK, "42"),
        ("stats", ToolStatus.OK, '{\n  "count": 3,\n  "mean": 3.0\n}'),  # (its text says it all)
        ("weather", ToolStatus.OK, 'sunny in Oslo\nstructured content: {"sky":"sunny","celsius":21}'),
        ("broken", ToolStatus.FAILED, "Error executing tool broken: broken on purpose: testing"),
    ]
    assert any(isinstance(e, ModelOutputEntry) for e in history)


async def test_a_server_given_with_approval_makes_each_call_of_its_tools_wait_for_a_person() -> None:
    model = ScriptedModel.from_turns([
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
        {"text": "3"},
    ])
    calc = livecontext.McpServer("calc", command=SERVER, tools=["add"], approval=True)
    async with livecontext.open_agent(model=model, mcp=[calc], store="memory:", apps=[]) as agent:
        waiting = await agent.send("1 + 2?")
        assert [c.name for c in waiting.status.approvals] == ["add"]
        assert _results(await agent.history()) == []  # (not run before it is approved)
        await agent.approve(waiting.status.approvals[0].id)
        done = await agent.run()
        assert done.text == "3"
        assert _results(await agent.history()) == [("add", ToolStatus.OK, "3")]


async def test_an_interrupted_call_is_cancelled_at_its_server_connection_too(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    model = ScriptedModel.from_turns([
        {"tool_calls": [{"name": "slow", "arguments": {"path": str(gate)}}]},
        {"text": "Fine, no waiting."},
    ])
    calc = livecontext.McpServer("calc", command=SERVER, tools=["slow"])
    try:
        async with livecontext.open_agent(model=model, mcp=[calc], store="memory:", apps=[]) as agent:
            connection = actor_instance(agent._session.rt.ref("mcp/main.calc"))
            assert isinstance(connection, McpConnection)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.send, "wait for the gate")
                while not Path(f"{gate}.started").exists():  # (the server runs the call)
                    await trio.sleep(0.01)
                assert connection.calls_in_flight == 1
                reply = await agent.send("don't wait", mode="interrupt")
            assert reply.text == "Fine, no waiting."
            with trio.fail_after(30):  # (a safety net: the cancellation is one message away)
                while connection.calls_in_flight:
                    await trio.sleep(0.01)
            assert [(name, status) for name, status, _ in _results(await agent.history())] == [
                ("slow", ToolStatus.INTERRUPTED)]
    finally:
        gate.write_text("open", encoding="utf-8")  # (lets the server's own thread finish)

"""The trace draws a call of an MCP server's tool as any tool call, then the app host asking
the server's connection (a column named for the server), and marks a server restarted."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.support.command import in_process, write_script
from tests.support.mcp_server import SERVER


def test_the_trace_names_the_mcp_server_a_call_went_to_and_marks_its_restart(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"tool_calls": [{"name": "crash", "arguments": {}}]},
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]},
        {"text": "done"}])
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    code, _, err = in_process("run", "--model", f"scripted:{script}", *store, "--mcp", f"calc={shlex.join(SERVER)}",
                              "--input", "go", "--json")
    assert code == 0, err
    out = tmp_path / "trace.json"
    code, _, err = in_process("trace", *store, "--format", "json", "-o", str(out))
    assert code == 0, err
    trace = json.loads(out.read_text(encoding="utf-8"))
    assert "mcp/t.calc" in [a["id"] for a in trace["actors"]]
    to_server = [(m["kind"], m["summary"]) for m in trace["messages"]
                 if "mcp/t.calc" in (m["from"], m["to"]) and m["kind"] in ("CallMcpTool", "McpCallResult")]
    assert to_server == [("CallMcpTool", 'add({"a": 2, "b": 3})'), ("McpCallResult", "add ok: add ok: 5"),
                         ("CallMcpTool", 'add({"a": 1, "b": 1})'), ("McpCallResult", "add ok: add ok: 2")]
    assert [m["summary"] for m in trace["marks"] if "restarted" in m["summary"]] == [
        "MCP server calc restarted: Connection closed during a call of crash"]

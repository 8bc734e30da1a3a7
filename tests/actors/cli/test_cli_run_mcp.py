"""``livecontext run`` gives an agent MCP servers' tools from a blueprint's ``[[mcp]]`` or from
``--mcp NAME=CMD``; ``render`` and ``history`` of the thread need neither again."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.support.command import in_process, in_process_json, write_script
from tests.support.mcp_server import SERVER


def _results(history: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(r["name"], r["status"], r["content"]) for e in history for r in e.get("results", ())]  # type: ignore[attr-defined]


def test_a_blueprints_mcp_table_gives_the_agent_the_servers_tools_and_render_shows_the_calls(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, {"text": "5"}])
    blueprint = tmp_path / "agent.toml"
    blueprint.write_text(f'model = "scripted:{script}"\ninputs = ["add 2 and 3"]\napps = []\n\n'
                         f'[[mcp]]\nname = "calc"\ncommand = {json.dumps(SERVER)}\ntools = ["add"]\n', encoding="utf-8")
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    ran = in_process_json("run", str(blueprint), *store, "--json")
    assert _results(ran["entries"]) == [("add", "ok", "5")]
    rendered = in_process_json("render", *store, "--json")
    assert [t["name"] for t in rendered["tools"]][0] == "add"
    assert {"role": "tool", "content": "[ok] 5", "tool_call_id": "call_0_0"} in rendered["messages"]


def test_run_with_mcp_flags_offers_a_servers_tools_and_a_resumed_run_needs_no_flag(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}, {"text": "2"},
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 2}}]}, {"text": "4"}])
    store = ["--model", f"scripted:{script}", "--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    first = in_process_json("run", *store, "--mcp", f"calc={shlex.join(SERVER)}", "--input", "one plus one", "--json")
    assert _results(first["entries"]) == [("add", "ok", "2")]
    again = in_process_json("run", *store, "--input", "two plus two", "--json")  # (the thread recorded calc)
    assert _results(again["entries"]) == [("add", "ok", "2"), ("add", "ok", "4")]


@pytest.mark.parametrize(("flag", "said"), [
    ("calc", "--mcp 'calc': give NAME=COMMAND (a stdio server) or NAME=URL (streamable HTTP)"),
    ("=srv", "MCP server name '' is not valid"),
    ("calc=", "MCP server 'calc' has an empty command"),
    ("calc='unclosed", "--mcp \"calc='unclosed\": the command cannot be split"),
])
def test_a_bad_mcp_flag_is_one_error_line(tmp_path: Path, flag: str, said: str) -> None:
    code, _, err = in_process("run", "--store", f"sqlite:{tmp_path / 'db'}", "--mcp", flag, "--input", "hi")
    assert code == 1
    assert err.startswith(f"livecontext: error: {said}") and err.count("\n") == 1


def test_a_server_that_cannot_start_is_one_error_line(tmp_path: Path) -> None:
    code, _, err = in_process("run", "--store", f"sqlite:{tmp_path / 'db'}", "--mcp", "gone=/no/such/server",
                              "--input", "hi")
    assert code == 1
    assert err.startswith("livecontext: error: MCP server 'gone' could not be started: /no/such/server failed: ")
    assert err.count("\n") == 1

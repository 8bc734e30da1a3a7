"""An agent using an MCP server is killed (SIGKILL) during a call of the server's tool; the run
resumed without flags (the thread recorded its server) runs none of the calls that finished,
and reports the cut call interrupted instead of running it again: the server counts its calls.

A real ``livecontext run --mcp`` subprocess runs a scripted agent against the stdio server of
tests/support/mcp_server.py.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.support.command import LIVECONTEXT, run_or_kill, write_script
from tests.support.mcp_server import SERVER


async def test_a_run_killed_during_an_mcp_call_resumes_without_running_finished_calls_again(
        tmp_path: Path) -> None:
    calls, gate = tmp_path / "calls", tmp_path / "gate"  # (a stdio server gets a safe environment: env sets it)
    script = write_script(tmp_path / "script.json", [
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}},
                        {"name": "slow", "arguments": {"path": str(gate)}}]},
        {"tool_calls": [{"name": "add", "arguments": {"a": 3, "b": 4}}]},
        {"text": "done"},
    ])
    store = f"sqlite:{tmp_path / 'db'}"
    run = [*LIVECONTEXT, "run", "--model", f"scripted:{script}", "--store", store, "--thread", "t", "--json"]

    async def in_slow_call() -> bool:
        return Path(f"{gate}.started").exists()

    try:
        killed = await run_or_kill([*run, "--mcp", f"calc=env MCP_CALLS={shlex.quote(str(calls))} {shlex.join(SERVER)}", "--input", "go"], tmp_path,
                                   in_slow_call)
        assert killed is None
        assert calls.read_text().split() == ["add", "slow-started"]
        done = await run_or_kill(run, tmp_path, None)  # resumed: no input, no --mcp (the thread recorded it)
        assert done is not None and done.returncode == 0, done.stderr if done else ""
        assert calls.read_text().split() == ["add", "slow-started", "add"]  # only the new call ran
        results = [(r["name"], r["status"], r["content"]) for e in json.loads(done.stdout)["entries"]
                   for r in e.get("results", ())]
        assert results[0] == ("add", "ok", "3")
        assert results[1][:2] == ("slow", "interrupted") and results[1][2].startswith("interrupted")
        assert results[2] == ("add", "ok", "7")
    finally:
        gate.write_text("open", encoding="utf-8")  # (lets the killed run's orphaned server finish its call)

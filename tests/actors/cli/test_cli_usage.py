"""``run --json`` and ``state --json`` print the thread's usage (its sub-agents' included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from click.testing import CliRunner

import livecontext
from livecontext.actors import SubAgents
from livecontext.actors.apps import Notebook
from livecontext.protocol.history import ModelOutputEntry, Usage
from livecontext.protocol.records import EntryAppended
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import open_store

from livecontext.actors.cli import main
from tests.support.metered import Metered

KEYS = ["cached_input_tokens", "input_tokens", "model_calls", "output_tokens"]


def cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_run_json_and_state_json_print_the_same_usage_which_grows_with_each_run(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'store.db'}"
    first = cli("run", "--store", store, "--thread", "t", "--input", "hello", "--json")
    assert sorted(first["usage"]) == KEYS
    # (echo reports nothing: the rendered counts are recorded, nothing cached)
    assert first["usage"]["model_calls"] == 1 and first["usage"]["input_tokens"] > 0
    assert first["usage"]["output_tokens"] > 0 and first["usage"]["cached_input_tokens"] == 0
    assert cli("state", "--store", store, "--thread", "t", "--json")["usage"] == first["usage"]
    second = cli("run", "--store", store, "--thread", "t", "--input", "again", "--json")
    assert second["usage"]["model_calls"] == 2
    assert second["usage"]["input_tokens"] > 2 * first["usage"]["input_tokens"] - 1  # (the context grew)
    assert cli("state", "--store", store, "--thread", "t", "--json")["usage"] == second["usage"]
    assert cli("state", "--store", store, "--thread", "t", "--at", "1", "--json")["usage"] == {
        "input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "model_calls": 0}



def test_state_json_counts_the_sub_agents_and_as_of_a_seq_only_what_they_had_recorded_by_then(
    tmp_path: Path,
) -> None:
    store = f"sqlite:{tmp_path / 'store.db'}"

    async def make() -> int:
        parent = Metered([{"tool_calls": [{"name": "spawn_subagent", "arguments": {"task": "count"}}]},
                          {"text": "counted"}], Usage(1000, 50, 800))
        sub = SubAgents(lambda: Metered([{"text": "1, 2, 3"}], Usage(300, 20, 100)))
        async with livecontext.open_agent(model=parent, store=store, thread="p", apps=[Notebook(), sub]) as agent:
            await agent.send("delegate it")
        async with await open_store(store) as opened:
            reader = await opened.open_reader("p")
            async with reader:
                records = await reader.read()
        # (the seq of the parent's first output: the spawn_subagent call, before the sub-agent ran)
        converter = make_converter()
        return next(r.seq for r in records if isinstance(m := converter.load_message(json.loads(r.payload)),
                                                         EntryAppended) and isinstance(m.entry, ModelOutputEntry))

    spawned_at = trio.run(make)
    whole = cli("state", "--store", store, "--thread", "p", "--json")["usage"]
    assert whole == {"input_tokens": 2300, "cached_input_tokens": 1700, "output_tokens": 120, "model_calls": 3}
    assert cli("state", "--store", store, "--thread", "p/sub/call_0_0", "--json")["usage"] == {
        "input_tokens": 300, "cached_input_tokens": 100, "output_tokens": 20, "model_calls": 1}
    then = cli("state", "--store", store, "--thread", "p", "--at", str(spawned_at), "--json")["usage"]
    assert then == {"input_tokens": 1000, "cached_input_tokens": 800, "output_tokens": 50, "model_calls": 1}
    assert cli("state", "--store", store, "--thread", "p", "--json")["sub_agents"] == ["p/sub/call_0_0"]
    readable = CliRunner().invoke(main, ["state", "--store", store, "--thread", "p"]).stdout.splitlines()
    assert "  steps: 3 model calls, 2,300 input tokens (1,700 cached), 120 output tokens (its sub-agents' included)" in readable
    assert readable[-1] == "  sub-agents: p/sub/call_0_0"

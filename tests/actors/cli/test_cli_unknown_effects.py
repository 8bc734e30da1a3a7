"""Looking into a store whose apps' effect classes this process does not know.

The store is written by another process, whose custom app lives in a module this test
process cannot import (``faraway_counter``, in a temporary folder): its effects reach the CLI
as tags it never met. Every inspection command still works, shows them as stored and names
the import that would decode them; ``render``, which must rebuild the app, says in one line
that it cannot, and works where the module can be imported.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trio
from click.testing import CliRunner

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.cli import main
from livecontext.actors.history import write_snapshot
from livecontext.protocol.agent import ProvideInput, RunUntilIdle
from livecontext.protocol.wire import make_converter, registered_type
from livecontext.runtime import open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import open_store
from livecontext.runtime.testing import actor_instance
from tests.support.agent_harness import counter
from tests.support.counter import CounterV2

FARAWAY = '''
import json
from attrs import frozen
from livecontext.actors.apps import App, ToolOutcome, tool
from livecontext.protocol.kernel import Message

@frozen
class FarAdded(Message):
    amount: int

class FarCounter(App):
    name = "far"
    effects = (FarAdded,)
    snapshot_every = 2

    def __init__(self) -> None:
        self.total = 0

    def view(self) -> str:
        return f"far total: {self.total}"

    def apply(self, effect: Message) -> None:
        if isinstance(effect, FarAdded):
            self.total += effect.amount
        else:
            super().apply(effect)

    def state_text(self) -> str:
        return json.dumps({"total": self.total})

    def load_state(self, text: str) -> None:
        self.total = json.loads(text)["total"]

    @tool(idempotent=True)
    def far_add(self, amount: int) -> ToolOutcome:
        """Add to the far total.

        Args:
            amount: How much.
        """
        return ToolOutcome.ok(f"added {amount}", effect=FarAdded(amount))
'''

WRITER = '''
import sys, trio
from faraway_counter import FarCounter
from livecontext.actors import AgentSettings, spawn_agent
from livecontext.protocol.agent import ProvideInput, RunUntilIdle
from livecontext.protocol.wire import make_converter
from livecontext.runtime import open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import open_store
from livecontext.runtime.tokens import TokenCounter

TURNS = [{"tool_calls": [{"name": "far_add", "arguments": {"amount": n}} for n in (5, 3, 4)]},
         {"text": "the far total is 12"}]

async def main(url):
    async with await open_store(url) as store, await store.open_thread("t", create=True, owner="writer") as log:
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, ScriptedModel.from_turns(TURNS), AgentSettings("t", snapshot_every=4),
                                      converter=make_converter(), counter=TokenCounter.from_env(), apps=[FarCounter()])
            client = rt.client("writer")
            await client.ask(agent.input, ProvideInput("count far"))
            await client.ask(agent.engine, RunUntilIdle(), timeout=30)
            await rt.aclose()

trio.run(main, sys.argv[1])
'''

CLI = [sys.executable, "-c", "from livecontext.actors.cli import main; main(prog_name='livecontext')"]


@pytest.fixture(scope="module")
def far_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A store written by another process with the far counter (+5, +3, +4), and the folder
    its module is in."""
    root = tmp_path_factory.mktemp("far")
    (root / "faraway_counter.py").write_text(textwrap.dedent(FARAWAY), encoding="utf-8")
    url = f"sqlite:{root / 'far.db'}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    done = subprocess.run([sys.executable, "-c", WRITER, url], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert registered_type("FarAdded") is None  # this process never met it
    return url, root


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


FAR_UNDECODED = {"app": "far", "type": "FarAdded", "source": "faraway_counter:FarAdded",
                 "decode": "import faraway_counter to decode it"}


def test_threads_history_and_state_succeed_and_show_the_unknown_effects_as_stored_naming_the_import(
        far_store: tuple[str, Path]) -> None:
    url, _ = far_store
    threads = cli("threads", "--store", url, "--json")
    assert threads.exit_code == 0, threads.stderr
    (row,) = [json.loads(line) for line in threads.stdout.splitlines()]
    assert row["thread"] == "t" and row["state"] == "WaitingInput"
    (undecoded,) = row["undecoded"]
    assert {k: undecoded[k] for k in FAR_UNDECODED} == FAR_UNDECODED
    assert undecoded["latest"] == {"type": "FarAdded", "amount": 4}  # as stored
    text = cli("threads", "--store", url)
    assert text.exit_code == 0
    assert ("  effects FarAdded of app far are not decoded here (import faraway_counter to decode it); "
            'the latest: {"amount": 4, "type": "FarAdded"}\n') in text.stdout

    history = cli("history", "--store", url, "--thread", "t", "--json")
    assert history.exit_code == 0, history.stderr
    data = json.loads(history.stdout)
    assert [e["kind"] for e in data["entries"]] == ["model_input", "model_output", "tool_results", "model_output"]
    assert data["undecoded"] == row["undecoded"]

    state = cli("state", "--store", url, "--thread", "t", "--json")
    assert state.exit_code == 0, state.stderr
    summary = json.loads(state.stdout)
    assert summary["state"] == "WaitingInput" and "far" in summary["apps"]
    assert summary["undecoded"] == row["undecoded"]
    said = ("effects FarAdded of app far are not decoded here (import faraway_counter to decode it); "
            'the latest: {"amount": 4, "type": "FarAdded"}\n')
    for command in ("history", "state"):  # the readable forms say it too
        readable = cli(command, "--store", url, "--thread", "t")
        assert readable.exit_code == 0 and readable.stdout.endswith(said), readable.stdout


def test_audit_shows_each_unknown_effect_as_stored_and_names_the_import(far_store: tuple[str, Path]) -> None:
    url, _ = far_store
    audit = cli("audit", "--store", url, "--thread", "t", "--json")
    assert audit.exit_code == 0, audit.stderr
    summaries = [json.loads(line)["summary"] for line in audit.stdout.splitlines()]
    said = [s for s in summaries if s.startswith("far_add ")]
    assert len(said) == 3
    for n, summary in zip((5, 3, 4), said, strict=True):
        assert summary.endswith(f"added {n} + effect FarAdded of app far, not decoded here (import faraway_counter "
                                f'to decode it): {{"amount":{n},"type":"FarAdded"}}')


def test_render_where_the_app_cannot_be_imported_shows_its_recorded_window_and_says_so_in_one_line(
        far_store: tuple[str, Path]) -> None:
    url, _ = far_store
    before_answer = str(json.loads(cli("state", "--store", url, "--thread", "t", "--json").stdout)["seq"] - 1)
    result = cli("render", "--store", url, "--thread", "t", "--at", before_answer)
    assert result.exit_code == 0, result.stderr
    assert any(m["content"].endswith("[Window: far]\nfar total: 12") for m in json.loads(result.stdout)["messages"])
    assert result.stderr == (
        "livecontext: note: cannot rebuild app 'far' of thread 't' from faraway_counter:FarCounter: "
        "app 'faraway_counter:FarCounter': cannot import module 'faraway_counter' (No module named "
        f"'faraway_counter'): app 'far' is shown as its window was recorded (as of seq {before_answer})\n")


def test_render_at_a_seq_shows_the_window_recorded_as_of_that_seq(far_store: tuple[str, Path]) -> None:
    url, _ = far_store
    audit = [json.loads(line) for line in cli("audit", "--store", url, "--thread", "t", "--json").stdout.splitlines()]
    first = next(line["seq"] for line in audit if line["kind"] == "AppWindowsRecorded")
    result = cli("render", "--store", url, "--thread", "t", "--at", str(first))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["messages"][-1]["content"].endswith("[Window: far]\nfar total: 0")


def test_state_shows_the_recorded_state_of_an_app_that_cannot_be_imported(far_store: tuple[str, Path]) -> None:
    url, _ = far_store
    state = cli("state", "--store", url, "--thread", "t", "--json")
    assert state.exit_code == 0, state.stderr
    assert json.loads(state.stdout)["apps"] == {"far": '{"total": 12}'}


def test_state_run_from_the_apps_folder_imports_it_and_shows_its_state_decoded(far_store: tuple[str, Path]) -> None:
    url, root = far_store
    # (-P: the current folder is not on sys.path, as for the installed `livecontext` command)
    done = subprocess.run([sys.executable, "-P", *CLI[1:], "state", "--store", url, "--thread", "t", "--json"],
                          cwd=root, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["apps"] == {"far": '{"total": 12}'} and "undecoded" not in summary


def test_render_where_the_app_can_be_imported_decodes_its_effects_and_draws_its_window(
        far_store: tuple[str, Path]) -> None:
    url, root = far_store
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    before_answer = str(json.loads(cli("state", "--store", url, "--thread", "t", "--json").stdout)["seq"] - 1)
    done = subprocess.run([*CLI, "render", "--store", url, "--thread", "t", "--at", before_answer], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert any(m["content"].endswith("[Window: far]\nfar total: 12") for m in json.loads(done.stdout)["messages"])


def test_render_of_an_app_whose_saved_state_cannot_be_loaded_replays_its_effects(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite:{tmp_path / 'v2.db'}"
    turns = [{"tool_calls": [{"name": "add", "arguments": {"amount": n}} for n in (5, 3, 4)]}]

    async def run() -> None:
        async with await open_store(url) as store, await store.open_thread("t", create=True, owner="test") as log:
            async with open_runtime() as rt:
                agent = await spawn_agent(rt, log, ScriptedModel.from_turns(turns), AgentSettings("t"),
                                          converter=make_converter(), counter=counter(),
                                          apps=[CounterV2(snapshot_every=1)])
                client = rt.client("test")
                await client.ask(agent.input, ProvideInput("count"))
                # input, model call, three tools, results: the next step would call the model
                idle = await client.ask(agent.engine, RunUntilIdle(max_steps=6), timeout=30)
                assert idle.state.value == "PendingToolResults"
                await write_snapshot(log, make_converter(), actor_instance(agent.history).state)  # the saved state in the thread's snapshot
                await rt.aclose()

    trio.run(run)
    with caplog.at_level(logging.WARNING, logger="livecontext.apps"):
        result = cli("render", "--store", url, "--thread", "t")
    assert result.exit_code == 0, result.stderr
    assert any(m["content"].endswith("[Window: counter]\ntotal: 12") for m in json.loads(result.stdout)["messages"])
    assert [r.getMessage() for r in caplog.records] == [
        "thread t: app 'counter' cannot load its state saved as of its effect 3 (AppStateError: counter state "
        "'{\"version\": 1, \"total\": 12}' is not version 2: this release reads version 2 only); rebuilding it "
        "from every effect it committed"]

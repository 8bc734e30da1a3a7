"""``livecontext render``: what the model got, rebuilt from the log at any seq."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from click.testing import CliRunner

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.apps import Notebook
from livecontext.actors.cli import main
from livecontext.actors.agent._format import chat_json, tool_json
from livecontext.protocol.agent import BeforeModelCall, ProvideInput, RunUntilIdle
from livecontext.protocol.history import Retention
from livecontext.protocol.wire import make_converter
from livecontext.runtime import open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import open_store
from tests.support.agent_harness import ProbeApp, ProbeModel, counter

TASK = "Keep a plan in the notebook: requirements, a design, then a review. " * 3


def edit(k: int) -> dict[str, Any]:
    """A notebook edit that changes the window, and says a little about it."""
    return {"text": f"Step {k}: noting item {k} in the plan. " + "Some reasoning about it. " * 6,
            "tool_calls": [{"name": "notebook_replace" if k else "notebook_replace",
                            "arguments": {"old_text": "" if k == 0 else f"- item {k - 1}",
                                          "new_text": f"- item {k - 1}\n- item {k}" if k else "- item 0"}},
                           {"name": "record", "arguments": {"label": f"label {k} " * 30}}]}


def render(store: str, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["render", "--store", store, "--thread", "t", "--json", *args],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


async def recorded_run(store_url: str, budget: int) -> tuple[ProbeModel, list[BeforeModelCall]]:
    """An agent with a notebook and a probe app, its contexts tight enough to leave things out."""
    turns = [edit(k) for k in range(10)] + [{"text": "The plan is ready."}, {"text": "Noted."}]
    model = ProbeModel(ScriptedModel.from_turns(turns))
    events: list[BeforeModelCall] = []
    async with await open_store(store_url) as store, await store.open_thread("t", create=True, owner="test") as log:
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, model, AgentSettings("t", budget=budget), converter=make_converter(),
                                      counter=counter(), apps=[Notebook(), ProbeApp()])
            async with rt.open_subscription(agent.events, buffer=1024) as sub:
                client = rt.client("test")
                await client.ask(agent.input, ProvideInput(TASK))
                await client.ask(agent.input, ProvideInput("mind the deadline", Retention.CRITICAL))
                await client.ask(agent.engine, RunUntilIdle(), timeout=30)
                while True:
                    try:
                        payload = sub.receive_nowait().payload
                    except Exception:  # noqa: BLE001 - nothing left to read
                        break
                    if isinstance(payload, BeforeModelCall):
                        events.append(payload)
            await rt.aclose()
    return model, events


def output_seqs(store: str) -> list[int]:
    result = CliRunner().invoke(main, ["audit", "--store", store, "--thread", "t", "--json"], catch_exceptions=False)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    return [r["seq"] for r in records if r["kind"] == "EntryAppended" and "ModelOutputEntry" in r["summary"]]


@pytest.mark.parametrize("backend", ["sqlite", "jsonl"])
def test_render_at_the_seq_before_each_answer_gives_exactly_what_the_model_was_sent(
        backend: str, tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'r.db'}" if backend == "sqlite" else f"jsonl:{tmp_path / 'r'}"
    model, events = trio.run(recorded_run, store, 1600)
    seqs = output_seqs(store)
    assert len(seqs) == len(model.requests) == len(events) == 12
    shown_levels = set()
    for request, event, seq in zip(model.requests, events, seqs, strict=True):
        got = render(store, "--at", str(seq - 1))  # the state the model call was rendered from
        assert got["messages"] == [chat_json(m) for m in request.messages]
        assert got["tools"] == [tool_json(t) for t in request.tools]
        assert got["tokens"] == event.tokens and got["budget"] == event.budget == 1600
        levels = {e["id"]: e["level"] for e in got["entries"]}
        for span in event.spans:
            first, last = int(span.first[1:]), int(span.last[1:])
            assert {levels[i] for i in levels if first <= int(i[1:]) <= last} == {span.shown.value}
        shown_levels |= set(levels.values())
    assert {"live", "recent", "gist", "omitted"} <= shown_levels  # a tight budget: every way of showing
    # the notebook's window is rebuilt from the log: the last request's shows the last edit
    assert "- item 8" in request.messages[-1].content and "[Window: probe]" in request.messages[-1].content


def test_render_defaults_to_the_threads_own_budget_and_state_lists_only_its_apps(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'r.db'}"
    trio.run(recorded_run, store, 1600)
    now = render(store)
    assert now["budget"] == 1600 and now["tokens"] <= 1600
    history = CliRunner().invoke(main, ["history", "--store", store, "--thread", "t", "--json"], catch_exceptions=False)
    pinned = [e["id"] for e in json.loads(history.stdout)["entries"] if e["retention"] == "critical"]
    levels = {e["id"]: e["level"] for e in now["entries"]}
    # the task, at RECENT; the note, whole: the stable policy sends what came after its last compaction as it was
    assert len(pinned) == 2 and [levels[i] for i in pinned] == ["recent", "live"]
    bigger = render(store, "--budget", "50000")
    assert bigger["budget"] == 50000 and "omitted" not in [e["level"] for e in bigger["entries"]]
    result = CliRunner().invoke(main, ["state", "--store", store, "--thread", "t", "--json"], catch_exceptions=False)
    assert set(json.loads(result.stdout)["apps"]) == {"notebook", "probe"}


def test_a_thread_without_a_notebook_shows_no_notebook(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'p.db'}"

    async def run() -> None:
        model = ScriptedModel.from_turns([{"text": "hi"}])
        async with await open_store(store) as opened, await opened.open_thread("t", create=True, owner="test") as log:
            async with open_runtime() as rt:
                agent = await spawn_agent(rt, log, model, AgentSettings("t"), converter=make_converter(),
                                          counter=counter(), apps=[ProbeApp()])
                client = rt.client("test")
                await client.ask(agent.input, ProvideInput("hello"))
                await client.ask(agent.engine, RunUntilIdle(), timeout=30)
                await rt.aclose()

    trio.run(run)
    got = render(store, "--at", str(output_seqs(store)[0] - 1))  # as the model call saw it
    assert "[Window: probe]\nPROBE-WINDOW" in got["messages"][-1]["content"]
    assert "notebook" not in json.dumps(got["messages"])  # not even the default system prompt speaks of it
    result = CliRunner().invoke(main, ["state", "--store", store, "--thread", "t", "--json"], catch_exceptions=False)
    assert json.loads(result.stdout)["apps"] == {"probe": "PROBE-WINDOW"}  # its state: its view (it saves none)


def ghost_thread(store: str, *, call_model: bool) -> str:
    """A thread of an app whose class cannot be imported again by its name; returns it."""
    class Ghost(ProbeApp):  # a class defined here cannot be imported again by its name
        name = "ghost"

    async def run() -> None:
        model = ScriptedModel.from_turns([{"text": "hi"}])
        async with await open_store(store) as opened, await opened.open_thread("t", create=True, owner="test") as log:
            async with open_runtime() as rt:
                agent = await spawn_agent(rt, log, model, AgentSettings("t"), converter=make_converter(),
                                          counter=counter(), apps=[Ghost()])
                client = rt.client("test")
                if call_model:
                    await client.ask(agent.input, ProvideInput("hello"))
                    await client.ask(agent.engine, RunUntilIdle(), timeout=30)
                await rt.aclose()

    trio.run(run)
    return f"{Ghost.__module__}:ghost_thread.<locals>.Ghost"


def test_render_says_which_app_it_cannot_rebuild_and_why_when_no_window_of_it_was_recorded(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'g.db'}"
    source = ghost_thread(store, call_model=False)  # (no model call: no window recorded)
    result = CliRunner().invoke(main, ["render", "--store", store, "--thread", "t"])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(
        f"livecontext: error: cannot rebuild app 'ghost' of thread 't' from {source}: app '{source}': "
        f"module '{source.partition(':')[0]}' has no ")
    assert result.stderr.rstrip().endswith("run this where that class can be imported (from the folder the "
                                           "agent ran in, or with its package installed)")
    assert len(result.stderr.splitlines()) == 1


def test_render_of_an_app_that_cannot_be_rebuilt_shows_its_recorded_window_and_says_so(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'g.db'}"
    source = ghost_thread(store, call_model=True)
    result = CliRunner().invoke(main, ["render", "--store", store, "--thread", "t"])
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["messages"][-1]["content"].endswith("[Window: ghost]\nPROBE-WINDOW")
    assert result.stderr.startswith(f"livecontext: note: cannot rebuild app 'ghost' of thread 't' from {source}: ")
    assert result.stderr.rstrip().endswith("app 'ghost' is shown as its window was recorded (as of seq 5)")
    assert got["notes"] == [result.stderr.removeprefix("livecontext: note: ").rstrip()]


SCRIPT = '''
import sys, trio, livecontext

@livecontext.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b

async def main() -> None:
    async with livecontext.open_agent(tools=[add], model="echo", store=sys.argv[1]) as agent:
        await agent.send("add 2 and 3")

trio.run(main)
'''


def test_a_thread_whose_tools_a_script_defined_renders_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    store = f"sqlite:{tmp_path / 's.db'}"
    done = subprocess.run([sys.executable, str(tmp_path / "script.py"), store], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = CliRunner().invoke(main, ["render", "--store", store, "--thread", "main"])
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    assert "add" in [t["name"] for t in got["tools"]]
    assert "echo: add 2 and 3" in [m["content"] for m in got["messages"]]

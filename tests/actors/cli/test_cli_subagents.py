"""Sub-agents from the command line: ``run --app subagents``, ``[[apps]] use = "subagents"`` in a
blueprint, a sub-agent's thread only made by its parent, and the JSON of a sub-agent's state.

In-process, through click's runner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from click.testing import CliRunner, Result

from livecontext import open_agent
from livecontext.actors.cli import main

SPAWN = {"tool_calls": [{"name": "spawn_subagent", "arguments": {"task": "count to three"}}]}
PARENT = {"turns": [SPAWN, {"text": "the parent carries on"}]}


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def threads(store: str) -> list[str]:
    return [line.split()[0] for line in cli("threads", "--store", store).stdout.splitlines()]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "parent.json").write_text(json.dumps(PARENT))
    return tmp_path


def test_run_app_subagents_gives_the_agent_spawn_subagent_on_its_own_model(folder: Path) -> None:
    ran = cli("run", "--store", "sqlite:s.db", "--model", "echo", "--app", "subagents", "--input", "hi", "--json")
    assert ran.exit_code == 0, ran.stderr
    assert "subagents" in json.loads(ran.stdout)["apps"]
    # (a scripted parent: its sub-agent shares its model, and so its script, call by call)
    (folder / "both.json").write_text(json.dumps({"turns": [SPAWN, {"text": "three"}]}))
    ran = cli("run", "--store", "sqlite:t.db", "--model", "scripted:both.json", "--app", "subagents",
              "--input", "delegate it", "--json")
    assert ran.exit_code == 0, ran.stderr
    results = [r for e in json.loads(ran.stdout)["entries"] for r in e.get("results", [])]
    assert [(r["name"], r["status"], r["content"]) for r in results] == [("spawn_subagent", "ok", "three")]
    assert threads("sqlite:t.db") == ["main", "main/sub/call_0_0"]


def test_a_blueprint_switches_sub_agents_on_with_their_model_taken_from_its_folder(folder: Path) -> None:
    (folder / "bp").mkdir()
    (folder / "bp" / "sub.json").write_text(json.dumps({"turns": [{"text": "one, two, three"}]}))
    (folder / "bp" / "parent.json").write_text(json.dumps(PARENT))
    (folder / "bp" / "agent.toml").write_text('model = "scripted:parent.json"\n\n[[apps]]\nuse = "notebook"\n\n'
                                              '[[apps]]\nuse = "subagents"\noptions = { model = "scripted:sub.json", '
                                              'timeout_s = 30 }\n')
    ran = cli("run", "bp/agent.toml", "--store", "sqlite:s.db", "--input", "delegate it", "--json")
    assert ran.exit_code == 0, ran.stderr
    results = [r for e in json.loads(ran.stdout)["entries"] for r in e.get("results", [])]
    assert [(r["name"], r["content"]) for r in results] == [("spawn_subagent", "one, two, three")]
    # (resumed without the blueprint, the thread makes its sub-agents again as it recorded them)
    (folder / "parent.json").write_text(json.dumps({"turns": [SPAWN, {"text": "done"}, SPAWN, {"text": "again"}]}))
    (folder / "bp" / "sub.json").write_text(json.dumps({"turns": [{"text": "four"}]}))
    again = cli("run", "--store", "sqlite:s.db", "--model", "scripted:parent.json", "--input", "once more", "--json")
    assert again.exit_code == 0, again.stderr
    results = [r for e in json.loads(again.stdout)["entries"] for r in e.get("results", [])]
    assert [r["content"] for r in results] == ["one, two, three", "four"]


def test_a_blueprint_whose_sub_agents_name_no_model_is_one_line_naming_the_key(folder: Path) -> None:
    (folder / "agent.toml").write_text('[[apps]]\nuse = "subagents"\noptions = { model = "gpt-4" }\n')
    ran = cli("run", "agent.toml", "--store", "sqlite:s.db")
    assert ran.exit_code == 1
    assert ran.stderr.startswith("livecontext: error: agent.toml:3: [[apps]] #1 subagents options: unknown model "
                                 "spec 'gpt-4': use one of echo, scripted:PATH, openai:MODEL"), ran.stderr
    assert ran.stderr.count("\n") == 1
    assert not (folder / "s.db").exists()


@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_sub_agent_thread_whose_parent_never_made_it_is_refused_and_not_made(folder: Path, command: str) -> None:
    assert cli("run", "--store", "sqlite:s.db", "--input", "hi").exit_code == 0  # (thread main, no sub-agent)
    ran = CliRunner().invoke(main, [command, "--store", "sqlite:s.db", "--thread", "main/sub/y", "--input", "hi"]
                             if command == "run" else [command, "--store", "sqlite:s.db", "--thread", "main/sub/y"],
                             input="hi\n")
    assert ran.exit_code == 1
    assert ran.stderr == ("livecontext: error: thread main/sub/y would be a sub-agent of main, which has no such "
                          "sub-agent: a sub-agent's thread is made by its parent (spawn_subagent); run main, or "
                          "give a thread id without /sub/\n")
    assert threads("sqlite:s.db") == ["main"]


SUB_ENDS = {
    "answered": [{"text": "one, two, three"}],
    "failed": [],  # (its model has no turn: the step fails)
    "waiting": [{"tool_calls": [{"name": "wait_user_response", "arguments": {"question": "Count what?"}}]}],
    "completed": [{"tool_calls": [{"name": "task_complete", "arguments": {"result": "counted"}}]}],
}


@pytest.mark.parametrize("end", sorted(SUB_ENDS))
def test_the_json_of_a_sub_agents_state_is_printed_whatever_way_it_ended(folder: Path, end: str) -> None:
    (folder / "sub.json").write_text(json.dumps({"turns": SUB_ENDS[end]}))
    (folder / "agent.toml").write_text('model = "scripted:parent.json"\n\n[[apps]]\nuse = "subagents"\n'
                                       'options = { model = "scripted:sub.json" }\n')
    assert cli("run", "agent.toml", "--store", "sqlite:s.db", "--input", "delegate it").exit_code == 0
    sub = "main/sub/call_0_0"
    state = cli("state", "--store", "sqlite:s.db", "--thread", sub, "--json")
    assert state.exit_code == 0, state.stderr
    shown = json.loads(state.stdout)
    assert shown["status"] == {"answered": "waiting_user", "failed": "failed", "waiting": "waiting_user",
                               "completed": "completed"}[end]

    async def library() -> dict[str, Any]:
        async with open_agent(store="sqlite:s.db", thread=sub, model="echo") as agent:
            return (await agent.state()).json()
    data = trio.run(library)
    assert json.loads(json.dumps(data)) == data
    assert {key: data[key] for key in ("state", "status", "entries", "apps", "usage")} == {
        key: shown[key] for key in ("state", "status", "entries", "apps", "usage")}
    ran = cli("run", "--store", "sqlite:s.db", "--thread", sub, "--model", "echo", "--json")  # (it goes on)
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout)["thread"] == sub


def test_the_one_encoder_turns_enums_and_attrs_values_into_json_data() -> None:
    from livecontext.actors.agent._format import json_data
    from livecontext.protocol.agent import Idle, IdleReason
    from livecontext.protocol.history import EngineState

    idle = Idle(EngineState.WAITING_INPUT, 2, IdleReason.CANCELLED)
    data = json_data({"idle": idle, "reason": IdleReason.PAUSED, "states": (EngineState.PENDING_INPUT,)})
    assert json.loads(json.dumps(data)) == data
    assert data["reason"] == "paused" and data["states"] == ["PendingInput"]
    assert data["idle"]["reason"] == "cancelled" and data["idle"]["state"] == "WaitingInput"

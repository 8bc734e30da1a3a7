"""``livecontext run SYSTEM.toml``: the team example runs offline, --json has one object per
agent, --input NAME=TEXT feeds one agent, and a wrong flag is one line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from livecontext.actors.blueprint import load_system_blueprint
from livecontext.actors.cli import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def run(*args: str) -> Any:
    result = CliRunner().invoke(main, ["run", *args], catch_exceptions=False)
    return result


def run_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def answers(agent: dict[str, Any]) -> list[str]:
    return [e["levels"]["live"] for e in agent["entries"] if e["kind"] == "model_output"]


def test_the_team_example_runs_offline_in_a_subprocess_and_prints_who_did_what() -> None:
    done = subprocess.run([sys.executable, "-c", "from livecontext.actors.cli import main; main()", "run",
                           str(EXAMPLES / "team.toml"), "--store", "memory:"],
                          capture_output=True, text=True, check=False, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    out = re.sub(r"\s+", " ", done.stdout)
    assert "app/team.planner notifies (n1): planner asks: What should three days in Lisbon include?" in out
    assert "model/team.researcher 1. Alfama and the Sao Jorge castle" in out
    assert "app/team.planner ok: critic answered: Take the 9:00 train to Sintra" in out
    assert "planner (thread team.planner) is waiting_user: 10 entries" in out


def test_run_json_prints_the_system_and_each_agents_thread_state_status_entries_and_apps() -> None:
    data = run_json(str(EXAMPLES / "team.toml"), "--store", "memory:")
    assert data["system"] == "team"
    assert [sorted(a) for a in data["agents"]] == [["apps", "entries", "name", "state", "status", "thread", "usage"]] * 3
    rows = [(a["name"], a["thread"], a["state"], a["status"], len(a["entries"])) for a in data["agents"]]
    assert rows == [("planner", "team.planner", "WaitingInput", "waiting_user", 10),
                    ("researcher", "team.researcher", "WaitingInput", "waiting_user", 2),
                    ("critic", "team.critic", "WaitingInput", "waiting_user", 2)]
    planner, researcher, critic = data["agents"]
    assert answers(planner)[-1].startswith("The plan is in my notebook")
    assert planner["apps"]["notebook"].startswith("Lisbon, three days")
    assert researcher["apps"] == {"messaging": ""}  # the example turns its notebook off
    assert answers(critic) == ["Take the 9:00 train to Sintra: the palaces fill up by noon. Add fado in Alfama on day 1."]


def test_run_json_gives_each_agents_usage_and_the_systems_total_as_state_json_reads_them(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'team.db'}"
    data = run_json(str(EXAMPLES / "team.toml"), "--store", store)
    usages = [a["usage"] for a in data["agents"]]
    # (offline models: the rendered counts, one call per model output)
    assert [u["model_calls"] for u in usages] == [len(answers_and_calls(a)) for a in data["agents"]]
    assert all(u["input_tokens"] > 0 and u["output_tokens"] > 0 and u["cached_input_tokens"] == 0 for u in usages)
    assert data["usage"] == {key: sum(u[key] for u in usages) for key in usages[0]}
    for agent in data["agents"]:
        state = CliRunner().invoke(main, ["state", "--store", store, "--thread", agent["thread"], "--json"])
        assert state.exit_code == 0, state.stderr
        assert json.loads(state.stdout)["usage"] == agent["usage"]


def answers_and_calls(agent: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in agent["entries"] if e["kind"] == "model_output"]


def test_input_name_equals_text_feeds_that_agent_only(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "team", tmp_path / "team")
    shutil.copy(EXAMPLES / "team.toml", tmp_path / "team.toml")
    data = run_json(str(tmp_path / "team.toml"), "--store", "memory:", "--input", "critic=Is a week too long?")
    planner, researcher, critic = data["agents"]
    assert (len(planner["entries"]), len(researcher["entries"])) == (0, 0)  # its inputs were replaced
    assert [e["levels"]["live"] for e in critic["entries"] if e["kind"] == "model_input"] == ["Is a week too long?"]
    assert critic["status"] == "waiting_user"


def test_a_system_blueprint_resumes_its_threads_from_a_durable_store(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'team.db'}"
    run_json(str(EXAMPLES / "team.toml"), "--store", store)
    again = run_json(str(EXAMPLES / "team.toml"), "--store", store, "--input", "critic=And a week?")
    planner, _, critic = again["agents"]
    assert len(planner["entries"]) == 10  # kept, not run again
    assert [e["levels"]["live"] for e in critic["entries"] if e["kind"] == "model_input"][-1] == "And a week?"
    threads = CliRunner().invoke(main, ["threads", "--store", store, "--json"], catch_exceptions=False)
    assert [json.loads(line)["thread"] for line in threads.stdout.splitlines()] == [
        "system:team", "team.critic", "team.planner", "team.researcher"]  # (system:team: the system's own log)
    # what a system's agent was sent renders from the store alone, its messaging app included
    shown = CliRunner().invoke(main, ["render", "--store", store, "--thread", "team.critic"], catch_exceptions=False)
    rendered = json.loads(shown.stdout)
    assert [t["name"] for t in rendered["tools"]] == ["send_message", "ask_agent", "task_complete", "task_abandon",
                                                      "output", "wait_user_response"]
    assert rendered["messages"][0]["content"].endswith(
        "- planner: plans the trip; asks the others\n- researcher: knows places: what to see, how long it takes")


@pytest.mark.parametrize("args, message", [
    (["--input", "nobody=hi"], "no agent named 'nobody' in system 'team'; the agents there are: planner, researcher, critic"),
    (["--input", "just text"], "--input 'just text': a system's inputs are NAME=TEXT, NAME one of its agents: planner, researcher, critic"),
    (["--model", "echo"], "--model describes one agent; {path} is a system of agents: set it in each [[agents]] table"),
    (["--thread", "x"], "--thread describes one agent; {path} is a system of agents: set it in each [[agents]] table"),
])
def test_a_wrong_flag_for_a_system_is_one_line_and_exit_1(args: list[str], message: str) -> None:
    path = str(EXAMPLES / "team.toml")
    result = run(path, "--store", "memory:", *args)
    assert result.exit_code == 1
    assert result.stderr == f"livecontext: error: {message.format(path=path)}\n"


def test_a_name_used_twice_in_a_system_blueprint_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "twice.toml"
    path.write_text('[[agents]]\nname = "a"\n\n[[agents]]\nname = "a"\n', encoding="utf-8")
    result = run(str(path), "--store", "memory:")
    assert result.exit_code == 1
    assert result.stderr == (f"livecontext: error: {path}:5: [[agents]] name 'a' is used twice: [[agents]] #1 "
                             "(line 2) and #2 (line 5); give each agent its own name\n")


def test_the_openai_team_example_describes_the_same_team_with_openai_models() -> None:
    offline = load_system_blueprint(EXAMPLES / "team.toml")
    online = load_system_blueprint(EXAMPLES / "team-openai.toml")
    assert (online.name, online.names) == (offline.name, offline.names)
    assert all(a.blueprint.model.startswith("openai:") for a in online.agents)
    assert [a.description for a in online.agents] == [a.description for a in offline.agents]

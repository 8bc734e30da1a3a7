"""System blueprints: several [[agents]], their keys checked as a one-agent blueprint's, errors
pointing into the right agent's table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from livecontext.actors.blueprint import (
    Blueprint,
    BlueprintError,
    SystemBlueprint,
    load_any_blueprint,
    load_blueprint,
    load_system_blueprint,
)
from livecontext.actors.blueprint._schema import AgentTable, BlueprintFile


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def load(text: str, name: str = "team.toml") -> SystemBlueprint:
    Path(name).write_text(text, encoding="utf-8")
    return load_system_blueprint(name)


TEAM = '''\
store = "sqlite:runs/team.db"
ask_timeout_s = 30

[[agents]]
name = "planner"
inputs = ["Plan it."]
max_steps = 12

[[agents]]
name = "researcher"
description = "finds facts"
thread = "research"
system_prompt = "You find facts."
budget = 4000

[agents.limits]
max_entries = 20

[[agents.analyzers]]
name = "failures"
'''


async def test_each_agent_table_becomes_a_one_agent_blueprint_in_one_store() -> None:
    bp = load(TEAM)
    assert (bp.name, bp.names, bp.ask_timeout_s) == ("team", ("planner", "researcher"), 30.0)
    assert bp.store == f"sqlite:{Path.cwd() / 'runs' / 'team.db'}"
    planner, researcher = bp.agents
    assert (planner.blueprint.settings.thread_id, planner.blueprint.inputs, planner.blueprint.max_steps) == (
        "team.planner", ("Plan it.",), 12)
    assert planner.blueprint.store is None  # the agents share the system's
    assert (researcher.blueprint.settings.thread_id, researcher.description) == ("research", "finds facts")
    assert researcher.blueprint.settings.budget == 4000
    assert researcher.blueprint.settings.limits is not None and researcher.blueprint.settings.limits.max_entries == 20
    assert [a.name for a in researcher.blueprint.settings.analyzers] == ["failures"]
    assert planner.blueprint.settings.limits is None and planner.blueprint.settings.analyzers == ()


async def test_an_agent_name_used_twice_is_one_line_naming_it_and_both_places() -> None:
    text = '[[agents]]\nname = "a"\n\n[[agents]]\nname = "researcher"\n\n[[agents]]\nname = "researcher"\n'
    with pytest.raises(BlueprintError, match=exactly(
            "team.toml:8: [[agents]] name 'researcher' is used twice: [[agents]] #2 (line 5) and #3 (line 8); "
            "give each agent its own name")) as info:
        load(text)
    assert info.value.key == "agents[2].name"


async def test_an_error_in_an_agents_own_table_points_at_its_line_and_names_the_agent() -> None:
    text = TEAM.replace("max_entries = 20", "max_entries = 20\nhard = 0.1")
    with pytest.raises(BlueprintError, match=exactly(
            "team.toml:18: [[agents]] #2 [limits] hard must be >= soft (0.6), got 0.1")) as info:
        load(text)
    assert info.value.key == "agents[1].limits.hard"


async def test_an_unknown_key_in_an_agent_table_lists_the_keys_an_agent_takes() -> None:
    with pytest.raises(BlueprintError, match=r"^team\.toml:3: unknown key 'store' in \[\[agents\]\] #1; known keys: system_prompt, model, budget, "
                       r".*, \[\[analyzers\]\], approval, approval_policy, name, description, thread$"):
        load('[[agents]]\nname = "a"\nstore = "memory:"\n')


async def test_a_bad_value_in_an_agents_analyzer_names_the_agent_and_the_analyzer() -> None:
    text = TEAM.replace('name = "failures"', 'name = "failures"\nkind = "usual"')
    with pytest.raises(BlueprintError, match=exactly(
            "team.toml:21: [[agents]] #2 [[analyzers]] #1 kind must be one of repeated_failures, model, usage, got 'usual'")):
        load(text)


async def test_a_key_of_one_agent_at_the_top_level_of_a_system_is_refused_on_its_line() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "team.toml:1: model is set at the top level of a system blueprint; put it in each [[agents]] "
            "table (the top level holds system, store, ask_timeout_s, spend, agents)")):
        load('model = "echo"\n\n[[agents]]\nname = "a"\n')


async def test_system_keys_without_agents_are_refused() -> None:
    Path("one.toml").write_text('thread = "t"\nask_timeout_s = 10\n', encoding="utf-8")
    with pytest.raises(BlueprintError, match=r"^one\.toml:2: ask_timeout_s is only used by a system blueprint"):
        load_blueprint("one.toml")


async def test_a_file_loaded_as_the_other_kind_says_which_loader_to_use() -> None:
    Path("team.toml").write_text('[[agents]]\nname = "a"\n', encoding="utf-8")
    Path("one.toml").write_text('thread = "t"\n', encoding="utf-8")
    with pytest.raises(BlueprintError, match=r"^team\.toml:1: describes a system of agents \(\[\[agents\]\]\): load it with load_system_blueprint"):
        load_blueprint("team.toml")
    with pytest.raises(BlueprintError, match=r"^one\.toml: has no \[\[agents\]\] table"):
        load_system_blueprint("one.toml")
    assert isinstance(load_any_blueprint("team.toml"), SystemBlueprint)
    assert isinstance(load_any_blueprint("one.toml"), Blueprint)


async def test_a_file_name_that_cannot_name_the_system_asks_for_a_system_key() -> None:
    with pytest.raises(BlueprintError, match=r"^my team\.toml:\d+: the file's name 'my team' cannot name the system: add system"):
        load('[[agents]]\nname = "a"\n', name="my team.toml")
    assert load('system = "ours"\n[[agents]]\nname = "a"\n', name="my team.toml").name == "ours"


async def test_an_agent_table_takes_every_key_an_agent_takes_at_the_top_level_but_the_store() -> None:
    system_only = {"store", "system", "ask_timeout_s", "spend", "agents"}  # ([spend]: the whole system's)
    assert set(AgentTable.model_fields) == set(BlueprintFile.model_fields) - system_only | {"name", "description"}


async def test_an_agents_apps_and_tools_are_its_own_and_their_errors_point_into_its_table() -> None:
    bp = load('[[agents]]\nname = "a"\n[agents.apps]\nnotebook = false\n\n[[agents]]\nname = "b"\n')
    assert [[use.use for use in a.blueprint.apps] for a in bp.agents] == [[], ["notebook"]]
    text = '[[agents]]\nname = "a"\n\n[[agents]]\nname = "b"\n\n[[agents.apps]]\nuse = "notebook"\n\n[[agents.tools]]\nuse = "nowhere_mod:fn"\n'
    with pytest.raises(BlueprintError, match=r"^team\.toml:11: \[\[agents\]\] #2 \[\[tools\]\] #1 tool 'nowhere_mod:fn': cannot import module 'nowhere_mod'") as info:
        load(text)
    assert info.value.key == "agents[1].tools[0].use"
    with pytest.raises(BlueprintError, match=exactly("team.toml:4: [[agents]] #1 [apps] notebook must be true or false, got an integer 3")):
        load('[[agents]]\nname = "a"\n[agents.apps]\nnotebook = 3\n')

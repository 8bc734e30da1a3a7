"""One way to build an agent: ``livecontext run``, ``open_agent`` and the batch runner make one
:class:`AgentSpec` from a blueprint and open it with ``open_agent_from``; a bad value of it is
one error line naming the field."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from click.testing import CliRunner

import livecontext
from livecontext import AgentSpec, UsageError
from livecontext.actors.agent._session import recorded_config
from livecontext.actors.batch._batch import BatchTask, run_task
from livecontext.actors.blueprint import load_blueprint
from livecontext.actors.cli import main
from livecontext.actors.front import agent_spec
from livecontext.actors.history import HistoryLimits
from livecontext.protocol.records import ThreadConfigured
from livecontext.runtime.persistence import open_store

EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The offline example blueprint (budget 4000, a recap, two analyzers, a script), in a
    folder of its own."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "offline.toml", tmp_path / "offline.toml")
    shutil.copy(EXAMPLES / "offline_script.json", tmp_path / "offline_script.json")
    return tmp_path / "offline.toml"


class Opened(Exception):
    """Raised by the stand-in for ``open_agent_from`` once it has the spec."""


def capture(monkeypatch: pytest.MonkeyPatch) -> list[AgentSpec]:
    """The specs every caller opens, in order (each caller stops there: nothing runs)."""
    specs: list[AgentSpec] = []

    @asynccontextmanager
    async def taken(spec: AgentSpec, **_: Any) -> AsyncIterator[None]:
        specs.append(spec)
        raise Opened
        yield  # pragma: no cover

    monkeypatch.setattr("livecontext.actors.front._front.open_agent_from", taken)
    monkeypatch.setattr("livecontext.actors.cli._commands_agent.open_agent_from", taken)
    return specs


def same_place(spec: AgentSpec) -> AgentSpec:
    """``spec`` on one thread of one store (the callers below are told different ones)."""
    return attrs.evolve(spec, thread="x", store=None)


def test_a_blueprint_given_to_run_to_open_agent_and_to_a_batch_task_is_one_and_the_same_spec(
        offline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs = capture(monkeypatch)
    bp = load_blueprint(offline)
    store = f"sqlite:{offline.parent / 'lc.db'}"
    CliRunner().invoke(main, ["run", str(offline), "--store", store])

    async def the_others() -> None:
        with pytest.raises(Opened):
            async with livecontext.open_agent(blueprint=offline, store=store):
                pass
        async with await open_store(store) as opened:
            result = await run_task(bp, BatchTask("t1", bp.inputs), "b/t1", opened)
        assert result.error == "Opened: "

    trio.run(the_others)
    run_spec, front_spec, batch_spec = specs
    assert same_place(run_spec) == same_place(front_spec) == same_place(batch_spec)
    assert same_place(run_spec) == same_place(AgentSpec.from_blueprint(bp))
    assert (run_spec.budget, run_spec.model) == (4000, bp.model)
    assert (run_spec.thread, batch_spec.thread) == ("lake-trip", "b/t1")


def test_a_flag_and_a_keyword_that_change_a_blueprints_budget_make_the_same_spec_said_by_their_own_name(
        offline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs = capture(monkeypatch)
    CliRunner().invoke(main, ["run", str(offline), "--budget", "6000"])

    async def front() -> None:
        with pytest.raises(Opened):
            async with livecontext.open_agent(blueprint=offline, budget=6000):
                pass

    trio.run(front)
    run_spec, front_spec = specs
    assert same_place(run_spec) == same_place(front_spec) and run_spec.budget == 6000
    assert (run_spec.label("budget"), front_spec.label("budget")) == ("--budget", "budget=")
    assert run_spec.label("recap") == front_spec.label("recap") == f"blueprint {offline}"


def test_the_three_callers_record_the_same_settings_for_the_same_blueprint(offline: Path) -> None:
    store = f"sqlite:{offline.parent / 'lc.db'}"
    result = CliRunner().invoke(main, ["run", str(offline), "--store", store])
    assert result.exit_code == 0, result.stderr
    bp = load_blueprint(offline)

    async def the_others() -> tuple[ThreadConfigured | None, ...]:
        async with livecontext.open_agent(blueprint=offline, store=store, thread="front") as agent:
            await agent.run()
        async with await open_store(store) as opened:
            done = await run_task(bp, BatchTask("t1", bp.inputs), "b/t1", opened)
        assert done.error is None
        return tuple([await recorded_config(store, t) for t in ("lake-trip", "front", "b/t1")])

    by_run, by_front, by_batch = trio.run(the_others)
    assert by_run is not None and by_run.settings is not None and by_run.budget == 4000
    assert by_run == by_front == by_batch


def test_open_agents_keywords_map_onto_the_spec_and_none_turns_a_setting_off() -> None:
    made = agent_spec(AgentSpec(), thread="t", budget=4000, recap=None, limits=HistoryLimits(max_entries=9),
                      inputs=["hi"], pin_task=False)
    assert made == AgentSpec(thread="t", budget=4000, recap=None, limits=HistoryLimits(max_entries=9),
                             inputs=("hi",), pin_task=False)
    assert agent_spec(AgentSpec()) == AgentSpec()  # (nothing given: every setting left to the thread)
    assert made.label("budget") == "budget="


async def test_a_spec_given_to_open_agent_opens_the_agent_and_keywords_override_it() -> None:
    spec = AgentSpec(model="echo", budget=3000, inputs=("hello",))
    async with livecontext.open_agent(spec=spec, budget=5000) as agent:
        reply = await agent.run()
        config = await recorded_config(agent.store, agent.thread)
    assert reply.text == "echo: hello"
    assert config is not None and config.budget == 5000


async def test_a_spec_and_a_blueprint_together_are_refused_in_one_line(offline: Path) -> None:
    with pytest.raises(UsageError, match=r"^open_agent takes a blueprint or a spec, not both: give one$"):
        async with livecontext.open_agent(blueprint=offline, spec=AgentSpec()):
            pass


@pytest.mark.parametrize(("values", "message"), [
    ({"budget": 0}, "budget must be >= 1, got 0"),
    ({"budget": "8000"}, "budget must be >= 1, got '8000'"),
    ({"max_steps": 0}, "max_steps must be >= 1, got 0"),
    ({"snapshot_every": -1}, "snapshot_every must be >= 0, got -1"),
    ({"limits": 9}, "limits must be HistoryLimits, got int 9"),
    ({"pin_task": "yes"}, "pin_task must be True or False, got str 'yes'"),
    ({"model": 3}, "model must be a model spec (echo, scripted:PATH, openai:MODEL) or a ModelClient, got int 3"),
    ({"inputs": [b"hi"]}, "inputs must be a list of texts, got bytes b'hi'"),
])
def test_a_bad_value_is_one_error_line_naming_the_field(values: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        AgentSpec(**values)  # type: ignore[arg-type]
    assert str(caught.value) == message


async def test_a_bad_keyword_of_open_agent_is_the_same_line_and_opens_nothing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^pin_task must be True or False, got str 'yes'$"):
        async with livecontext.open_agent(store=f"sqlite:{tmp_path / 'lc.db'}", pin_task="yes"):  # type: ignore[arg-type]
            pass
    assert not (tmp_path / "lc.db").exists()



TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def plus(a: int, b: int) -> int:
    """Add two integers too."""
    return a + b
'''


async def test_tools_given_beside_a_blueprints_tools_are_offered_by_its_one_tools_app(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "spec_tools_here.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "bp.toml").write_text('[[tools]]\nuse = "spec_tools_here:add"\n', encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    async with livecontext.open_agent(blueprint=tmp_path / "bp.toml", tools=["spec_tools_here:plus"]) as agent:
        config = await recorded_config(agent.store, agent.thread)
    assert config is not None and [a.name for a in config.apps] == ["notebook", "tools"]
    assert {"add", "plus"} <= {t.name for t in config.tools}

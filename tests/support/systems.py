"""Helpers for the tests of systems of agents: a blueprint from TOML text, scripted models,
and what a thread's log holds.

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from livecontext.actors import SubAgents
from livecontext.actors.blueprint import SystemBlueprint, load_system_blueprint, parse_system_blueprint
from livecontext.actors.history import load_state
from livecontext.protocol.history import HistoryEntry, ModelInputEntry, ModelOutputEntry, ToolResult, ToolResultsEntry
from livecontext.protocol.kernel import Message
from livecontext.protocol.wire import make_converter
from livecontext.runtime.models import ModelClient, ScriptedModel
from livecontext.runtime.persistence import EventStore, StoredRecord


def system_blueprint(text: str, source: str = "team.toml") -> SystemBlueprint:
    """A system blueprint from TOML text (relative paths from the current directory)."""
    return parse_system_blueprint(text, source, base=Path.cwd())


def team(*names: str, system: str = "team", extra: str = "") -> SystemBlueprint:
    """A system of agents with these names and nothing else (echo models, the notebook)."""
    tables = "".join(f'\n[[agents]]\nname = "{name}"\n{extra}' for name in names)
    return system_blueprint(f'system = "{system}"\n{tables}')


def call(name: str, **arguments: str) -> dict[str, Any]:
    """A scripted turn that calls one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def scripted(turns: Sequence[Mapping[str, Any]], name: str = "script") -> ModelClient:
    return ScriptedModel.from_turns(list(turns), name=name)


async def records(store: EventStore, thread: str) -> list[StoredRecord]:
    async with await store.open_reader(thread) as reader:
        return await reader.read()


def payloads(found: Sequence[StoredRecord]) -> list[tuple[str, Message]]:
    """Each record's sender and message."""
    converter = make_converter()
    return [(r.sender, converter.load_message(json.loads(r.payload))) for r in found]


async def entries(store: EventStore, thread: str) -> tuple[HistoryEntry, ...]:
    """The thread's entries, as its history store folds them from the log."""
    async with await store.open_reader(thread) as reader:
        state = await load_state(reader, make_converter(), thread)
    return state.entries


async def results(store: EventStore, thread: str) -> list[ToolResult]:
    """Every tool result the thread recorded in a results entry, in order."""
    return [r for e in await entries(store, thread) if isinstance(e, ToolResultsEntry) for r in e.results]


TASK = "Plan three days in Lisbon."
NOTE = "Note the date."
AGENTS = ("planner", "researcher", "critic", "scribe")


def write_team(root: Path, delay_s: float = 0.0, hold: tuple[str, int] | None = None) -> SystemBlueprint:
    """A team whose messages cross every way, in ``root/team.toml`` (scripted models, each turn
    taking ``delay_s``): the planner tells the critic something, asks the researcher, who asks
    the critic while the planner waits, then asks the critic itself, and writes its notebook;
    the scribe, alone, answers its own input (and is done long before the others).

    ``hold`` (agent, turn): that model turn takes ten minutes instead, so that a process killed
    while it thinks there is killed there however slowly the machine runs (write the team again
    without it before resuming)."""
    turns: dict[str, list[dict[str, Any]]] = {
        "planner": [call("send_message", to="critic", text="a plan is coming"),
                    call("ask_agent", to="researcher", question="What is there to see?"),
                    call("ask_agent", to="critic", question="Is three days enough?"),
                    call("notebook_replace", old_text="", new_text="Alfama, Belem, Sintra"),
                    {"text": "The plan is in my notebook."}],
        "researcher": [call("ask_agent", to="critic", question="Is Sintra far?"),
                       {"text": "Alfama, Belem, and Sintra (40 minutes away)."}],
        "critic": [{"text": "Sintra is 40 minutes by train."}, {"text": "Three days is enough."}],
        "scribe": [{"text": "Noted."}],
    }
    given = {"planner": TASK, "scribe": NOTE}
    tables = []
    for name in AGENTS:
        timed = [{**turn, "delay_s": 600.0 if hold == (name, k) else delay_s} for k, turn in enumerate(turns[name])]
        (root / f"{name}.json").write_text(json.dumps({"turns": timed}), encoding="utf-8")
        tables.append(f'[[agents]]\nname = "{name}"\nmodel = "scripted:{name}.json"\n'
                      + (f'inputs = ["{given[name]}"]\n' if name in given else ""))
    path = root / "team.toml"
    path.write_text('system = "team"\n\n' + "\n".join(tables), encoding="utf-8")
    return load_system_blueprint(path)


def transcript(found: Sequence[HistoryEntry]) -> list[tuple[Any, ...]]:
    """What an agent's history says, without who wrote it (a fork's actors have other ids)."""
    out: list[tuple[Any, ...]] = []
    for e in found:
        notes = tuple(n.text for n in getattr(e, "notifications", ()))
        if isinstance(e, ModelInputEntry):
            out.append(("input", e.text, notes))
        elif isinstance(e, ModelOutputEntry):
            out.append(("output", e.content.live.text, tuple((c.name, c.arguments) for c in e.tool_calls)))
        elif isinstance(e, ToolResultsEntry):
            out.append(("results", tuple((r.name, r.status.value, r.content.live.text) for r in e.results), notes))
    return out


class ScriptedSubAgents(SubAgents):
    """The sub-agents app, made from a blueprint (``[[agents.apps]] use = "tests.actors.
    system_support:ScriptedSubAgents"``, ``options = { script = "PATH" }``): each sub-agent
    runs the scripted model of ``script``."""

    def __init__(self, script: str) -> None:
        super().__init__(lambda: ScriptedModel.from_file(script))
        self.script = script

    def fresh(self) -> ScriptedSubAgents:
        made = ScriptedSubAgents(self.script)
        made.store, made.clock = self.store, self.clock
        return made

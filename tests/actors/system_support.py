"""Helpers for the tests of systems of agents: a blueprint from TOML text, scripted models,
and what a thread's log holds.

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from livecontext.actors.blueprint import SystemBlueprint, parse_system_blueprint
from livecontext.actors.history import load_state
from livecontext.protocol import HistoryEntry, Message, ToolResult, ToolResultsEntry, make_converter
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

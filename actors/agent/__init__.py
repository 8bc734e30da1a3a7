"""One agent: spawning its actors (:func:`spawn_agent`), its app host, input, sub-agents, the apps
recorded with its thread, its session (the CLI's run of one thread), its usage and its output as
JSON.

Its modules are imported on first use of a name (see ``__getattr__``): the CLI's light commands
take a few names of it without loading the rest (the agent's actors, the model clients)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (for type checkers and readers; at run time, see __getattr__)
    from ._agent import AgentActors, AgentSettings, spawn_agent
    from ._answer import final_answer
    from ._existing_store import StoreMissingError, open_existing_store
    from ._format import (
        apps_json,
        chat_json,
        dump_json_line,
        entry_json,
        json_data,
        status_json,
        tool_json,
        undecoded_json,
        usage_json,
    )
    from ._host import AppHost
    from ._input import InputSource, InputTooLargeError, give_input
    from ._resume import SETTINGS, changed_settings, recorded_models, resume, resumed_settings
    from ._session import (
        Session,
        SideModels,
        Stopped,
        open_events_file,
        open_session,
        recorded_config,
        run_until_idle,
        stop_interrupted,
        thread_exists,
    )
    from ._subagents import SubAgents
    from ._text import InvalidTextError, check_text
    from ._thread_apps import (
        AppRebuildError,
        ShownApps,
        ToolImportError,
        make_recorded_app,
        rebuild_apps,
        shown_apps,
        shown_state,
        thread_apps,
    )
    from ._thread_ids import check_thread_id, parent_thread_id, sub_thread_id
    from ._usage import live_usage, spawned_threads, stored_usage

_HOMES = {
    "AgentActors": "_agent",
    "AgentSettings": "_agent",
    "AppHost": "_host",
    "AppRebuildError": "_thread_apps",
    "InputSource": "_input",
    "InputTooLargeError": "_input",
    "InvalidTextError": "_text",
    "SETTINGS": "_resume",
    "Session": "_session",
    "ShownApps": "_thread_apps",
    "SideModels": "_session",
    "Stopped": "_session",
    "StoreMissingError": "_existing_store",
    "SubAgents": "_subagents",
    "ToolImportError": "_thread_apps",
    "apps_json": "_format",
    "changed_settings": "_resume",
    "chat_json": "_format",
    "check_text": "_text",
    "check_thread_id": "_thread_ids",
    "dump_json_line": "_format",
    "entry_json": "_format",
    "final_answer": "_answer",
    "give_input": "_input",
    "json_data": "_format",
    "live_usage": "_usage",
    "make_recorded_app": "_thread_apps",
    "open_events_file": "_session",
    "open_existing_store": "_existing_store",
    "open_session": "_session",
    "parent_thread_id": "_thread_ids",
    "rebuild_apps": "_thread_apps",
    "recorded_config": "_session",
    "recorded_models": "_resume",
    "resume": "_resume",
    "resumed_settings": "_resume",
    "run_until_idle": "_session",
    "shown_apps": "_thread_apps",
    "shown_state": "_thread_apps",
    "spawn_agent": "_agent",
    "spawned_threads": "_usage",
    "status_json": "_format",
    "stop_interrupted": "_session",
    "stored_usage": "_usage",
    "sub_thread_id": "_thread_ids",
    "thread_apps": "_thread_apps",
    "thread_exists": "_session",
    "tool_json": "_format",
    "undecoded_json": "_format",
    "usage_json": "_format",
}
"""The module of this package that defines each name."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AgentActors",
    "AgentSettings",
    "AppHost",
    "AppRebuildError",
    "InputSource",
    "InputTooLargeError",
    "InvalidTextError",
    "SETTINGS",
    "Session",
    "ShownApps",
    "SideModels",
    "Stopped",
    "StoreMissingError",
    "SubAgents",
    "ToolImportError",
    "apps_json",
    "changed_settings",
    "chat_json",
    "check_text",
    "check_thread_id",
    "dump_json_line",
    "entry_json",
    "final_answer",
    "give_input",
    "json_data",
    "live_usage",
    "make_recorded_app",
    "open_events_file",
    "open_existing_store",
    "open_session",
    "parent_thread_id",
    "rebuild_apps",
    "recorded_config",
    "recorded_models",
    "resume",
    "resumed_settings",
    "run_until_idle",
    "shown_apps",
    "shown_state",
    "spawn_agent",
    "spawned_threads",
    "status_json",
    "stop_interrupted",
    "stored_usage",
    "sub_thread_id",
    "thread_apps",
    "thread_exists",
    "tool_json",
    "undecoded_json",
    "usage_json",
]

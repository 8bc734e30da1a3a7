"""One agent: spawning its actors (:func:`spawn_agent`), its app host, input, sub-agents, the apps
recorded with its thread, its session (the CLI's run of one thread), its usage and its output as
JSON.

Its modules are imported on first use of a name (see ``__getattr__``): the CLI's light commands
take a few names of it without loading the rest (the agent's actors, the model clients)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from livecontext._lazy import attribute, names

_HOMES = {
    "AgentActors": "_agent",
    "AgentSettings": "_agent",
    "AppHost": "_host",
    "AppRebuildError": "_thread_apps",
    "INPUT_MODES": "_input",
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
    "decide_approval": "_input",
    "dump_json_line": "_format",
    "entry_json": "_format",
    "final_answer": "_answer",
    "give_input": "_input",
    "input_mode": "_input",
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

__all__ = [*_HOMES]

if TYPE_CHECKING:  # (type checkers run no __getattr__: the names of _HOMES, with their types)
    from ._agent import AgentActors as AgentActors, AgentSettings as AgentSettings, spawn_agent as spawn_agent
    from ._answer import final_answer as final_answer
    from ._existing_store import (
        StoreMissingError as StoreMissingError,
        open_existing_store as open_existing_store,
    )
    from ._format import (
        apps_json as apps_json,
        chat_json as chat_json,
        dump_json_line as dump_json_line,
        entry_json as entry_json,
        json_data as json_data,
        status_json as status_json,
        tool_json as tool_json,
        undecoded_json as undecoded_json,
        usage_json as usage_json,
    )
    from ._host import AppHost as AppHost
    from ._input import (
        INPUT_MODES as INPUT_MODES,
        InputSource as InputSource,
        InputTooLargeError as InputTooLargeError,
        give_input as give_input,
        decide_approval as decide_approval,
        input_mode as input_mode,
    )
    from ._resume import (
        SETTINGS as SETTINGS,
        changed_settings as changed_settings,
        recorded_models as recorded_models,
        resume as resume,
        resumed_settings as resumed_settings,
    )
    from ._session import (
        Session as Session,
        SideModels as SideModels,
        Stopped as Stopped,
        open_events_file as open_events_file,
        open_session as open_session,
        recorded_config as recorded_config,
        run_until_idle as run_until_idle,
        stop_interrupted as stop_interrupted,
        thread_exists as thread_exists,
    )
    from ._subagents import SubAgents as SubAgents
    from ._text import InvalidTextError as InvalidTextError, check_text as check_text
    from ._thread_apps import (
        AppRebuildError as AppRebuildError,
        ShownApps as ShownApps,
        ToolImportError as ToolImportError,
        make_recorded_app as make_recorded_app,
        rebuild_apps as rebuild_apps,
        shown_apps as shown_apps,
        shown_state as shown_state,
        thread_apps as thread_apps,
    )
    from ._thread_ids import (
        check_thread_id as check_thread_id,
        parent_thread_id as parent_thread_id,
        sub_thread_id as sub_thread_id,
    )
    from ._usage import (
        live_usage as live_usage,
        spawned_threads as spawned_threads,
        stored_usage as stored_usage,
    )


def __getattr__(name: str) -> Any:
    return attribute(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return names(__name__, _HOMES)

"""Blueprints: one TOML file that describes an agent system, for ``livecontext run FILE.toml``.

A blueprint names the agent's system prompt and model, its apps, the limits of its history,
its recap maintainer and its analyzers (docs/blueprints.md lists every key); a system
blueprint holds several agents, one ``[[agents]]`` table each (:func:`load_system_blueprint`).
:func:`load_blueprint` reads and checks it; every problem is a :class:`BlueprintError` naming
the file, the line and the key. :func:`open_blueprint_models` opens the models it names for
the recap and the analyzers. :class:`AgentSpec` is one agent's settings as one value, what a
blueprint's keys say (:meth:`AgentSpec.from_blueprint`), as every caller builds an agent.
"""

from __future__ import annotations

from ._blueprint import BUILTIN_APPS, AppUse, Blueprint
from ._errors import BlueprintError
from ._load import (
    load_any_blueprint,
    load_blueprint,
    load_system_blueprint,
    parse_blueprint,
    parse_system_blueprint,
)
from ._models import BlueprintModels, open_blueprint_models
from ._spec import NOT_GIVEN, AgentSpec, NotGiven, ToolLike
from ._system_blueprint import DEFAULT_ASK_TIMEOUT_S, AgentBlueprint, SystemBlueprint

__all__ = [
    "BUILTIN_APPS",
    "DEFAULT_ASK_TIMEOUT_S",
    "NOT_GIVEN",
    "NotGiven",
    "AgentBlueprint",
    "AgentSpec",
    "AppUse",
    "Blueprint",
    "BlueprintError",
    "BlueprintModels",
    "SystemBlueprint",
    "ToolLike",
    "load_any_blueprint",
    "load_blueprint",
    "load_system_blueprint",
    "open_blueprint_models",
    "parse_blueprint",
    "parse_system_blueprint",
]

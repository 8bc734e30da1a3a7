"""Blueprints: one TOML file that describes an agent system, for ``livecontext run FILE.toml``.

A blueprint names the agent's system prompt and model, its apps, the limits of its history,
its recap maintainer and its analyzers (docs/blueprints.md lists every key).
:func:`load_blueprint` reads and checks it; every problem is a :class:`BlueprintError` naming
the file, the line and the key. :func:`open_blueprint_models` opens the models it names for
the recap and the analyzers.
"""

from __future__ import annotations

from ._blueprint import BUILTIN_APPS, AppUse, Blueprint
from ._errors import BlueprintError
from ._load import load_blueprint, parse_blueprint
from ._models import BlueprintModels, open_blueprint_models

__all__ = [
    "BUILTIN_APPS",
    "AppUse",
    "Blueprint",
    "BlueprintError",
    "BlueprintModels",
    "load_blueprint",
    "open_blueprint_models",
    "parse_blueprint",
]

"""What ``run`` and ``chat`` need to resume a thread with the side models it recorded."""

from __future__ import annotations

import click

from livecontext.protocol.records import ThreadConfigured

from ..agent import AgentSettings
from ..agent import recorded_models
from ..blueprint import Blueprint


FLAGS = {"budget": ("budget",), "pin_task": ("no_pin_task",), "lifecycle": ("no_lifecycle",),
         "spend": ("max_input_tokens", "max_output_tokens", "max_cost")}
"""The settings a thread records that ``run`` and ``chat`` have flags for, and their parameters."""


def given_flags(ctx: click.Context) -> dict[str, str]:
    """The settings typed on the command line, each with the flags that gave it
    (``{"budget": "--budget"}``); a default or a command without the flag gives none."""
    given = {}
    for name, params in FLAGS.items():
        typed = [p for p in params if ctx.get_parameter_source(p) is click.core.ParameterSource.COMMANDLINE]
        if typed:
            given[name] = ", ".join(f"--{p.replace('_', '-')}" for p in typed)
    return given


def recorded_side_models(recorded: ThreadConfigured | None, settings: AgentSettings) -> Blueprint:
    """The side models to open for a thread run without a blueprint: the recap's and the
    analyzers' specs it recorded, for the recap and the analyzers ``settings`` run."""
    recap_spec, analyzer_specs = recorded_models(recorded)
    return Blueprint(path="<recorded>", settings=settings, recap_model=recap_spec if settings.recap else None,
                     analyzer_models={a.name: analyzer_specs[a.name] for a in settings.analyzers
                                      if a.name in analyzer_specs})


def side_specs(bp: Blueprint | None) -> tuple[str, dict[str, str]]:
    """The side models' specs a thread records (``bp``'s, see ``open_session(side_specs=)``)."""
    return ("", {}) if bp is None else (bp.recap_model or "", dict(bp.analyzer_models))

"""The settings ``run`` and ``chat`` were given by flag, for the lines that say a resumed thread's changes."""

from __future__ import annotations

import click


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

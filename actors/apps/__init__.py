"""Apps: state the model sees through a window and changes through tools.

An :class:`App` renders a ``[Window]`` of its state and offers methods marked with
:func:`tool`; their JSON schemas come from signatures and docstrings
(:func:`describe_tools`), and :func:`invoke_tool` runs a model's call, turning every mistake
into a FAILED :class:`ToolOutcome` the model can read. A tool never changes state itself: it
returns an effect, which the app applies once the history store has committed it. An app
declares its effect classes (``App.effects``), which registers them for every converter; its
state is the fold of all its committed effects, rebuilt on a restart from its latest saved
state (:meth:`App.state_text`) and the effects after it. The built-in :class:`Notebook` is the
Memory Notebook. docs/apps.md has a whole example.
"""

from __future__ import annotations

from ._app import App, DataTool
from ._functions import FunctionTools
from ._imports import importable, load_object, make_app
from ._errors import AppDefinitionError, AppStateError, ToolDefinitionError, UnknownEffectError
from ._invoke import check_tool, describe_tools, invoke_tool, start_tool, tool_owner
from ._notebook import Notebook
from ._outcome import ToolFailure, ToolOutcome
from ._tool import tool

from livecontext.protocol.history import ToolContext

__all__ = [
    "App",
    "AppDefinitionError",
    "AppStateError",
    "DataTool",
    "FunctionTools",
    "Notebook",
    "ToolDefinitionError",
    "ToolFailure",
    "ToolContext",
    "ToolOutcome",
    "UnknownEffectError",
    "check_tool",
    "describe_tools",
    "importable",
    "invoke_tool",
    "load_object",
    "make_app",
    "start_tool",
    "tool",
    "tool_owner",
]

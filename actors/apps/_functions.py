"""Plain functions as tools: the app that offers them.

``@tool`` on a function outside a class makes it a tool of no app; an agent given such
functions (``open_agent(tools=[...])``, ``[[tools]]`` in a blueprint, ``--tool``) offers them
through one :class:`FunctionTools` app named ``tools``. It has no state and no window: each
call is the function's own business. A sync function runs in a worker thread (it may block);
an async one runs in the app host's task for the call, so it is cancelled with it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ._app import App
from ._errors import ToolDefinitionError
from ._imports import describe_object, load_object
from ._tool import tool, tool_marker


class FunctionTools(App):
    """Plain functions offered to the model as tools: an app with no state and no window.

    Each function should be marked with :func:`tool` (one that is not is marked here with
    the defaults). Functions are given as objects or as import paths ``"module:function"``.

    Raises:
        ToolDefinitionError: a function cannot be a tool (see :func:`tool`), is an app's
            method, or an import path does not name a function; two share a tool name.
    """

    name: ClassVar[str] = "tools"

    def __init__(self, functions: Sequence[Callable[..., Any] | str] = ()) -> None:
        self.functions: tuple[Callable[..., Any], ...] = tuple(_function(f) for f in functions)
        self.declared = _declared(self.functions)
        """``(tool name, import path, function)`` of each tool, as the app host reads them."""

    def fresh(self) -> FunctionTools:
        return FunctionTools(self.functions)

    def window(self) -> str:
        return ""  # nothing to show: no state

    def options(self) -> dict[str, Any]:
        """What makes this app again from a thread's record: the functions' import paths."""
        return {"functions": [import_path(f) for f in self.functions]}


def _declared(functions: tuple[Callable[..., Any], ...]) -> tuple[tuple[str, str, Callable[..., Any]], ...]:
    found: dict[str, tuple[str, str, Callable[..., Any]]] = {}
    for fn in functions:
        marker = tool_marker(fn)
        assert marker is not None
        if marker.name in found:
            raise ToolDefinitionError(
                f"two tools are named {marker.name!r}: {found[marker.name][1]} and {import_path(fn)}; "
                "give one another name with @tool(name=...)")
        found[marker.name] = (marker.name, import_path(fn), fn)
    return tuple(found.values())


def import_path(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of a function (what ``--tool`` and ``[[tools]] use`` take)."""
    return f"{fn.__module__}:{fn.__qualname__}"


def _function(given: Callable[..., Any] | str) -> Callable[..., Any]:
    fn = load_object(given, "tool") if isinstance(given, str) else given
    if not inspect.isfunction(fn):
        raise ToolDefinitionError(
            f"tool {given!r} is {describe_object(fn)}, not a function: give a function defined "
            "with def or async def (an app's tools come with the app: apps=[...])")
    marker = tool_marker(fn)
    if marker is None:
        fn = tool(fn)  # (checks the definition: a docstring, named and annotated parameters)
        marker = tool_marker(fn)
        assert marker is not None
    if marker.method:
        raise ToolDefinitionError(
            f"tool {marker.name} ({fn.__qualname__}) is a method of a class: give the app "
            "(apps=[...]) rather than its method")
    return fn

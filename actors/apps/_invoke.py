"""Describing an app's tools to the model, and running the model's tool calls on apps."""

from __future__ import annotations

import functools
import math
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import pydantic
import pydantic_core
import trio

from livecontext.protocol.history import ToolCall, ToolContext, ToolSpec

from ._app import App, DataTool
from ._errors import ToolDefinitionError
from ._functions import FunctionTools
from ._outcome import ToolFailure, ToolOutcome
from ._tool import ToolDef, compile_tool, schema_json, tool_marker

_JSON_TYPE_NAMES: dict[type, str] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


@functools.cache
def _declared(cls: type[App]) -> tuple[tuple[str, str, Callable[..., Any]], ...]:
    """``(tool name, attribute, function)`` of each tool method, in declaration order.

    Base classes' tools come first; a subclass overriding a tool keeps its place, and an
    override without ``@tool`` removes it.
    """
    attrs: dict[str, None] = {}
    for klass in reversed(cls.__mro__[:-1]):  # not object: it has no tools
        attrs.update(dict.fromkeys(vars(klass)))
    found: list[tuple[str, str, Callable[..., Any]]] = []
    for attr in attrs:
        value = inspect.getattr_static(cls, attr)
        marker = tool_marker(value)
        if marker is not None:
            found.append((marker.name, attr, value))
    return tuple(found)


_SPECS: dict[object, tuple[ToolSpec, ...]] = {}
"""The specs of each app class described so far (they depend on the class alone), and of
each tuple of functions given to :class:`FunctionTools`."""


def describe_tools(app: App) -> tuple[ToolSpec, ...]:
    """The specs of ``app``'s tools, in the order the class declares them.

    Raises:
        ToolDefinitionError: if a tool cannot be described (see :func:`tool`) or two
            methods claim the same tool name.
    """
    data = app.data_tools()
    if data is not None:  # (the instance's own: nothing to cache by class)
        return tuple(tool.spec for tool in data)
    key: object = app.functions if isinstance(app, FunctionTools) else type(app)
    specs = _SPECS.get(key)
    if specs is None:  # (what cannot be described is not kept: it raises every time)
        specs = _SPECS[key] = _describe_tools(app)
    return specs


def _tools_of(app: App) -> tuple[tuple[str, str, Callable[..., Any]], ...]:
    """``(tool name, attribute, function)`` of each of ``app``'s tools: its class's methods,
    or, for :class:`FunctionTools`, its functions (attribute: the function's import path)."""
    if isinstance(app, FunctionTools):
        return app.declared
    return _declared(type(app))


def _describe_tools(app: App) -> tuple[ToolSpec, ...]:
    specs: dict[str, ToolSpec] = {}
    attrs: dict[str, str] = {}
    for name, attr, fn in _tools_of(app):
        if name in specs:
            raise ToolDefinitionError(
                f"app {app.name!r} declares tool {name!r} twice ({attrs[name]} and {attr}): "
                "give one of them another name with @tool(name=...)"
            )
        tool_def = compile_tool(attr, fn)
        attrs[name] = attr
        specs[name] = ToolSpec(
            name=name,
            description=tool_def.description,
            parameters_json=schema_json(tool_def),
            idempotent=tool_def.idempotent,
            retention=tool_def.retention,
            side_effects=tool_def.side_effects,
            checked=tool_def.check is not None,
            approval=tool_def.approval,
            waits_on_agent=tool_def.waits_on_agent,
        )
    return tuple(specs.values())


async def invoke_tool(apps: Sequence[App], call: ToolCall, context: ToolContext | None = None) -> ToolOutcome:
    """Run the model's tool ``call`` on whichever of ``apps`` offers that tool.

    This never raises for anything the model or the tool did wrong: an unknown tool,
    arguments that are not JSON or not an object, arguments the signature rejects, a
    :class:`ToolFailure`, or any other exception inside the tool all come back as a FAILED
    outcome whose text tells the model what happened. Only what is not an ``Exception``
    (``trio.Cancelled``, ``KeyboardInterrupt``) propagates.

    It never changes an app's state either: the outcome's effect is applied by the host once
    committed (see :class:`App`). When two apps offer the same tool name, the first wins.
    A tool taking a :class:`ToolContext` is given ``context`` (by default, the call's context
    in a thread with no id).
    """
    started = start_tool(apps, call, context)
    if isinstance(started, ToolOutcome):
        return started
    return await started


def start_tool(apps: Sequence[App], call: ToolCall,
               context: ToolContext | None = None) -> ToolOutcome | Awaitable[ToolOutcome]:
    """The synchronous part of :func:`invoke_tool`: find the tool, parse and validate the
    arguments, and call it.

    Returns the outcome when the call is over: a mistake, or a tool whose call returned a
    plain value. When the tool's call returned an awaitable (an ``async`` tool), returns an
    awaitable that awaits it and gives the outcome, with the same guarantees as
    :func:`invoke_tool`; the host awaits it in a task of its own, so it can be cancelled.
    """
    data = _find_data_tool(apps, call.name)
    if data is not None:
        return _run_data_tool(data, call, context if context is not None else ToolContext.of("", "", call.id))
    target = _find_tool(apps, call.name)
    if target is None:
        available = dict.fromkeys(name for app in apps for name in _tool_names(app))
        return ToolOutcome.failed(
            f"unknown tool {call.name!r}; available tools: {', '.join(available) or '(none)'}"
        )
    app, attr, fn = target
    try:
        tool_def = compile_tool(attr, fn)
    except ToolDefinitionError as exc:
        return ToolOutcome.failed(f"{call.name} cannot be called: {exc}")
    arguments = _parse_arguments(tool_def, call.arguments)
    if isinstance(arguments, ToolOutcome):
        return arguments
    try:
        validated = tool_def.arguments.model_validate(arguments)
    except pydantic.ValidationError as exc:
        return ToolOutcome.failed(_describe_invalid(tool_def, exc))
    kwargs = {p: getattr(validated, f"a{i}") for i, p in enumerate(tool_def.parameters)}
    if tool_def.context is not None:
        kwargs[tool_def.context] = context if context is not None else ToolContext.of("", "", call.id)
    return _call(app, tool_def, fn, kwargs)


async def check_tool(apps: Sequence[App], call: ToolCall, context: ToolContext,
                     timeout_s: float | None = None) -> ToolOutcome | Literal[False] | None:
    """Ask the ``check`` of the tool ``call`` names whether the call's effect happened.

    Returns the call's outcome if it did, ``False`` if it did not (run the call now), ``None``
    if the check cannot tell or there is none (the outcome is unknown). A check that raises,
    or takes longer than ``timeout_s`` (then it is cancelled), cannot tell: the outcome's text
    says why. A sync check runs in a worker thread, as a sync tool does (it may block).
    """
    target = _find_tool(apps, call.name)
    if target is None:
        return None
    app, attr, fn = target
    try:
        check = compile_tool(attr, fn).check
    except ToolDefinitionError:
        return None
    if check is None:
        return None
    args = (app, context.key) if is_method_check(fn) else (context.key,)
    unknown = f"the outcome of the call (key {context.key}) is unknown"
    with trio.move_on_after(math.inf if timeout_s is None else timeout_s) as deadline:
        try:
            if inspect.iscoroutinefunction(check):
                found = await check(*args)
            else:
                found = await trio.to_thread.run_sync(check, *args, abandon_on_cancel=True)
                if inspect.isawaitable(found):
                    found = await found
        except Exception as exc:  # not BaseException: trio.Cancelled must propagate
            return ToolOutcome.failed(f"{call.name}'s check raised {type(exc).__name__}: {exc}; {unknown}")
    if deadline.cancelled_caught:
        return ToolOutcome.failed(f"{call.name}'s check did not answer within {timeout_s:g} s and was "
                                  f"cancelled; {unknown}")
    if found is None:
        return None
    if found is False:
        return False
    if found is True:
        return ToolOutcome.ok("done (its check found the effect done)")
    if isinstance(found, (str, ToolOutcome)):
        return ToolOutcome.ok(found) if isinstance(found, str) else found
    return ToolOutcome.failed(f"{call.name}'s check returned {type(found).__name__} (give text, a ToolOutcome, "
                              f"True, False or None); the outcome of the call (key {context.key}) is unknown")


def is_method_check(fn: Callable[..., Any]) -> bool:
    """Whether the tool ``fn`` is an app's method (its check then takes the app first)."""
    marker = tool_marker(fn)
    return marker is not None and marker.method


def tool_owner(apps: Sequence[App], tool_name: str) -> App | None:
    """The app whose tool a call of ``tool_name`` runs (the first that offers it)."""
    for app in apps:
        if tool_name in _tool_names(app):
            return app
    return None


def _tool_names(app: App) -> tuple[str, ...]:
    data = app.data_tools()
    if data is not None:
        return tuple(tool.spec.name for tool in data)
    return tuple(name for name, _, _ in _tools_of(app))


def _find_tool(apps: Sequence[App], tool_name: str) -> tuple[App, str, Callable[..., Any]] | None:
    """The ``@tool`` method (or function) a call of ``tool_name`` runs, if the first app that
    offers that name offers it so (not as a data tool)."""
    owner = tool_owner(apps, tool_name)
    if owner is None or owner.data_tools() is not None:
        return None
    for name, attr, fn in _tools_of(owner):
        if name == tool_name:
            return owner, attr, fn
    return None


def _find_data_tool(apps: Sequence[App], tool_name: str) -> DataTool | None:
    owner = tool_owner(apps, tool_name)
    data = owner.data_tools() if owner is not None else None
    return next((tool for tool in data or () if tool.spec.name == tool_name), None)


async def _run_data_tool(tool: DataTool, call: ToolCall, context: ToolContext) -> ToolOutcome:
    try:
        return await tool.run(call, context)
    except ToolFailure as exc:
        return ToolOutcome.failed(exc.message)
    except Exception as exc:  # not BaseException: trio.Cancelled must propagate
        detail = f": {exc}" if str(exc) else ""
        return ToolOutcome.failed(f"{call.name} raised {type(exc).__name__}{detail}")


def _parse_arguments(tool_def: ToolDef, text: str) -> dict[str, Any] | ToolOutcome:
    # Some models send "" for a call without arguments: that is an empty object.
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return ToolOutcome.failed(f"arguments of {tool_def.name} are not valid JSON: {exc}")
    if not isinstance(data, dict):
        kind = _JSON_TYPE_NAMES.get(type(data), type(data).__name__)
        return ToolOutcome.failed(
            f"arguments of {tool_def.name} must be a JSON object "
            f"({{\"name\": value, ...}}), got {kind}"
        )
    return data


def _describe_invalid(tool_def: ToolDef, exc: pydantic.ValidationError) -> str:
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        path = _path(error["loc"])
        if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
            takes = ", ".join(tool_def.parameters) or "no arguments"
            problems.append(f"unknown argument {path!r} ({tool_def.name} takes {takes})")
        else:
            problems.append(f"argument {path!r}: {error['msg']}")
    return f"invalid arguments for {tool_def.name}: {'; '.join(problems)}"


def _path(loc: tuple[int | str, ...]) -> str:
    parts = [str(loc[0])] if loc else []
    parts += [f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:]]
    return "".join(parts)


def _call(app: App, tool_def: ToolDef, fn: Callable[..., Any],
          kwargs: dict[str, Any]) -> ToolOutcome | Awaitable[ToolOutcome]:
    if not tool_def.method:
        if not inspect.iscoroutinefunction(fn):  # a plain sync function may block: a worker thread
            return _finish(app, tool_def, trio.to_thread.run_sync(functools.partial(fn, **kwargs)))
        return _finish(app, tool_def, fn(**kwargs))
    try:
        result = getattr(app, tool_def.attr)(**kwargs)
    except ToolFailure as exc:
        return ToolOutcome.failed(exc.message)
    except Exception as exc:  # not BaseException: trio.Cancelled must propagate
        return _raised(tool_def, exc)
    # Awaitable rather than "declared async": a sync-looking wrapper may return a coroutine.
    if inspect.isawaitable(result):
        return _finish(app, tool_def, result)
    return _checked(app, tool_def, result)


async def _finish(app: App, tool_def: ToolDef, awaitable: Awaitable[Any]) -> ToolOutcome:
    try:
        result = await awaitable
    except ToolFailure as exc:
        return ToolOutcome.failed(exc.message)
    except Exception as exc:  # not BaseException: trio.Cancelled must propagate
        return _raised(tool_def, exc)
    return _checked(app, tool_def, result)


def _raised(tool_def: ToolDef, exc: Exception) -> ToolOutcome:
    detail = f": {exc}" if str(exc) else ""
    return ToolOutcome.failed(f"{tool_def.name} raised {type(exc).__name__}{detail}")


def _checked(app: App, tool_def: ToolDef, result: object) -> ToolOutcome:
    if isinstance(result, str):  # plain text: the runtime makes its shorter levels
        return ToolOutcome.ok(result)
    if isinstance(result, ToolOutcome):
        effect = result.effect
        if effect is not None and not isinstance(effect, type(app).effects):
            return ToolOutcome.failed(
                f"{tool_def.name} returned a {type(effect).__name__} effect, which app {app.name!r} "
                f"does not declare (a bug in the app: add it to {type(app).__qualname__}.effects); "
                "the call had no effect"
            )
        return result
    if result is None:
        return ToolOutcome.ok("done")
    try:  # any other value as JSON text: numbers, lists, dicts, dataclasses, pydantic models
        return ToolOutcome.ok(pydantic_core.to_json(result).decode())
    except pydantic_core.PydanticSerializationError:
        return ToolOutcome.failed(
            f"{tool_def.name} returned {type(result).__name__}, which is not text, a ToolOutcome "
            f"or a value that can be written as JSON (a bug in {_owner(app, tool_def)}); the call "
            "had no effect"
        )


def _owner(app: App, tool_def: ToolDef) -> str:
    return f"app {app.name!r}" if tool_def.method else f"tool {tool_def.name!r}"

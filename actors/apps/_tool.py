"""The ``@tool`` decorator, and the JSON schema and validator it derives from a method.

A tool's schema comes from what the author already wrote: the signature's type hints give
the types and which arguments are required, the Google-style docstring gives the tool's
description and each argument's description. A pydantic model built from the signature
both produces the JSON schema and validates the model's arguments, so the two never drift
apart.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar, overload

import docstring_parser
import pydantic
from attrs import frozen

from livecontext.protocol.history import Retention, ToolContext

from ._errors import ToolDefinitionError

F = TypeVar("F", bound=Callable[..., Any])

_MARKER = "__livecontext_tool__"
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Keys whose value maps names to schemas (a property may well be called "title").
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})
# Keys whose value is data, not schema: left exactly as written.
_SCHEMA_DATA = frozenset({"default", "const", "enum", "examples"})


_RESULT_RETENTIONS = (Retention.COMPRESSIBLE, Retention.DISPOSABLE, Retention.EPHEMERAL)
"""What a tool may declare of its results (an input is pinned instead)."""


@frozen
class _Marker:
    """What ``@tool`` records on a method."""

    name: str
    idempotent: bool
    retention: Retention = Retention.COMPRESSIBLE
    method: bool = True
    """An app's method (its first parameter is ``self``), else a plain function."""
    side_effects: bool = False
    check: Callable[..., Any] | None = None
    approval: bool = False
    waits_on_agent: bool = False


@frozen
class ToolDef:
    """A tool method, compiled: its spec data and the pydantic model validating its arguments."""

    attr: str
    """The method's attribute name on the app class."""
    name: str
    """The name the model calls it by."""
    description: str
    """The docstring, without its Args/Returns sections."""
    schema: dict[str, Any]
    """The JSON schema of the arguments (an object schema, titles removed)."""
    idempotent: bool
    """Whether re-running it after a crash is safe."""
    retention: Retention
    """The retention class of its results."""
    arguments: type[pydantic.BaseModel]
    """Validates the arguments; field ``a<i>`` has the alias of parameter ``i``."""
    parameters: tuple[str, ...]
    """The parameter names, in signature order (``self`` excluded)."""
    method: bool = True
    """An app's method, else a plain function (see :class:`FunctionTools`)."""
    side_effects: bool = False
    """Whether a call acts on the world outside the thread (see :func:`tool`)."""
    check: Callable[..., Any] | None = None
    """What tells whether a call with a given idempotency key did its effect (see :func:`tool`)."""
    context: str | None = None
    """The parameter annotated :class:`ToolContext`, filled by the host (not in the schema)."""
    approval: bool = False
    waits_on_agent: bool = False
    """Whether a person must approve each call before it runs (see :func:`tool`)."""


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(*, idempotent: bool = False, name: str | None = None,
         retention: Retention = Retention.COMPRESSIBLE, side_effects: bool = False,
         check: Callable[..., Any] | None = None, approval: bool = False,
         waits_on_agent: bool = False) -> Callable[[F], F]: ...
def tool(
    fn: F | None = None, /, *, idempotent: bool = False, name: str | None = None,
    retention: Retention = Retention.COMPRESSIBLE, side_effects: bool = False,
    check: Callable[..., Any] | None = None, approval: bool = False, waits_on_agent: bool = False,
) -> F | Callable[[F], F]:
    """Mark a function, or an app's method, as a tool the model may call.

    Use it bare (``@tool``) or with options (``@tool(idempotent=True)``). The type hints and
    Google-style docstring become the tool's JSON schema and description; the model's
    arguments are validated against them before the tool runs. A tool may be sync or async
    and takes its arguments by keyword. It returns text (the runtime makes its shorter
    levels), a :class:`ToolOutcome` (with levels and, for an app, an effect of its own), or
    any value pydantic can write as JSON (written so); raising :class:`ToolFailure` or any
    exception gives the model a FAILED result saying so.

    A function defined in a class body is an app's method (``self`` first): it must not change
    the app's state (see :class:`App`). Any other function is a plain tool: give it to an
    agent (``open_agent(tools=[fn])``, ``[[tools]] use = "module:fn"``, ``--tool module:fn``);
    a sync one runs in a worker thread, so it may block.

    Args:
        fn: The method (when used bare).
        idempotent: Whether running the call twice has the effect of running it once, so the
            engine may re-run it after a crash instead of reporting "outcome unknown".
        name: The name the model calls it by; the method's name when omitted.
        retention: The retention class of its results: COMPRESSIBLE (the default: folded
            into a recap in time), DISPOSABLE (dropped first when the history is full: results
            a later state supersedes, such as a view of the app's own window) or EPHEMERAL
            (gone when the session ends). A model output that only calls such tools and says
            nothing gets the same class, so the two go together.
        side_effects: Whether a call acts on the world outside the thread (a payment, a
            mail). Such a call found started but unrecorded after a crash is never run again
            blindly: the model is told its outcome is unknown, with the call's idempotency key
            (:class:`ToolContext`), unless ``check`` can say what happened.
        check: For a side-effecting tool, a function of the call's idempotency key that says
            whether the call's effect happened; the engine calls it on resume for a call a crash
            interrupted. For a plain function ``check(key)``, for an app's method
            ``check(self, key)`` (define it above the tool in the class body); sync or async. It
            returns the call's result if the effect is done (text or a :class:`ToolOutcome`;
            ``True``: just "done"), ``False`` if it is not (the call is run now), ``None`` if it
            cannot tell (the outcome is reported unknown).
        approval: Whether a person must approve each call before it runs. The engine records
            the request and the agent stops with status ``waiting_approval``; ``agent.approve``
            (possibly with edited arguments) or ``agent.deny`` (with a reason the model reads)
            decides, then ``agent.run()`` carries on (``livecontext approve|deny`` likewise).
        waits_on_agent: Whether a call waits on another agent's work (runs a sub-agent, asks
            another agent, even a remote one): while it runs, the agent's status is
            ``waiting_internal``, naming the call, rather than ``active``.

    A tool that takes a parameter annotated :class:`ToolContext` is given the call's context
    there (its idempotency key, thread and call id); the model never sees that parameter.

    Raises:
        ToolDefinitionError: if the method has no docstring, takes ``*args``/``**kwargs`` or
            positional-only parameters, the name is not 1-64 letters, digits, ``_`` or ``-``,
            ``retention`` is not one of those three, or ``check`` is given without
            ``side_effects=True`` or is not a function.
    """
    if retention not in _RESULT_RETENTIONS:
        raise ToolDefinitionError(
            f"@tool(retention={retention!r}) is not a retention class for results: use "
            f"{', '.join(r.name for r in _RESULT_RETENTIONS)} (pin an input to keep it for good)"
        )

    if check is not None and not side_effects:
        raise ToolDefinitionError(
            "@tool(check=...) is for a tool with side effects: add side_effects=True (a tool "
            "without them is simply run again or reported interrupted)")
    if check is not None and not callable(check):
        raise ToolDefinitionError(f"@tool(check={check!r}) is not a function: give a function of the call's key")
    if side_effects and idempotent:
        raise ToolDefinitionError(
            "@tool(idempotent=True, side_effects=True): an idempotent tool is run again after a crash, "
            "so it needs no side_effects; keep one of the two")

    def mark(f: F) -> F:
        method = is_method(f)
        _check_definition(f, name, method)
        setattr(f, _MARKER, _Marker(name or f.__name__, idempotent, retention, method, side_effects, check,
                                      approval, waits_on_agent))
        return f

    if fn is not None:
        return mark(fn)
    return mark


def tool_marker(value: object) -> _Marker | None:
    """The ``@tool`` marker of a class attribute, or ``None`` if it is not a tool method."""
    marker = getattr(value, _MARKER, None) if inspect.isfunction(value) else None
    return marker if isinstance(marker, _Marker) else None


def is_method(f: object) -> bool:
    """Whether ``f`` was defined in a class body (its qualified name says so: ``C.f``, not
    ``f`` or ``outer.<locals>.f``)."""
    parts = getattr(f, "__qualname__", "").split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def _check_definition(f: object, name: str | None, method: bool = True) -> None:
    if not inspect.isfunction(f):
        raise ToolDefinitionError(
            f"@tool marks plain methods, not {type(f).__name__} objects: put @tool "
            "directly above the def (and not on a staticmethod or classmethod)"
        )
    label = f.__qualname__
    tool_name = name or f.__name__
    if not _TOOL_NAME.match(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} of {label} is not valid: use 1-64 letters, digits, "
            "'_' or '-' (what model APIs accept)"
        )
    if not inspect.getdoc(f):
        raise ToolDefinitionError(
            f"tool {tool_name} ({label}) has no docstring: write one, the model reads it as "
            "the tool's description"
        )
    params = list(inspect.signature(f).parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if method and (not params or params[0].kind not in positional):
        raise ToolDefinitionError(f"tool {tool_name} ({label}) must be a method taking self first")
    for p in params[1:] if method else params:
        if p.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            raise ToolDefinitionError(
                f"tool {tool_name} ({label}): parameter {p.name!r} is {p.kind.description}; "
                "a tool takes named parameters only (the model passes a JSON object)"
            )


@functools.cache
def compile_tool(attr: str, fn: Callable[..., Any]) -> ToolDef:
    """Build (once per method) the schema and argument model of a ``@tool`` method.

    Raises:
        ToolDefinitionError: if a parameter has no type hint, a hint cannot be resolved, or
            a type cannot be expressed as JSON schema.
    """
    marker = tool_marker(fn)
    assert marker is not None, f"{attr} is not marked with @tool"
    label = f"tool {marker.name} ({fn.__qualname__})"
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"{label}: cannot resolve its type hints ({type(exc).__name__}: {exc}); define "
            "the types it names at module level, before the tools are described"
        ) from exc
    doc = docstring_parser.parse(inspect.getdoc(fn) or "", docstring_parser.DocstringStyle.GOOGLE)
    documented = {p.arg_name: _unwrap(p.description or "") for p in doc.params}
    params = list(inspect.signature(fn).parameters.values())[1 if marker.method else 0:]
    names = tuple(p.name for p in params)
    stray = sorted(set(documented) - set(names))
    if stray:
        raise ToolDefinitionError(
            f"{label}: its docstring documents {', '.join(map(repr, stray))}, which it does "
            f"not take (it takes {', '.join(names) or 'nothing'}); fix the Args section"
        )
    context = next((p.name for p in params if hints.get(p.name) is ToolContext), None)
    params = [p for p in params if p.name != context]
    names = tuple(p.name for p in params)
    fields: dict[str, Any] = {}
    for i, p in enumerate(params):
        if p.name not in hints:
            raise ToolDefinitionError(
                f"{label}: parameter {p.name!r} has no type hint; annotate it so the model "
                "gets a schema and its arguments can be validated"
            )
        extra: dict[str, Any] = {"alias": p.name}
        if documented.get(p.name):
            extra["description"] = documented[p.name]
        if p.default is not inspect.Parameter.empty:
            extra["default"] = p.default
        # Fields get neutral names and the parameter's name as alias, so a parameter may be
        # called anything (``json``, ``model_id``) without clashing with BaseModel.
        fields[f"a{i}"] = (hints[p.name], pydantic.Field(**extra))
    try:
        model = pydantic.create_model(
            f"{marker.name}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid"),
            **fields,
        )
        schema = _strip_titles(model.model_json_schema(by_alias=True))
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
        # pydantic's first sentence names the type; the rest suggests options we do not want.
        reason = str(exc).splitlines()[0].split(". ")[0].rstrip(".")
        raise ToolDefinitionError(
            f"{label}: its parameters cannot be described as JSON schema ({reason}); use JSON "
            "types (str, int, float, bool, lists, dicts, enums, pydantic models)"
        ) from exc
    description = "\n\n".join(d for d in (doc.short_description, doc.long_description) if d)
    return ToolDef(
        attr=attr,
        name=marker.name,
        description=description,
        schema=schema,
        idempotent=marker.idempotent,
        retention=marker.retention,
        arguments=model,
        parameters=names,
        method=marker.method,
        side_effects=marker.side_effects,
        check=marker.check,
        context=context,
        approval=marker.approval,
        waits_on_agent=marker.waits_on_agent,
    )


def schema_json(tool_def: ToolDef) -> str:
    """The tool's argument schema as compact JSON text."""
    return json.dumps(tool_def.schema, ensure_ascii=False, separators=(",", ":"))


def _unwrap(text: str) -> str:
    """Join an argument description's wrapped lines (paragraph breaks are kept)."""
    return "\n\n".join(" ".join(par.split()) for par in re.split(r"\n\s*\n", text.strip()))


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keys: they repeat the names and cost tokens."""
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_DATA:
            cleaned[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            cleaned[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _strip_titles(value)
    return cleaned

"""The scripted model's script: its JSON shape, how it is read, and what a bad one reports.

A script is ``{"turns": [turn, ...]}``; each turn is an object whose keys are all optional::

    {"text": "Let me look.",
     "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
     "delay_s": 0.05, "delay_times": 1,
     "fail": {"error": "rate_limit", "times": 2}}

``arguments`` is an object (sent as its JSON text) or a string (sent verbatim: a way to script
malformed arguments). The shape is checked with pydantic (unknown keys forbidden, no type
coercion) and pydantic's errors are rewritten as one line each, in the script's own terms:
``turns[2].fail.error must be one of rate_limit, server, timeout, got 'x'``.
"""

from __future__ import annotations

import json
import os
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import ErrorDetails

from ._errors import ScriptError

_MAX_PROBLEMS = 5
"""A script with many problems reports the first few: fixing them usually fixes the rest."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ScriptedFail(_Strict):
    """Make the first ``times`` attempts at this turn fail with ``error``."""

    error: Literal["rate_limit", "server", "timeout"]
    times: int = Field(default=1, ge=0)


class ScriptedToolCall(_Strict):
    """A tool call the scripted model makes."""

    name: str
    arguments: Any = Field(default_factory=dict)

    @field_validator("arguments")
    @classmethod
    def _object_or_text(cls, value: Any) -> Any:
        if not isinstance(value, dict | str):
            raise ValueError(f"must be an object or a string, got {_json_type(value)} {_short(value)}")
        return value

    def arguments_json(self) -> str:
        """The arguments as the model would write them: JSON text."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


class ScriptedTurn(_Strict):
    """What the scripted model answers to one call."""

    text: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    delay_s: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    delay_times: int | None = Field(default=None, ge=1)
    """The delay is taken by the turn's first ``delay_times`` attempts only (``None``: by
    every one): a call cut short (an interrupt) and made again is then answered at once."""
    fail: ScriptedFail | None = None


class Script(_Strict):
    """A whole script: turn ``k`` answers the call whose ``call_index`` is ``k``."""

    turns: list[ScriptedTurn]


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and check the script at ``path``.

    Raises:
        ScriptError: The file cannot be read, is not JSON, or does not have a script's shape.
    """
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptError(source, ["no such file; check the path after 'scripted:'"]) from None
    except IsADirectoryError:
        raise ScriptError(source, ["it is a directory, not a JSON file"]) from None
    except UnicodeDecodeError as exc:
        raise ScriptError(source, [f"it is not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None
    except OSError as exc:
        raise ScriptError(source, [f"cannot read it: {exc.strerror or exc}"]) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        raise ScriptError(source, [problem]) from None
    return parse_script(data, source)


def parse_script(data: object, source: str) -> Script:
    """Check already-decoded JSON ``data`` as a script; ``source`` names it in errors.

    Raises:
        ScriptError: ``data`` does not have a script's shape.
    """
    try:
        return Script.model_validate(data)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems = [_describe(error) for error in errors[:_MAX_PROBLEMS]]
        if len(errors) > _MAX_PROBLEMS:
            problems.append(f"and {len(errors) - _MAX_PROBLEMS} more problems")
        raise ScriptError(source, problems) from None


_EXPECTED_TYPES = {
    "string_type": "a string",
    "float_type": "a number",
    "int_type": "an integer",
    "bool_type": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _describe(error: ErrorDetails) -> str:
    """One pydantic error as one line in the script's terms."""
    loc = error["loc"]
    where = _format_loc(loc)
    kind = error["type"]
    got = error.get("input")
    ctx = error.get("ctx", {})
    if kind == "extra_forbidden":
        allowed = ", ".join(_model_at(loc[:-1]).model_fields)
        return f"{where} is not a known key (allowed here: {allowed})"
    if kind == "missing":
        return f"{where} is missing"
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return f"{where} must be one of {expected}, got {_short(got)}"
    if kind == "greater_than_equal":
        minimum = ctx.get("ge")
        bound = "must not be negative" if minimum == 0 else f"must be at least {minimum}"
        return f"{where} {bound}, got {_short(got)}"
    if kind == "finite_number":
        return f"{where} must be a finite number, got {_short(got)}"
    if kind == "value_error":
        return f"{where} {ctx.get('error', error['msg'])}"
    if kind in _EXPECTED_TYPES:
        return f"{where} must be {_EXPECTED_TYPES[kind]}, got {_json_type(got)} {_short(got)}"
    return f"{where}: {error['msg']}"


def _format_loc(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return "the script"
    parts = [str(loc[0])]
    for part in loc[1:]:
        parts.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "".join(parts)


def _model_at(loc: Sequence[int | str]) -> type[BaseModel]:
    """The model class found at ``loc`` (list indices skipped), for naming its allowed keys."""
    model: type[BaseModel] = Script
    for part in loc:
        if isinstance(part, str) and part in model.model_fields:
            inner = _inner_model(model.model_fields[part].annotation)
            if inner is not None:
                model = inner
    return model


def _inner_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            found = _inner_model(arg)
            if found is not None:
                return found
    return None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

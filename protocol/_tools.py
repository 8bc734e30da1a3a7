"""Tool specifications, tool calls and tool results."""

from __future__ import annotations

import enum

from attrs import frozen

from ._content import Content, Retention


@frozen
class ToolSpec:
    """A tool the model may call: its name, description and JSON schema of arguments."""

    name: str
    """The name the model uses to call the tool."""
    description: str
    """What the tool does, from its docstring."""
    parameters_json: str
    """The JSON schema (an object schema) of the arguments, as JSON text."""
    idempotent: bool = False
    """Whether running it twice has the effect of running it once (re-run after a crash)."""
    retention: Retention = Retention.COMPRESSIBLE
    """The retention class of its results (and of a model output that only calls such tools
    and says nothing): DISPOSABLE for results that a later state supersedes."""


@frozen
class ToolCall:
    """One tool call made by the model."""

    id: str
    """The model's id for the call; the result refers to it."""
    name: str
    """The tool's name, as the model wrote it (it may name no tool)."""
    arguments: str
    """The arguments exactly as the model wrote them: JSON text, possibly malformed."""


class ToolStatus(enum.Enum):
    """How a tool call ended."""

    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"
    INTERRUPTED = "interrupted"
    """The call started but no result was recorded (a crash): outcome unknown."""


@frozen
class ToolResult:
    """The result of one tool call, at every level of detail."""

    call_id: str
    """The :attr:`ToolCall.id` this answers."""
    name: str
    """The tool's name."""
    status: ToolStatus
    """How the call ended."""
    content: Content
    """What the model reads, at each level."""

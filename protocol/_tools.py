"""Tool specifications, tool calls and tool results."""

from __future__ import annotations

import enum
import hashlib

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
    side_effects: bool = False
    """Whether a call acts on the world outside the thread (a payment, a mail): one found
    started but unrecorded after a crash is never run again blindly (see :class:`ToolContext`)."""
    checked: bool = False
    """Whether the tool offers a ``check(key)`` that can tell whether a call's effect happened:
    the engine asks it on resume instead of reporting the outcome unknown."""
    retention: Retention = Retention.COMPRESSIBLE
    """The retention class of its results (and of a model output that only calls such tools
    and says nothing): DISPOSABLE for results that a later state supersedes."""
    approval: bool = False
    """Whether a person must approve each call before it runs: the engine records the request
    and the agent waits (status ``waiting_approval``) until the call is approved or denied."""
    waits_on_agent: bool = False
    """Whether a call waits on another agent's work (a sub-agent's run, another agent's
    answer): while one runs the agent's status is ``waiting_internal``."""


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


def idempotency_key(thread_id: str, output_id: str, call_id: str) -> str:
    """The idempotency key of tool call ``call_id`` of model output ``output_id`` (the entry's
    id, such as ``e4``) made in thread ``thread_id``.

    A pure function of the three (``lc-`` and 32 hex digits of a SHA-256 of them, each
    length-prefixed), so the call has the same key in every run of the thread, before and
    after a crash: hand it to the outside world (a payment API's idempotency key, a row's
    unique id) and a call run twice is done there once, or a ``check(key)`` can look for it.
    The output's id is in it because some servers number their calls afresh in every answer
    (``call_0`` each time): two calls with one id in two outputs are two calls, with two keys.
    """
    h = hashlib.sha256(b"livecontext tool call\0")
    for part in (thread_id, output_id, call_id):
        data = part.encode("utf-8", "surrogatepass")
        h.update(b"%d:" % len(data))
        h.update(data)
    return "lc-" + h.hexdigest()[:32]


@frozen
class ToolContext:
    """What a running tool call knows of itself: given to a tool that takes a parameter
    annotated ``ToolContext`` (never shown to the model in the tool's schema)."""

    key: str
    """The call's idempotency key (:func:`idempotency_key` of :attr:`thread_id`,
    :attr:`output_id` and :attr:`call_id`)."""
    thread_id: str
    """The thread whose model made the call."""
    output_id: str
    """The id of the model output entry that holds the call."""
    call_id: str
    """The model's id for the call."""

    @classmethod
    def of(cls, thread_id: str, output_id: str, call_id: str) -> ToolContext:
        """The context of call ``call_id`` of output ``output_id`` made in thread ``thread_id``."""
        return cls(idempotency_key(thread_id, output_id, call_id), thread_id, output_id, call_id)

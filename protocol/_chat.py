"""Chat messages as sent to a model (the OpenAI chat-completions shape, typed)."""

from __future__ import annotations

import enum

from attrs import frozen

from ._entries import Usage
from ._tools import ToolCall, ToolSpec


class Role(enum.Enum):
    """Who speaks in a chat message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@frozen
class ChatMessage:
    """One message of a rendered context.

    ``tool_calls`` only on assistant messages; ``tool_call_id`` only on tool messages.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@frozen
class ModelRequest:
    """What a model client is asked to complete."""

    messages: tuple[ChatMessage, ...]
    """The rendered context, oldest first."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools the model may call."""
    call_index: int = 0
    """How many model outputs the thread has ever recorded (folded ones included):
    the scripted client answers with turn ``call_index``."""
    thread_id: str = ""


@frozen
class ModelReply:
    """A complete answer of a model, after its stream was accumulated."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    model: str = ""
    usage: Usage = Usage()

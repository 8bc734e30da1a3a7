"""Our chat types to OpenAI's request dicts, and OpenAI's streamed chunks back to a reply.

Kept apart from the client so that both directions can be read (and tested) without a server.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from attrs import define, field
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import Choice, ChoiceDeltaToolCall

from livecontext.protocol import ChatMessage, ModelReply, Role, ToolCall, ToolSpec, Usage

from .. import ModelError, UsageError
from ._errors import FailureKind, TransientModelError


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The chat-completions ``messages`` for ``messages``.

    Raises:
        UsageError: A tool message has no ``tool_call_id``.
    """
    out: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        if message.role is Role.TOOL:
            if message.tool_call_id is None:
                raise UsageError(
                    f"message {position} is a tool message without a tool_call_id; "
                    "every tool message must answer a tool call"
                )
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        elif message.role is Role.ASSISTANT and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    # OpenAI's own form for "no text, only tool calls" is a null content.
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": message.role.value, "content": message.content})
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The chat-completions ``tools`` for ``tools``.

    Raises:
        UsageError: A tool's ``parameters_json`` is not JSON.
    """
    out: list[dict[str, Any]] = []
    for tool in tools:
        try:
            parameters = json.loads(tool.parameters_json)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"tool {tool.name!r} has a parameters_json that is not JSON ({exc.msg}); "
                "it must be a JSON object schema"
            ) from None
        out.append(
            {
                "type": "function",
                "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
            }
        )
    return out


class UnreadableChunk(ModelError):
    """A chunk is not shaped like a ``chat.completion.chunk`` (the client names the server)."""


@define
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(factory=list)


@define
class ChunkAccumulator:
    """Accumulates a chat-completion stream, chunk by chunk, into one :class:`ModelReply`.

    Tool calls arrive in pieces keyed by ``index``: the id and name usually in the first
    piece, the arguments as fragments of JSON text to be concatenated.
    """

    call_index: int
    """The request's ``call_index``: names tool calls that came without an id."""
    model: str = ""
    chunks: int = 0
    finish_reason: str | None = None
    usage: Usage | None = None
    _text: list[str] = field(factory=list)
    _calls: dict[int, _PartialCall] = field(factory=dict)

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take in one chunk; return the text it adds (``""`` if none).

        Raises:
            UnreadableChunk: The chunk does not have a chunk's shape.
        """
        try:
            return self._add(chunk)
        except (AttributeError, TypeError, ValueError) as exc:
            raise UnreadableChunk(f"a chunk could not be read ({type(exc).__name__}: {exc})") from exc

    def _add(self, chunk: ChatCompletionChunk) -> str:
        # The openai package builds chunks without validating them: a field the server left
        # out is None and a field of the wrong shape is kept as sent. Check what we read.
        if not isinstance(chunk.choices, list):
            raise UnreadableChunk(f"a chunk has no list of choices (got {_short(chunk.choices)})")
        self.chunks += 1
        if chunk.model:
            self.model = chunk.model
        if chunk.usage is not None:
            details = chunk.usage.prompt_tokens_details
            cached = details.cached_tokens if details is not None else None
            self.usage = Usage(
                prompt_tokens=int(chunk.usage.prompt_tokens or 0),
                completion_tokens=int(chunk.usage.completion_tokens or 0),
                cached_tokens=int(cached or 0),
            )
        text = ""
        for choice in chunk.choices:
            if not isinstance(choice, Choice):
                raise UnreadableChunk(f"a chunk's choice is not an object (got {_short(choice)})")
            if choice.index:  # we ask for one choice; ignore any other
                continue
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    text += str(delta.content)
                for position, piece in enumerate(delta.tool_calls or ()):
                    if not isinstance(piece, ChoiceDeltaToolCall):
                        raise UnreadableChunk(f"a chunk's tool call is not an object (got {_short(piece)})")
                    index = piece.index if isinstance(piece.index, int) else position
                    partial = self._calls.setdefault(index, _PartialCall())
                    if piece.id and not partial.id:
                        partial.id = piece.id
                    function = piece.function
                    if function is not None:
                        # Some servers repeat the whole name in every piece: keep it once.
                        if function.name and function.name != partial.name:
                            partial.name += function.name
                        if function.arguments:
                            partial.arguments.append(str(function.arguments))
            if choice.finish_reason:
                self.finish_reason = str(choice.finish_reason)
        self._text.append(text)
        return text

    def reply(self, requested_model: str) -> ModelReply:
        """The whole reply.

        Raises:
            UnreadableChunk: No chunk came, or a tool call came without a name.
            TransientModelError: The stream ended before the model said it had finished.
        """
        if self.chunks == 0:
            raise UnreadableChunk("the stream held no chat-completion chunks (does it support stream=True?)")
        if self.finish_reason is None:
            raise TransientModelError(
                FailureKind.SERVER,
                "the stream ended before the model finished (no finish_reason): the connection was cut",
            )
        calls = []
        for position, (_, partial) in enumerate(sorted(self._calls.items())):
            if not partial.name:
                raise UnreadableChunk(f"tool call {position} came without a function name")
            calls.append(
                ToolCall(
                    id=partial.id or f"call_{self.call_index}_{position}",
                    name=partial.name,
                    arguments="".join(partial.arguments),
                )
            )
        return ModelReply(
            text="".join(self._text),
            tool_calls=tuple(calls),
            model=self.model or requested_model,
            usage=self.usage if self.usage is not None else Usage(),
        )


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

from __future__ import annotations

from livecontext.protocol.history import ChatMessage, ModelRequest, Role, ToolCall
from livecontext.runtime.models import EchoModel


def _request(*messages: ChatMessage) -> ModelRequest:
    return ModelRequest(messages=messages)


async def test_echo_answers_with_the_last_user_message() -> None:
    reply = await EchoModel().complete(
        _request(
            ChatMessage(Role.SYSTEM, "be brief"),
            ChatMessage(Role.USER, "first"),
            ChatMessage(Role.ASSISTANT, "echo: first"),
            ChatMessage(Role.USER, "second"),
        )
    )
    assert reply.text == "echo: second"
    assert reply.tool_calls == ()
    assert reply.model == "echo"


async def test_echo_answers_with_a_tool_result_when_it_is_the_last_thing_said() -> None:
    call = ToolCall(id="c1", name="read", arguments="{}")
    reply = await EchoModel().complete(
        _request(
            ChatMessage(Role.USER, "read it"),
            ChatMessage(Role.ASSISTANT, "", tool_calls=(call,)),
            ChatMessage(Role.TOOL, "file contents", tool_call_id="c1"),
        )
    )
    assert reply.text == "echo: file contents"


async def test_echo_says_so_when_there_is_nothing_to_echo() -> None:
    reply = await EchoModel().complete(_request(ChatMessage(Role.SYSTEM, "be brief")))
    assert reply.text == "echo: (nothing to echo)"


async def test_echo_streams_its_answer_in_several_pieces() -> None:
    pieces: list[str] = []
    reply = await EchoModel().complete(
        _request(ChatMessage(Role.USER, "one two three four five six")), pieces.append
    )
    assert len(pieces) > 1
    assert "".join(pieces) == reply.text == "echo: one two three four five six"


async def test_echo_is_named_echo_and_closes_without_fuss() -> None:
    async with EchoModel() as model:
        assert model.name == "echo"

"""OpenAIModel against a real local HTTP server, through the real ``openai`` client."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator

import pytest
import trio

from livecontext.protocol.history import ChatMessage, ModelRequest, Role, ToolCall, ToolSpec, Usage
from livecontext.runtime import UsageError
from livecontext.runtime.models import (
    FailureKind,
    IncompatibleServerError,
    ModelCallFailed,
    ModelRequestRejected,
    OpenAIModel,
    RetryingModel,
    RetryPolicy,
    TransientModelError,
)
from tests.support.openai_server import (
    Garbage,
    OpenAIServer,
    Status,
    Stream,
    chunk,
    serve_openai,
    text_stream,
    tool_call_delta,
    usage_chunk,
)

# After each stream, the openai package leaves its SSE generators for the garbage collector,
# which under trio reports them (pyproject filters the openai._streaming ones); httpx2's and
# httpcore2's generators below them are reported the same way.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2\\.:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2\\.:ResourceWarning"),
]

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)
REQUEST = ModelRequest(messages=(ChatMessage(Role.USER, "hi"),))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with serve_openai() as running:
        yield running


def _model(server: OpenAIServer, **options: object) -> OpenAIModel:
    return OpenAIModel("test-model", base_url=server.base_url, api_key="test-key", **options)  # type: ignore[arg-type]


async def test_streamed_text_is_reassembled_and_each_delta_reaches_on_text(server: OpenAIServer) -> None:
    server.script(text_stream("Hel", "lo", ", world"))
    pieces: list[str] = []
    async with _model(server) as model:
        reply = await model.complete(REQUEST, pieces.append)
    assert pieces == ["Hel", "lo", ", world"]
    assert reply.text == "Hello, world"
    assert reply.tool_calls == ()
    assert reply.model == "test-model"
    assert reply.usage == Usage(prompt_tokens=11, completion_tokens=7)


async def test_messages_and_tools_are_sent_in_openai_form(server: OpenAIServer) -> None:
    server.script(text_stream("ok"))
    call = ToolCall(id="call_0_0", name="read_file", arguments='{"path": "a.txt"}')
    request = ModelRequest(
        messages=(
            ChatMessage(Role.SYSTEM, "be brief"),
            ChatMessage(Role.USER, "read a.txt"),
            ChatMessage(Role.ASSISTANT, "", tool_calls=(call,)),
            ChatMessage(Role.TOOL, "hello", tool_call_id="call_0_0"),
        ),
        tools=(ToolSpec("read_file", "Read a file.", '{"type": "object", "properties": {"path": {"type": "string"}}}'),),
        call_index=1,
    )
    async with _model(server) as model:
        await model.complete(request)
    [received] = server.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer test-key"
    body = received.body
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "read a.txt"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0_0",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0_0", "content": "hello"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]


async def test_no_tools_key_is_sent_when_there_are_no_tools(server: OpenAIServer) -> None:
    server.script(text_stream("ok"))
    async with _model(server) as model:
        await model.complete(REQUEST)
    assert "tools" not in server.requests[0].body


async def test_tool_calls_are_assembled_from_pieces_split_over_chunks(server: OpenAIServer) -> None:
    server.script(
        Stream(
            [
                chunk(role="assistant", content="Let me look."),
                chunk(tool_calls=[tool_call_delta(0, id="call_abc", name="read_file", arguments="")]),
                chunk(tool_calls=[tool_call_delta(0, arguments='{"pa')]),
                chunk(tool_calls=[tool_call_delta(0, arguments='th": "a.')]),
                chunk(tool_calls=[tool_call_delta(0, arguments='txt"}')]),
                chunk(tool_calls=[tool_call_delta(1, id="call_def", name="grep", arguments='{"pattern"')]),
                chunk(tool_calls=[tool_call_delta(1, arguments=': "TODO"}')]),
                chunk(finish_reason="tool_calls"),
                usage_chunk(20, 30),
            ]
        )
    )
    async with _model(server) as model:
        reply = await model.complete(REQUEST)
    assert reply.text == "Let me look."
    assert reply.tool_calls == (
        ToolCall(id="call_abc", name="read_file", arguments='{"path": "a.txt"}'),
        ToolCall(id="call_def", name="grep", arguments='{"pattern": "TODO"}'),
    )
    assert json.loads(reply.tool_calls[0].arguments) == {"path": "a.txt"}
    assert reply.usage == Usage(prompt_tokens=20, completion_tokens=30)


async def test_tool_calls_without_ids_get_deterministic_ones(server: OpenAIServer) -> None:
    server.script(
        Stream(
            [
                chunk(tool_calls=[tool_call_delta(0, name="now", arguments="{}")]),
                chunk(finish_reason="tool_calls"),
            ]
        )
    )
    async with _model(server) as model:
        reply = await model.complete(ModelRequest(messages=REQUEST.messages, call_index=4))
    assert reply.tool_calls == (ToolCall(id="call_4_0", name="now", arguments="{}"),)


async def test_a_stream_without_usage_is_fine_and_usage_can_be_left_unasked(server: OpenAIServer) -> None:
    server.script(text_stream("ok", usage=None))
    async with _model(server, include_usage=False) as model:
        reply = await model.complete(REQUEST)
    assert reply.usage == Usage()
    assert "stream_options" not in server.requests[0].body


def _usage_stream(usage: dict[str, object]) -> Stream:
    return Stream([chunk(content="ok"), chunk(finish_reason="stop"),
                   {**usage_chunk(0, 0), "usage": usage}])


async def test_cached_tokens_reported_in_the_final_usage_chunk_are_read(server: OpenAIServer) -> None:
    server.script(Stream([chunk(content="ok"), chunk(finish_reason="stop"),
                          usage_chunk(1200, 40, cached_tokens=1024)]))
    async with _model(server) as model:
        reply = await model.complete(REQUEST)
    assert reply.usage == Usage(prompt_tokens=1200, completion_tokens=40, cached_tokens=1024)


@pytest.mark.parametrize("details", [{}, {"prompt_tokens_details": None},
                                     {"prompt_tokens_details": {"audio_tokens": 0}}])
async def test_a_usage_without_cached_tokens_reads_as_none_cached(
    server: OpenAIServer, details: dict[str, object]
) -> None:
    server.script(_usage_stream({"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35, **details}))
    async with _model(server) as model:
        reply = await model.complete(REQUEST)
    assert reply.usage == Usage(prompt_tokens=30, completion_tokens=5, cached_tokens=0)


async def test_cached_tokens_that_are_not_a_number_are_blamed_on_the_server(server: OpenAIServer) -> None:
    server.script(_usage_stream({"prompt_tokens": 30, "completion_tokens": 5,
                                 "prompt_tokens_details": {"cached_tokens": "many"}}))
    async with _model(server) as model:
        with pytest.raises(IncompatibleServerError, match=re.escape(server.base_url)):
            await model.complete(REQUEST)


async def test_the_thread_id_is_sent_as_the_prompt_cache_key(server: OpenAIServer) -> None:
    server.script(text_stream("ok"), text_stream("ok"))
    async with _model(server) as model:
        await model.complete(ModelRequest(messages=REQUEST.messages, thread_id="research-7"))
        await model.complete(REQUEST)  # (no thread: no key)
    first, second = server.requests
    assert first.body["prompt_cache_key"] == "research-7"
    assert "prompt_cache_key" not in second.body


async def test_the_prompt_cache_key_can_be_left_unsent(server: OpenAIServer) -> None:
    server.script(text_stream("ok"))
    async with _model(server, send_cache_key=False) as model:
        await model.complete(ModelRequest(messages=REQUEST.messages, thread_id="research-7"))
    assert "prompt_cache_key" not in server.requests[0].body


async def test_a_server_refusing_the_prompt_cache_key_says_how_to_stop_sending_it(server: OpenAIServer) -> None:
    server.script(Status(400, "Unrecognized request argument supplied: prompt_cache_key", "invalid_request_error"))
    async with _model(server) as model:
        with pytest.raises(ModelRequestRejected, match=r"send_cache_key=False"):
            await model.complete(ModelRequest(messages=REQUEST.messages, thread_id="t1"))


async def test_a_429_is_a_transient_rate_limit_with_its_retry_after(server: OpenAIServer) -> None:
    server.script(Status(429, "slow down", retry_after="2"))
    async with _model(server) as model:
        with pytest.raises(TransientModelError, match="^rate_limit: HTTP 429: slow down$") as info:
            await model.complete(REQUEST)
    assert info.value.kind is FailureKind.RATE_LIMIT
    assert info.value.retry_after_s == 2.0


async def test_a_500_is_a_transient_server_error(server: OpenAIServer) -> None:
    server.script(Status(500, "boom"))
    async with _model(server) as model:
        with pytest.raises(TransientModelError, match="^server: HTTP 500: boom$"):
            await model.complete(REQUEST)


@pytest.mark.parametrize("failure", [Status(429, "slow down"), Status(500, "boom"), Status(503, "overloaded")])
async def test_a_failed_attempt_is_retried_and_the_next_answer_is_used(
    server: OpenAIServer, failure: Status
) -> None:
    server.script(failure, text_stream("fine"))
    async with RetryingModel(_model(server), FAST) as model:
        reply = await model.complete(REQUEST)
    assert reply.text == "fine"
    assert len(server.requests) == 2


async def test_retries_give_up_when_the_server_keeps_failing(server: OpenAIServer) -> None:
    server.script(Status(500, "boom"), Status(502, "bad gateway"), Status(429, "slow down"))
    async with RetryingModel(_model(server), FAST) as model:
        with pytest.raises(ModelCallFailed, match="^model call failed after 3 attempts: rate_limit: HTTP 429: slow down;"):
            await model.complete(REQUEST)
    assert len(server.requests) == 3


async def test_a_refused_request_is_not_retried_and_says_what_to_check(server: OpenAIServer) -> None:
    server.script(Status(404, "The model `test-model` does not exist", "invalid_request_error"))
    async with RetryingModel(_model(server), FAST) as model:
        with pytest.raises(
            ModelRequestRejected,
            match=r"^the model server refused the request with HTTP 404: The model `test-model` does not exist; "
            r"check the model name 'test-model' and the base URL http://127\.0\.0\.1:\d+/v1$",
        ) as info:
            await model.complete(REQUEST)
    assert info.value.status == 404
    assert len(server.requests) == 1


async def test_a_bad_key_points_at_the_key(server: OpenAIServer) -> None:
    server.script(Status(401, "Incorrect API key provided", "invalid_request_error"))
    async with _model(server) as model:
        with pytest.raises(ModelRequestRejected, match=r"HTTP 401: Incorrect API key provided; check the API key"):
            await model.complete(REQUEST)


@pytest.mark.parametrize(
    ("garbage", "what"),
    [
        (Garbage(b"data: this is not json\n\n"), "an event's data is not JSON"),
        (Garbage(b"<html><body>Welcome to nginx</body></html>", "text/html"), "the stream held no chat-completion"),
        (Garbage(b'data: {"hello": "world"}\n\ndata: [DONE]\n\n'), r"a chunk has no list of choices \(got None\)"),
        (Garbage(b'data: {"choices": "many"}\n\n'), r"a chunk has no list of choices \(got 'many'\)"),
        (Garbage(b'data: {"choices": [7]}\n\n'), r"a chunk's choice is not an object \(got 7\)"),
    ],
)
async def test_garbage_from_the_server_is_a_model_error_not_a_hang(
    server: OpenAIServer, garbage: Garbage, what: str
) -> None:
    server.script(garbage)
    async with RetryingModel(_model(server), FAST) as model:
        with trio.fail_after(5):
            with pytest.raises(IncompatibleServerError, match=f"returned something not OpenAI-compatible: {what}"):
                await model.complete(REQUEST)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        b'data: {"choices": [{"index": 0, "delta": {"content": "bad \xff\xfe"}}]}\n\ndata: [DONE]\n\n',
        b"\xff\xfe\x00garbage",
    ],
    ids=["in-a-chunk", "the-whole-body"],
)
async def test_bytes_that_are_not_utf8_are_blamed_on_the_server(server: OpenAIServer, body: bytes) -> None:
    server.script(Garbage(body))
    async with RetryingModel(_model(server), FAST) as model:
        with trio.fail_after(5):
            with pytest.raises(IncompatibleServerError, match=(
                    rf"^the server at {re.escape(server.base_url)} returned something not OpenAI-compatible: "
                    r"its answer is not valid UTF-8 \(byte 0xff")):
                await model.complete(REQUEST)
    assert len(server.requests) == 1


async def test_a_stream_cut_mid_way_is_a_transient_server_error(server: OpenAIServer) -> None:
    server.script(Stream([chunk(role="assistant", content="Hel"), chunk(content="lo")], cut=True))
    pieces: list[str] = []
    async with _model(server) as model:
        with trio.fail_after(5):
            with pytest.raises(TransientModelError, match="^server: the connection to .* failed:") as info:
                await model.complete(REQUEST, pieces.append)
    assert info.value.kind is FailureKind.SERVER
    assert pieces == ["Hel", "lo"]


async def test_a_stream_that_ends_before_the_model_finished_is_a_transient_server_error(
    server: OpenAIServer,
) -> None:
    server.script(Stream([chunk(role="assistant", content="Hel")], done=False))
    async with _model(server) as model:
        with pytest.raises(TransientModelError, match="^server: the stream ended before the model finished"):
            await model.complete(REQUEST)


async def test_a_cut_stream_is_retried_from_the_start(server: OpenAIServer) -> None:
    server.script(Stream([chunk(role="assistant", content="Hel")], cut=True), text_stream("Hel", "lo"))
    pieces: list[str] = []
    async with RetryingModel(_model(server), FAST) as model:
        reply = await model.complete(REQUEST, pieces.append)
    assert reply.text == "Hello"
    assert pieces == ["Hel", "Hel", "lo"]


async def test_an_error_event_mid_stream_is_a_transient_server_error(server: OpenAIServer) -> None:
    server.script(
        Stream([chunk(role="assistant", content="Hel"), {"error": {"message": "overloaded", "type": "server_error"}}])
    )
    async with _model(server) as model:
        with pytest.raises(TransientModelError, match="^server: the server reported an error mid-stream: overloaded$"):
            await model.complete(REQUEST)


async def test_a_server_slow_to_answer_times_out(server: OpenAIServer) -> None:
    server.script(text_stream("late", headers_delay_s=30))
    async with _model(server, timeout_s=0.2) as model:
        with trio.fail_after(5):
            with pytest.raises(TransientModelError, match="^timeout: ") as info:
                await model.complete(REQUEST)
    assert info.value.kind is FailureKind.TIMEOUT


async def test_a_stream_that_stalls_times_out(server: OpenAIServer) -> None:
    server.script(Stream([chunk(role="assistant", content="Hel"), chunk(content="lo")], chunk_delay_s=30))
    async with _model(server, timeout_s=0.2) as model:
        with trio.fail_after(5):
            with pytest.raises(TransientModelError, match="^timeout: "):
                await model.complete(REQUEST)


async def test_a_cancel_scope_cancels_a_call_waiting_for_the_server_promptly(server: OpenAIServer) -> None:
    server.script(text_stream("late", headers_delay_s=30))
    async with _model(server) as model:
        start = trio.current_time()
        with trio.move_on_after(0.2) as scope:
            await model.complete(REQUEST)
        assert scope.cancelled_caught
        assert trio.current_time() - start < 1.5


async def test_a_cancel_scope_cancels_a_call_in_the_middle_of_its_stream(server: OpenAIServer) -> None:
    server.script(
        Stream([chunk(role="assistant", content="Hel"), chunk(content="lo")], chunk_delay_s=0.05, done=False),
        text_stream("next"),
    )
    pieces: list[str] = []
    async with RetryingModel(_model(server), FAST) as model:
        with trio.move_on_after(30) as scope:

            def cancel_after_first(piece: str) -> None:
                pieces.append(piece)
                scope.cancel()

            await model.complete(REQUEST, cancel_after_first)
        assert scope.cancelled_caught
        assert pieces == ["Hel"]
        # The client is still usable after a cancelled call.
        assert (await model.complete(REQUEST)).text == "next"


async def test_an_unreachable_server_is_a_transient_server_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k") as model:
        with pytest.raises(TransientModelError, match="^server: the connection to http://127.0.0.1:.* failed"):
            await model.complete(REQUEST)


async def test_the_base_url_and_key_come_from_the_environment(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    server.script(text_stream("ok"))
    async with OpenAIModel("test-model") as model:
        assert model.name == "openai:test-model"
        assert (await model.complete(REQUEST)).text == "ok"
    assert server.requests[0].headers["authorization"] == "Bearer env-key"


async def test_a_missing_key_is_a_usage_error_naming_the_variable_and_the_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(
        UsageError, match=re.escape(
            "no API key for openai:gpt-4o-mini: set the OPENAI_API_KEY environment variable, or give one "
            "(--api-key on the command line, api_key= in Python; for a local server that ignores keys, any value "
            "will do)")
    ):
        OpenAIModel("gpt-4o-mini")


async def test_a_tool_message_without_its_call_id_is_a_usage_error(server: OpenAIServer) -> None:
    request = ModelRequest(messages=(ChatMessage(Role.TOOL, "orphan"),))
    async with _model(server) as model:
        with pytest.raises(UsageError, match="message 0 is a tool message without a tool_call_id"):
            await model.complete(request)
    assert server.requests == []


async def test_a_tool_schema_that_is_not_json_is_a_usage_error(server: OpenAIServer) -> None:
    request = ModelRequest(messages=REQUEST.messages, tools=(ToolSpec("t", "d", "{not json"),))
    async with _model(server) as model:
        with pytest.raises(UsageError, match="tool 't' has a parameters_json that is not JSON"):
            await model.complete(request)

"""The engine with the real ``openai`` client, against a local OpenAI-compatible SSE server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from livecontext.actors.apps import Notebook
from livecontext.protocol.agent import IdleReason, ModelTextDelta
from livecontext.protocol.history import (
    EngineState,
    ModelOutputEntry,
    ToolCall,
    ToolResultsEntry,
    ToolStatus,
    Usage,
    UsageTotals,
)
from livecontext.runtime.models import OpenAIModel, RetryingModel, RetryPolicy
from tests.support.agent_harness import AgentHarness, open_agent
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

S = EngineState
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with serve_openai() as running:
        yield running


@asynccontextmanager
async def openai_agent(server: OpenAIServer, inputs: list[str]) -> AsyncIterator[AgentHarness]:
    async with OpenAIModel("test-model", base_url=server.base_url, api_key="test-key") as raw:
        async with open_agent(model=RetryingModel(raw, FAST), inputs=inputs, apps=[Notebook()]) as h:
            yield h


def split_tool_call() -> Stream:
    """A tool call whose id, name and arguments arrive over several chunks."""
    return Stream([
        chunk(role="assistant", content="Writing it down."),
        chunk(tool_calls=[tool_call_delta(0, id="call_abc", name="notebook_replace", arguments='{"old_')]),
        chunk(tool_calls=[tool_call_delta(0, arguments='text": "", "new')]),
        chunk(tool_calls=[tool_call_delta(0, arguments='_text": "buy milk"}')]),
        chunk(finish_reason="tool_calls"),
        usage_chunk(20, 9),
    ])


async def test_a_streamed_tool_call_is_assembled_run_and_answered(server: OpenAIServer) -> None:
    server.script(split_tool_call(), text_stream("Noted: ", "buy milk."))
    async with openai_agent(server, ["remember to buy milk"]) as h:
        idle = await h.run_until_idle()
        assert (idle.state, idle.reason) == (S.WAITING_INPUT, IdleReason.NO_INPUT)
        entries = await h.entries()
        output = entries[1]
        assert isinstance(output, ModelOutputEntry)
        assert output.tool_calls == (ToolCall("call_abc", "notebook_replace", '{"old_text": "", "new_text": "buy milk"}'),)
        assert output.content.live.text == "Writing it down."
        assert (output.model, output.usage.prompt_tokens, output.usage.completion_tokens) == ("test-model", 20, 9)
        results = entries[2]
        assert isinstance(results, ToolResultsEntry)
        assert results.results[0].status is ToolStatus.OK
        assert entries[3].content.live.text == "Noted: buy milk."
        assert [e.text for e in await h.effects()] == ["buy milk"]  # type: ignore[attr-defined]
        await h.settle()
        assert "".join(d.text for d in h.of_type(ModelTextDelta)).endswith("Noted: buy milk.")
    second = server.requests[1].body
    assert second["stream"] is True
    roles = [m["role"] for m in second["messages"]]
    assert roles[-3:] == ["assistant", "tool", "user"]
    assert second["messages"][-3]["tool_calls"][0]["id"] == "call_abc"
    assert second["messages"][-2]["tool_call_id"] == "call_abc"
    assert second["messages"][-1]["content"].endswith("[Window: notebook]\nbuy milk")
    assert [t["function"]["name"] for t in second["tools"]] == [
        "notebook_replace", "notebook_replace_span", "task_complete", "task_abandon", "output", "wait_user_response"]


async def test_rate_limits_and_server_errors_are_retried_within_one_step(server: OpenAIServer) -> None:
    server.script(Status(429, "slow down", retry_after="0"), Status(503, "busy"), text_stream("hello"))
    async with openai_agent(server, ["hi"]) as h:
        await h.step()
        done = await h.step()
        assert (done.to_state, done.progressed, done.error) == (S.WAITING_INPUT, True, "")
        assert len(server.requests) == 3


async def test_a_garbage_answer_fails_the_step_cleanly_and_the_history_is_untouched(server: OpenAIServer) -> None:
    server.script(Garbage(b"<html>this is not an event stream</html>"), text_stream("recovered"))
    async with openai_agent(server, ["hi"]) as h:
        await h.step()
        before = await h.entries()
        done = await h.step()
        assert (done.from_state, done.to_state, done.progressed) == (S.PENDING_INPUT, S.PENDING_INPUT, False)
        assert server.base_url in done.error
        assert await h.entries() == before
        done = await h.step()
        assert done.progressed
        assert (await h.entries())[-1].content.live.text == "recovered"


async def test_a_stream_cut_every_time_fails_after_the_retries_and_the_history_is_untouched(
    server: OpenAIServer,
) -> None:
    cut = Stream([chunk(role="assistant", content="Half an ans"),
                  chunk(tool_calls=[tool_call_delta(0, id="c", name="notebook_replace", arguments='{"old')])],
                 cut=True)
    server.script(cut, cut, cut, text_stream("whole answer"))
    async with openai_agent(server, ["hi"]) as h:
        await h.step()
        before = await h.entries()
        done = await h.step()
        assert not done.progressed
        assert done.error.startswith("model call failed after 3 attempts")
        assert await h.entries() == before
        assert (await h.tail()).state is S.PENDING_INPUT
        done = await h.step()
        assert done.progressed
        (output,) = [e for e in await h.entries() if isinstance(e, ModelOutputEntry)]
        assert (output.content.live.text, output.tool_calls) == ("whole answer", ())


async def test_a_stream_that_ends_without_finishing_is_not_recorded(server: OpenAIServer) -> None:
    unfinished = Stream([chunk(role="assistant", content="no finish reason")], done=True)
    server.script(unfinished, unfinished, unfinished)
    async with openai_agent(server, ["hi"]) as h:
        await h.step()
        done = await h.step()
        assert "the stream ended before the model finished" in done.error
        assert len(await h.entries()) == 1


async def test_the_servers_usage_cached_tokens_included_is_recorded_and_summed_over_the_thread(
    server: OpenAIServer,
) -> None:
    def answer(text: str, prompt: int, cached: int, completion: int) -> Stream:
        return Stream([chunk(role="assistant", content=text), chunk(finish_reason="stop"),
                       usage_chunk(prompt, completion, cached_tokens=cached)])

    server.script(answer("one", 900, 0, 12), answer("two", 1300, 896, 20))
    async with openai_agent(server, ["first", "second"]) as h:
        await h.run_until_idle()
        outputs = [e for e in await h.entries() if isinstance(e, ModelOutputEntry)]
        assert [o.usage for o in outputs] == [Usage(900, 12, 0), Usage(1300, 20, 896)]
        assert (await h.tail()).usage == UsageTotals(input_tokens=2200, cached_input_tokens=896,
                                                      output_tokens=32, model_calls=2)
    assert [r.body["prompt_cache_key"] for r in server.requests] == ["t1", "t1"]

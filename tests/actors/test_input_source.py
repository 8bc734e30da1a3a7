"""The input source: buffers input for the engine to pull, and wakes the engine up."""

from __future__ import annotations

from livecontext.protocol import InputText, PullInput
from tests.actors.agent_harness import open_agent


async def test_input_is_pulled_in_order_one_line_at_a_time() -> None:
    async with open_agent(inputs=["a", "b"]) as h:
        await h.provide("c")
        pulled = [await h.client.ask(h.agent.input, PullInput()) for _ in range(4)]
        assert pulled == [InputText("a", 2), InputText("b", 1), InputText("c", 0), InputText(None, 0)]


async def test_input_for_a_stopped_engine_stays_buffered_and_the_source_keeps_running() -> None:
    async with open_agent() as h:
        await h.rt.stop(h.agent.engine)
        await h.provide("later")
        assert h.rt.is_running(h.agent.input)
        assert await h.client.ask(h.agent.input, PullInput()) == InputText("later", 0)

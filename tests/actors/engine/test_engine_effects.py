"""The engine and tools with side effects: what the model is told when such a call is cut short."""

from __future__ import annotations

import trio

from livecontext import ToolContext, idempotency_key
from livecontext.actors.apps import App, ToolOutcome, tool
from livecontext.protocol.history import EngineState, ModelReply, ModelRequest, ToolCall, ToolResultsEntry, ToolStatus
from livecontext.runtime.models import ModelClient

from tests.support.agent_harness import open_agent

S = EngineState
TURNS = [{"tool_calls": [{"name": "transfer", "arguments": {}}]}, {"text": "checked"}]


class Wire(App):
    name = "wire"

    def __init__(self) -> None:
        self.started = trio.Event()
        self.keys: list[str] = []

    def fresh(self) -> Wire:
        return self

    @tool(side_effects=True)
    async def transfer(self, ctx: ToolContext) -> ToolOutcome:
        """Wire money, slowly."""
        self.keys.append(ctx.key)
        self.started.set()
        await trio.sleep_forever()
        raise AssertionError("not reached")


async def test_a_side_effecting_tool_past_the_tool_timeout_is_reported_unknown_with_its_key() -> None:
    wire = Wire()
    async with open_agent(TURNS, inputs=["go"], apps=[wire], tool_timeout_s=0.2) as h:
        await h.step()
        await h.step()
        done = await h.step()
        assert done.to_state is S.TOOL_RESULTS_READY
        (result,) = (await h.tail()).recorded
    key = idempotency_key("t1", "e2", "call_0_0")
    assert wire.keys == [key]
    assert result.status is ToolStatus.FAILED
    assert "outcome is unknown" in result.content.live.text and key in result.content.live.text


async def test_a_cancelled_side_effecting_tool_is_not_run_again_and_the_model_gets_its_key() -> None:
    wire = Wire()
    async with open_agent(TURNS, inputs=["go"], apps=[wire]) as h:
        await h.step()
        await h.step()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.step)
            await wire.started.wait()
            await h.cancel()
        assert (await h.tail()).started == ("call_0_0",)
        await h.step()
        await h.step()
        results = (await h.entries())[-1]
    key = idempotency_key("t1", "e2", "call_0_0")
    assert wire.keys == [key]  # not run again
    assert isinstance(results, ToolResultsEntry)
    (result,) = results.results
    assert result.status is ToolStatus.INTERRUPTED
    assert result.content.live.text.startswith("outcome unknown") and key in result.content.live.text


class SameIds(ModelClient):
    """A server that numbers its calls afresh in every answer: ``call_0`` each time."""

    name = "same-ids"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ModelRequest, on_text: object = None) -> ModelReply:
        self.calls += 1
        if self.calls > 2:
            return ModelReply("done", ())
        return ModelReply("", (ToolCall("call_0", "note", "{}"),))


class Notes(App):
    name = "notes"

    def __init__(self) -> None:
        self.keys: list[str] = []

    def fresh(self) -> Notes:
        return self

    @tool(side_effects=True)
    def note(self, ctx: ToolContext) -> str:
        """Write a note somewhere outside."""
        self.keys.append(ctx.key)
        return "noted"


async def test_two_calls_with_one_id_in_two_outputs_get_two_keys() -> None:
    notes = Notes()
    async with open_agent(model=SameIds(), inputs=["go"], apps=[notes]) as h:
        await h.run_until_idle()
    first, second = notes.keys
    assert first != second
    assert first == idempotency_key("t1", "e2", "call_0") and second == idempotency_key("t1", "e4", "call_0")

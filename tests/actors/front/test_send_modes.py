"""``Agent.send(..., mode=...)``: an input that interrupts, terminates or is silent is given at
once, not behind the run in progress."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

import livecontext
from livecontext import Reply, TaskStatus
from livecontext.protocol.agent import InputMode
from livecontext.protocol.history import ModelInputEntry, ToolResultsEntry, ToolStatus
from livecontext.runtime.models import ScriptedModel

from tests.support.clock import PROMPT_S, virtual_seconds

HOUR = 3600.0


async def wait_an_hour(label: str) -> str:
    """Wait an hour, then say so.

    Args:
        label: What to wait for.
    """
    await trio.sleep(HOUR)
    return f"waited for {label}"


def scripted(*turns: dict[str, object]) -> ScriptedModel:
    return ScriptedModel.from_turns(list(turns))


def waits() -> dict[str, object]:
    return {"tool_calls": [{"name": "wait_an_hour", "arguments": json.dumps({"label": "rain"})}]}


async def _send_in_background(agent: livecontext.Agent, nursery: trio.Nursery, text: str) -> list[Reply]:
    replies: list[Reply] = []

    async def send() -> None:
        replies.append(await agent.send(text))

    nursery.start_soon(send)
    await trio.testing.wait_all_tasks_blocked()
    return replies


async def test_an_interrupting_send_cuts_the_run_in_progress_and_returns_the_reply_of_the_run_that_answered_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = scripted(waits(), {"text": "Fine, no waiting."})
    async with livecontext.open_agent(model=model, tools=[wait_an_hour]) as agent:
        async with trio.open_nursery() as nursery:
            first = await _send_in_background(agent, nursery, "wait for rain")
            reply = await agent.send("don't wait", mode="interrupt")
        assert virtual_seconds() < PROMPT_S
        assert first == [reply]  # one run answered both
        assert reply.text == "Fine, no waiting." and reply.reason == "no_input"
        history = await agent.history()
    results = next(e for e in history if isinstance(e, ToolResultsEntry))
    assert results.results[0].status is ToolStatus.INTERRUPTED
    assert [e.text for e in history if isinstance(e, ModelInputEntry)] == ["wait for rain", "don't wait"]


async def test_a_terminating_send_ends_the_run_in_progress_and_both_replies_say_terminated(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = scripted(waits(), {"text": "new task"})
    async with livecontext.open_agent(model=model, tools=[wait_an_hour]) as agent:
        async with trio.open_nursery() as nursery:
            first = await _send_in_background(agent, nursery, "wait for rain")
            reply = await agent.send("it is sunny", mode=InputMode.TERMINATE)
        assert virtual_seconds() < PROMPT_S
        (ran,) = first
        for r in (ran, reply):
            assert (r.status.status, r.status.reason, r.text, r.reason) == (
                TaskStatus.TERMINATED, "it is sunny", "it is sunny", "terminated")
        again = await agent.send("new task please")
        assert again.status.status is TaskStatus.WAITING_USER and again.text == "new task"


async def test_a_silent_send_runs_nothing_and_the_next_turn_reads_it() -> None:
    async with livecontext.open_agent(model="echo") as agent:
        await agent.send("hello")
        reply = await agent.send("the user is away", mode="silent")
        assert (reply.steps, reply.reason, reply.status.status) == (0, "silent", TaskStatus.WAITING_USER)
        assert len(await agent.history()) == 2
        answer = await agent.send("what did you hear?")
    assert "silent input from" in answer.text and "the user is away" in answer.text


async def test_an_unknown_mode_is_one_line_listing_the_modes() -> None:
    async with livecontext.open_agent(model="echo") as agent:
        with pytest.raises(livecontext.UsageError,
                           match=r"^unknown input mode 'loud': use one of queue, interrupt, terminate, silent$"):
            await agent.send("hi", mode="loud")
        assert await agent.history() == ()

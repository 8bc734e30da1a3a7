"""The input source: buffers input for the engine to pull, and wakes the engine up."""

from __future__ import annotations

import collections

import pytest
import trio
import trio.testing
from livecontext.actors import InputSource
from livecontext.actors.agent import give_input
from livecontext.protocol.agent import InputAvailable, InputMode, InputText, ProvideInput, PullInput
from livecontext.protocol.kernel import Message
from livecontext.runtime import Actor, RestartPolicy, UsageError, handler, open_runtime
from tests.support.agent_harness import open_agent


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


class Crash(Message):
    """Makes the source below fail, so that it restarts."""


class CrashingSource(InputSource):
    @handler
    async def on_crash(self, msg: Crash) -> None:
        raise RuntimeError("crashed on purpose")


async def test_a_restarted_source_keeps_what_was_not_pulled_and_brings_back_nothing_pulled() -> None:
    async with open_runtime() as rt:
        client = rt.client("test")
        shared = collections.deque([ProvideInput("a"), ProvideInput("b")])  # made once, as spawn_agent does
        source = await rt.spawn(lambda: CrashingSource(buffer=shared),
                                "input/t", restart=RestartPolicy(backoff_initial_s=0.0))
        assert await client.ask(source, PullInput()) == InputText("a", 1)
        await client.tell(source, ProvideInput("c"))
        await client.tell(source, Crash())
        await trio.testing.wait_all_tasks_blocked()  # restarted (no backoff) and waiting
        assert rt.statistics().restarts == 1
        pulled = [await client.ask(source, PullInput()) for _ in range(3)]
        assert pulled == [InputText("b", 1), InputText("c", 0), InputText(None, 0)]


class SlowListener(Actor):
    """Stands in for the engine: a one-message mailbox, and a handler that waits for a gate."""

    def __init__(self, gate: trio.Event, woken: list[str]) -> None:
        self.gate = gate
        self.woken = woken

    @handler
    async def on_available(self, msg: InputAvailable) -> None:
        await self.gate.wait()
        self.woken.append("input available")


async def test_input_provided_while_the_engines_mailbox_is_full_still_wakes_it_later() -> None:
    gate, woken = trio.Event(), []
    async with open_runtime() as rt:
        client = rt.client("test")
        listener = await rt.spawn(lambda: SlowListener(gate, woken), "engine/t", mailbox_size=1)
        source = await rt.spawn(lambda: InputSource(notify=listener.id), "input/t")
        await client.tell(listener, InputAvailable())  # handled, stuck at the gate
        await trio.testing.wait_all_tasks_blocked()
        await client.tell(listener, InputAvailable())  # fills the one-message mailbox
        await client.tell(source, ProvideInput("a"))   # its wake-up finds the mailbox full
        assert await client.ask(source, PullInput()) == InputText("a", 0)  # buffered at once
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert woken == ["input available"] * 3  # the third is the source's, told later


async def test_interrupting_inputs_go_first_in_the_order_they_came_and_queued_ones_wait_behind() -> None:
    async with open_agent(inputs=["queued"]) as h:
        await h.rt.stop(h.agent.engine)  # (nobody pulls: the buffer is what the test reads)
        for text in ("urgent 1", "urgent 2"):
            await h.client.ask(h.agent.input, ProvideInput(text, mode=InputMode.INTERRUPT))
        assert await h.client.ask(h.agent.input, PullInput(urgent=True)) == InputText("urgent 1", 2, urgent=1)
        assert await h.client.ask(h.agent.input, PullInput(urgent=True)) == InputText("urgent 2", 1, urgent=0)
        assert await h.client.ask(h.agent.input, PullInput(urgent=True)) == InputText(None, 1)  # not the queued one
        assert await h.client.ask(h.agent.input, PullInput()) == InputText("queued", 0)


async def test_a_silent_or_terminate_input_without_text_is_refused_in_one_line() -> None:
    async with open_agent() as h:
        with pytest.raises(UsageError, match=r"^a silent input needs text; send text with something in it$"):
            await give_input(h.client, h.agent.input, ProvideInput("  ", mode=InputMode.SILENT))
        with pytest.raises(UsageError, match=r"^a terminate input's text is the reason the task ends; give one$"):
            await give_input(h.client, h.agent.input, ProvideInput("", mode=InputMode.TERMINATE))
        assert (await h.status()).status.value == "waiting_user"  # nothing recorded

"""Dispatch strategies: an interrupting input cuts the model call or the tool in flight and is
taken next; a terminating one ends the task; a silent one is recorded and takes no step."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import trio
import trio.testing

from livecontext.protocol.agent import (
    Idle,
    IdleReason,
    InputMode,
    Interrupt,
    ModelTextDelta,
    ProvideInput,
    StepInterruptedEvent,
    TaskTerminatedEvent,
)
from livecontext.protocol.history import (
    EngineState,
    ModelInputEntry,
    ModelOutputEntry,
    ModelReply,
    ModelRequest,
    Role,
    TaskStatus,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import StepInterrupted, TaskTerminated
from livecontext.protocol.wire import make_converter
from livecontext.runtime.models import ModelClient, TextCallback
from tests.support.clock import PROMPT_S, virtual_seconds
from tests.support.agent_harness import AgentHarness, Probe, ProbeApp, ProbeModel, open_agent, scripted

S = EngineState
HOUR = 3600.0
"""How long the slow things would take: far past any test's end (virtual time)."""


def said(request: ModelRequest) -> list[Any]:
    """The messages of a request, without the apps' windows."""
    return [m for m in request.messages if not m.content.startswith("[Window: ")]


def slow_call(seconds: float = HOUR) -> dict[str, Any]:
    return {"name": "slow", "arguments": {"seconds": seconds}}


async def give(h: AgentHarness, text: str, mode: InputMode) -> None:
    await h.client.ask(h.agent.input, ProvideInput(text, mode=mode))


async def logged_records(h: AgentHarness) -> list[Message]:
    converter = make_converter()
    async with await h.store.open_reader(h.agent.thread_id) as reader:
        return [converter.load_message(json.loads(rec.payload)) for rec in await reader.read()]


@contextlib.asynccontextmanager
async def running(h: AgentHarness, timeout: float = 2 * HOUR) -> AsyncIterator[list[Idle]]:
    """A run until idle in the background while the block runs (the block cuts in); the list
    holds the run's :class:`Idle` once it has ended, after the block."""
    idles: list[Idle] = []
    async with trio.open_nursery() as nursery:
        async def run() -> None:
            idles.append(await h.run_until_idle(timeout=timeout))

        nursery.start_soon(run)
        yield idles


class StreamsThenHangs(ModelClient):
    """Streams two deltas, then waits forever (its first call); answers its later calls."""

    name = "hangs"

    def __init__(self, answers: Sequence[str]) -> None:
        self.requests: list[ModelRequest] = []
        self.answers = list(answers)
        self.streamed = trio.Event()
        self.cancelled = 0

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        if len(self.requests) == 1:
            if on_text is not None:
                on_text("Let me think")
                on_text(" about that")
            self.streamed.set()
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                self.cancelled += 1
                raise
        return ModelReply(self.answers.pop(0), (), "hangs")

    async def aclose(self) -> None:
        pass


async def test_an_interrupt_cancels_a_slow_tool_at_once_and_the_new_input_is_taken_next(
    autojump_clock: trio.testing.MockClock,
) -> None:
    probe = Probe()
    model = ProbeModel(scripted([{"tool_calls": [slow_call()]}, {"text": "Stopped; what now?"}]))
    async with open_agent(model=model, inputs=["sort the files"], apps=[ProbeApp(probe)]) as h:
        async with running(h) as idles:
            await probe.started.wait()
            await give(h, "stop, sort by date instead", InputMode.INTERRUPT)
            interrupted_at = virtual_seconds()
        (idle,) = idles
        # the tool would have slept until 3600 s (virtual): it was cut at once, and the run went on
        assert interrupted_at < PROMPT_S and virtual_seconds() < PROMPT_S
        assert probe.cancelled == ["slow"] and probe.finished == []
        assert (idle.reason, idle.state) == (IdleReason.NO_INPUT, S.WAITING_INPUT)
        entries = await h.entries()
        assert [type(e).__name__ for e in entries] == [
            "ModelInputEntry", "ModelOutputEntry", "ToolResultsEntry", "ModelInputEntry", "ModelOutputEntry"]
        results = entries[2]
        assert isinstance(results, ToolResultsEntry)
        (result,) = results.results
        assert result.status is ToolStatus.INTERRUPTED
        assert result.content.live.text.startswith("interrupted by client/test")
        assert isinstance(entries[3], ModelInputEntry) and entries[3].text == "stop, sort by date instead"
        # the second call saw the cut tool's result, then the new input
        last_two = said(model.requests[1])[-2:]
        assert last_two[0].role is Role.TOOL and "interrupted by client/test" in last_two[0].content
        assert last_two[1].role is Role.USER and last_two[1].content.startswith("stop, sort by date instead")
        records = await logged_records(h)
        assert StepInterrupted("tool slow (call call_0_0)", "client/test") in records
        await h.settle()
        assert [(e.what, e.by) for e in h.of_type(StepInterruptedEvent)] == [
            ("tool slow (call call_0_0)", "client/test")]


async def test_an_interrupt_cancels_a_streaming_model_call_and_the_next_call_sees_the_new_input(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = StreamsThenHangs(["Fine, in French."])
    async with open_agent(model=model, inputs=["write a poem"]) as h:
        async with running(h, timeout=HOUR) as idles:
            await model.streamed.wait()
            await give(h, "in French, please", InputMode.INTERRUPT)
        (idle,) = idles
        assert virtual_seconds() < PROMPT_S  # (not the hour the slow part would have taken)
        assert model.cancelled == 1 and len(model.requests) == 2
        assert idle.reason is IdleReason.NO_INPUT
        records = await logged_records(h)
        assert StepInterrupted("model call", "client/test") in records
        entries = await h.entries()
        assert [(type(e).__name__, getattr(e, "text", "")) for e in entries if isinstance(e, ModelInputEntry)] == [
            ("ModelInputEntry", "write a poem"), ("ModelInputEntry", "in French, please")]
        assert isinstance(entries[-1], ModelOutputEntry) and entries[-1].content.live.text == "Fine, in French."
        users = [m.content for m in said(model.requests[1]) if m.role is Role.USER]
        assert users[-2].startswith("write a poem") and users[-1].startswith("in French, please")
        await h.settle()
        kinds = [type(e) for e in h.events if isinstance(e, ModelTextDelta | StepInterruptedEvent)]
        assert kinds == [ModelTextDelta, ModelTextDelta, StepInterruptedEvent]  # the cut after what was streamed


async def test_an_interrupt_with_nothing_running_is_taken_before_the_inputs_queued() -> None:
    model = ProbeModel(scripted([{"text": "one"}, {"text": "two"}]))
    async with open_agent(model=model, inputs=["queued first"]) as h:
        await give(h, "urgent", InputMode.INTERRUPT)
        await h.run_until_idle()
        inputs = [e.text for e in await h.entries() if isinstance(e, ModelInputEntry)]
        assert inputs == ["urgent", "queued first"]
        assert not [r for r in await logged_records(h) if isinstance(r, StepInterrupted)]  # nothing was cut


async def test_an_interrupt_given_to_a_thread_stopped_mid_step_is_taken_before_the_step_ends() -> None:
    probe = Probe(slow_runs_left=0)
    model = ProbeModel(scripted([{"tool_calls": [{"name": "record", "arguments": {"label": "a"}},
                                                 {"name": "record", "arguments": {"label": "b"}}]},
                                 {"text": "ok, stopping"}]))
    async with open_agent(model=model, inputs=["label things"], apps=[ProbeApp(probe)]) as h:
        await h.run_until_idle(max_steps=3)  # input, model call, first tool: stopped with one call left
        assert (await h.tail()).state is S.WAITING_TOOL_RESULTS
        await give(h, "never mind", InputMode.INTERRUPT)
        await h.run_until_idle()
        assert probe.calls == ["a"]  # the call left was not run
        entries = await h.entries()
        results = entries[2]
        assert isinstance(results, ToolResultsEntry)
        assert [(r.status, r.content.live.text) for r in results.results] == [
            (ToolStatus.OK, "recorded a"), (ToolStatus.SKIPPED, "not run: client/test interrupted the step")]
        assert isinstance(entries[3], ModelInputEntry) and entries[3].text == "never mind"


async def test_silent_input_is_recorded_takes_no_step_and_rides_on_the_next_model_call() -> None:
    model = ProbeModel(scripted([{"text": "hello"}, {"text": "noted"}]))
    async with open_agent(model=model, inputs=["hi"]) as h:
        await h.run_until_idle()
        before = (await h.tail(), await h.entries())
        await give(h, "the build is green", InputMode.SILENT)
        await h.settle()
        assert (await h.tail(), await h.entries()) == before  # no step, no entry
        assert len(model.requests) == 1
        idle = await h.run_until_idle()
        assert (idle.steps, idle.reason) == (0, IdleReason.NO_INPUT)  # nothing to take
        assert len(model.requests) == 1
        await give(h, "anything new?", InputMode.QUEUE)
        await h.run_until_idle()
        assert "silent input from client/test: the build is green" in said(model.requests[1])[-1].content


async def test_terminate_during_a_slow_tool_ends_the_task_with_the_calls_left_not_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    probe = Probe()
    model = ProbeModel(scripted([{"tool_calls": [slow_call(), {"name": "record", "arguments": {"label": "x"}}]},
                                 {"text": "a new task"}]))
    async with open_agent(model=model, inputs=["long job"], apps=[ProbeApp(probe)]) as h:
        async with running(h) as idles:
            await probe.started.wait()
            await give(h, "wrong folder", InputMode.TERMINATE)
            # answered once durable: the status says so already
            assert await h.status() == status_terminated("wrong folder")
        (idle,) = idles
        assert virtual_seconds() < PROMPT_S  # (not the hour the slow part would have taken)
        assert (idle.reason, idle.state) == (IdleReason.TERMINATED, S.WAITING_INPUT)
        assert probe.calls == ["slow"] and probe.cancelled == ["slow"]
        assert len(model.requests) == 1  # no step after the termination
        results = (await h.entries())[-1]
        assert isinstance(results, ToolResultsEntry)
        assert [r.status for r in results.results] == [ToolStatus.INTERRUPTED, ToolStatus.SKIPPED]
        assert results.results[1].content.live.text == "not run: client/test terminated the task"
        assert TaskTerminated("wrong folder", "client/test") in await logged_records(h)
        assert (await h.logged()).status == status_terminated("wrong folder")  # durable: read back from the log
        await h.settle()
        assert [(e.reason, e.by) for e in h.of_type(TaskTerminatedEvent)] == [("wrong folder", "client/test")]
        # a new input starts a new task, which reads that the last one was terminated
        await give(h, "do this instead", InputMode.QUEUE)
        await h.run_until_idle()
        assert (await h.status()).status is TaskStatus.WAITING_USER
        told = said(model.requests[1])[-1].content
        assert told.startswith("do this instead") and "terminated by client/test: wrong folder" in told


async def test_terminate_during_a_model_call_leaves_the_thread_waiting_for_input(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = StreamsThenHangs(["second task done"])
    async with open_agent(model=model, inputs=["first task"]) as h:
        async with running(h, timeout=HOUR) as idles:
            await model.streamed.wait()
            await give(h, "stop", InputMode.TERMINATE)
        (idle,) = idles
        assert idle.reason is IdleReason.TERMINATED
        tail = await h.tail()
        assert isinstance(tail.last, ModelInputEntry) and tail.state is S.WAITING_INPUT
        assert StepInterrupted("model call", "client/test") in await logged_records(h)
        await give(h, "second task", InputMode.QUEUE)
        await h.run_until_idle()
        users = [m.content for m in said(model.requests[1]) if m.role is Role.USER]
        assert users[0].startswith("first task") and users[1].startswith("second task")


async def test_terminating_an_idle_agent_records_the_termination() -> None:
    model = ProbeModel(scripted([{"text": "hello"}]))
    async with open_agent(model=model, inputs=["hi"]) as h:
        await h.run_until_idle()
        await give(h, "done for today", InputMode.TERMINATE)
        assert await h.status() == status_terminated("done for today")
        assert len(model.requests) == 1


def status_terminated(reason: str) -> Any:
    from livecontext.protocol.agent import AgentStatus

    return AgentStatus(TaskStatus.TERMINATED, reason=reason, by="client/test")


async def test_two_interrupts_given_while_a_tool_runs_are_both_taken_before_the_next_model_call_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    probe = Probe()
    model = ProbeModel(scripted([{"tool_calls": [slow_call()]}, {"text": "both heard"}, {"text": "and that"}]))
    async with open_agent(model=model, inputs=["go"], apps=[ProbeApp(probe)]) as h:
        await give(h, "queued meanwhile", InputMode.QUEUE)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run_until_idle)
            await probe.started.wait()
            await give(h, "first", InputMode.INTERRUPT)
            await give(h, "second", InputMode.INTERRUPT)
        inputs = [e.text for e in await h.entries() if isinstance(e, ModelInputEntry)]
        assert inputs == ["go", "first", "second", "queued meanwhile"]  # the queued one waited its turn
        users = [m.content for m in said(model.requests[1]) if m.role is Role.USER]
        assert users[-2].startswith("first") and users[-1].startswith("second")


async def test_an_interrupt_whose_input_was_taken_already_takes_no_queued_input_out_of_turn() -> None:
    probe = Probe(slow_runs_left=0)
    model = ProbeModel(scripted([{"tool_calls": [{"name": "record", "arguments": {"label": "a"}},
                                                 {"name": "record", "arguments": {"label": "b"}}]},
                                 {"text": "done"}, {"text": "and later"}]))
    async with open_agent(model=model, inputs=["go"], apps=[ProbeApp(probe)]) as h:
        await h.run_until_idle(max_steps=3)  # stopped with one call left
        await give(h, "later", InputMode.QUEUE)
        await h.client.tell(h.agent.engine, Interrupt("client/late"))  # (its input gone: taken by a race)
        await h.run_until_idle()
        kinds = [(type(e).__name__, getattr(e, "text", "")) for e in await h.entries()]
        assert kinds == [("ModelInputEntry", "go"), ("ModelOutputEntry", ""), ("ToolResultsEntry", ""),
                         ("ModelOutputEntry", ""), ("ModelInputEntry", "later"), ("ModelOutputEntry", "")]

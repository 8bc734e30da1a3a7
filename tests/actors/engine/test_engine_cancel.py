"""Cancelling an agent's step (or its whole runtime): prompt, consistent, nothing left running."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from livecontext.actors.apps import Notebook, ToolOutcome, tool
from livecontext.protocol.agent import (
    AfterModelCall,
    AfterToolExecute,
    Cancel,
    GetWindows,
    Idle,
    IdleReason,
    Pause,
    PostNotification,
    Step,
    StepDone,
    Windows,
)
from livecontext.protocol.history import EngineState, ModelReply, ModelRequest, ToolResultsEntry, ToolStatus
from livecontext.protocol.kernel import ActorId, Message
from livecontext.protocol.records import NotebookEdited
from livecontext.runtime import Context
from livecontext.runtime.models import ModelClient, TextCallback
from tests.support.agent_harness import AgentHarness, Probe, ProbeApp, ProbeModel, open_agent, scripted

S = EngineState
SLOW = 30.0
"""Longer than any test waits: a cancel must cut it short."""


def slow_tool(name: str = "slow") -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": {"seconds": SLOW}}]}


async def _start_step(h: AgentHarness, nursery: trio.Nursery) -> list[StepDone]:
    replies: list[StepDone] = []

    async def ask() -> None:
        replies.append(await h.step(timeout=SLOW))

    nursery.start_soon(ask)
    return replies


async def test_cancel_during_a_slow_model_call_returns_promptly_and_leaves_pending_input(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = ProbeModel(scripted([{"text": "too late", "delay_s": SLOW}]))
    async with open_agent(model=model, inputs=["hello"]) as h:
        await h.step()
        entries = await h.entries()
        async with trio.open_nursery() as nursery:
            replies = await _start_step(h, nursery)
            await model.started.wait()
            with trio.fail_after(2):
                await h.cancel()
        (done,) = replies
        assert (done.from_state, done.to_state, done.progressed, done.cancelled, done.error) == (
            S.PENDING_INPUT, S.PENDING_INPUT, False, True, "")
        assert model.cancelled == 1
        await trio.sleep(2 * SLOW)  # (virtual time) past the call's end: nothing may finish it behind our back
        assert model.finished == 0
        assert await h.entries() == entries
        assert (await h.tail()).state is S.PENDING_INPUT
        await h.settle()
        assert h.of_type(AfterModelCall) == []
        assert h.transitions() == [("WaitingInput", "PendingInput")]


async def test_steps_queued_behind_a_cancelled_one_are_answered_and_never_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = ProbeModel(scripted([{"text": "too late", "delay_s": SLOW}]))
    async with open_agent(model=model, inputs=["hello"]) as h:
        await h.step()
        async with trio.open_nursery() as nursery:
            first = await _start_step(h, nursery)
            await model.started.wait()
            second = await _start_step(h, nursery)
            third = await _start_step(h, nursery)
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(2):
                await h.cancel()
        assert [(d.cancelled, d.error) for d in first + second + third] == [(True, "")] * 3
        await trio.sleep(2 * SLOW)  # (virtual time)
        assert len(model.requests) == 1  # the queued steps never called the model again
        assert (await h.tail()).state is S.PENDING_INPUT


async def test_cancel_answers_run_until_idle_with_the_reason_cancelled() -> None:
    model = ProbeModel(scripted([{"text": "too late", "delay_s": SLOW}]))
    async with open_agent(model=model, inputs=["hello"]) as h:
        async with trio.open_nursery() as nursery:
            idles = []

            async def run() -> None:
                idles.append(await h.run_until_idle(timeout=SLOW))

            nursery.start_soon(run)
            await model.started.wait()
            with trio.fail_after(2):
                await h.cancel()
        (idle,) = idles
        assert (idle.state, idle.steps, idle.reason) == (S.PENDING_INPUT, 1, IdleReason.CANCELLED)


async def test_pause_ends_run_until_idle_after_the_current_step() -> None:
    model = ProbeModel(scripted([{"text": "one"}, {"text": "two"}]))
    model.gate = trio.Event()
    async with open_agent(model=model, inputs=["a", "b"]) as h:
        async with trio.open_nursery() as nursery:
            idles = []

            async def run() -> None:
                idles.append(await h.run_until_idle(timeout=SLOW))

            nursery.start_soon(run)
            await model.started.wait()
            await h.client.ask(h.agent.engine, Pause())
            model.gate.set()
        (idle,) = idles
        assert (idle.state, idle.steps, idle.reason) == (S.WAITING_INPUT, 2, IdleReason.PAUSED)
        assert len(await h.entries()) == 2


async def test_cancel_during_a_slow_tool_cancels_the_tool_and_keeps_the_state_consistent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    probe = Probe()
    turns = [slow_tool(), {"text": "done"}]
    async with open_agent(turns, inputs=["go"], apps=[ProbeApp(probe)]) as h:
        await h.step()
        await h.step()
        async with trio.open_nursery() as nursery:
            replies = await _start_step(h, nursery)
            await probe.started.wait()
            with trio.fail_after(2):
                await h.cancel()
        assert probe.cancelled == ["slow"]
        (done,) = replies
        assert (done.to_state, done.progressed, done.cancelled, done.error) == (S.WAITING_TOOL_RESULTS, False, True, "")
        tail = await h.tail()
        assert (tail.state, tail.recorded, tail.started) == (S.WAITING_TOOL_RESULTS, (), ())
        await trio.sleep(2 * SLOW)  # (virtual time) past the tool's end
        assert probe.finished == []
        await h.settle()
        assert h.of_type(AfterToolExecute) == []
        # the tool is idempotent: the next step runs it again (this time it returns at once)
        done = await h.step()
        assert (done.to_state, done.progressed) == (S.TOOL_RESULTS_READY, True)
        assert probe.calls == ["slow", "slow"]


async def test_a_cancelled_tool_that_is_not_idempotent_is_recorded_as_interrupted_not_rerun() -> None:
    probe = Probe()
    turns = [slow_tool("slow_once"), {"text": "I will check"}]
    async with open_agent(turns, inputs=["go"], apps=[ProbeApp(probe)]) as h:
        await h.step()
        await h.step()
        async with trio.open_nursery() as nursery:
            await _start_step(h, nursery)
            await probe.started.wait()
            with trio.fail_after(2):
                await h.cancel()
        assert probe.cancelled == ["slow_once"]
        assert (await h.tail()).started == ("call_0_0",)
        done = await h.step()
        assert done.to_state is S.TOOL_RESULTS_READY
        assert probe.calls == ["slow_once"]  # not run again
        await h.step()
        results = (await h.entries())[-1]
        assert isinstance(results, ToolResultsEntry)
        assert results.results[0].status is ToolStatus.INTERRUPTED
        assert "outcome was never recorded" in results.results[0].content.live.text


async def test_a_tool_running_past_the_tool_timeout_is_cancelled_and_fails() -> None:
    probe = Probe()
    turns = [slow_tool(), {"text": "too slow"}]
    async with open_agent(turns, inputs=["go"], apps=[ProbeApp(probe)], tool_timeout_s=0.2) as h:
        await h.step()
        await h.step()
        with trio.fail_after(2):
            done = await h.step()
        assert (done.to_state, done.progressed) == (S.TOOL_RESULTS_READY, True)
        assert probe.cancelled == ["slow"]
        (result,) = (await h.tail()).recorded
        assert result.status is ToolStatus.FAILED
        assert result.content.live.text.startswith("slow timed out after 0.2 s")


async def test_an_async_tool_answering_within_the_tool_timeout_keeps_its_result() -> None:
    probe = Probe()
    turns = [{"tool_calls": [{"name": "slow", "arguments": {"seconds": 0.05}}]}, {"text": "done"}]
    async with open_agent(turns, inputs=["go"], apps=[ProbeApp(probe)], tool_timeout_s=1.0) as h:
        await h.step()
        await h.step()
        with trio.fail_after(2):
            done = await h.step()
        assert (done.to_state, done.progressed) == (S.TOOL_RESULTS_READY, True)
        assert (probe.finished, probe.cancelled) == (["slow"], [])
        (result,) = (await h.tail()).recorded
        assert (result.status, result.content.live.text) == (ToolStatus.OK, "slow done")


class BlockingApp(ProbeApp):
    """A probe app with a sync tool that holds the CPU (a sync tool cannot be cancelled)."""

    def fresh(self) -> BlockingApp:
        return BlockingApp(self.probe)

    @tool(idempotent=True)
    def block(self, seconds: float) -> ToolOutcome:
        """Block for a while, as a slow sync tool does.

        Args:
            seconds: How long to block.
        """
        time.sleep(seconds)
        return ToolOutcome.ok("blocked", "blocked", "blocked")


async def test_a_sync_tool_slower_than_the_tool_timeout_keeps_its_result() -> None:
    # over when its call returns, it was never waited for: what it returned is what happened
    turns = [{"tool_calls": [{"name": "block", "arguments": {"seconds": 0.3}}]}, {"text": "done"}]
    async with open_agent(turns, inputs=["go"], apps=[BlockingApp()], tool_timeout_s=0.1) as h:
        await h.step()
        await h.step()
        done = await h.step()
        assert (done.to_state, done.progressed) == (S.TOOL_RESULTS_READY, True)
        (result,) = (await h.tail()).recorded
        assert (result.status, result.content.live.text) == (ToolStatus.OK, "blocked")


async def test_closing_the_runtime_during_a_slow_model_call_finishes_promptly() -> None:
    model = ProbeModel(scripted([{"text": "too late", "delay_s": SLOW}]))
    with trio.fail_after(3):
        with trio.CancelScope() as scope:
            async with open_agent(model=model, inputs=["hello"]) as h:
                await h.step()
                h.client.tell_nowait(h.agent.engine, Step())
                await model.started.wait()
                scope.cancel()
                await trio.sleep_forever()
    assert model.cancelled == 1
    assert model.finished == 0


async def test_leaving_the_runtime_block_during_a_slow_model_call_finishes_promptly() -> None:
    model = ProbeModel(scripted([{"text": "too late", "delay_s": SLOW}]))
    with trio.fail_after(3):
        async with open_agent(model=model, inputs=["hello"]) as h:
            await h.step()
            h.client.tell_nowait(h.agent.engine, Step())
            await model.started.wait()
    assert model.cancelled == 1
    assert model.finished == 0


async def test_stopping_the_engine_answers_the_steps_it_was_asked_for() -> None:
    model = ProbeModel(scripted([{"text": "too late", "delay_s": SLOW}]))
    async with open_agent(model=model, inputs=["hello"]) as h:
        await h.step()
        async with trio.open_nursery() as nursery:
            running = await _start_step(h, nursery)
            await model.started.wait()
            queued = await _start_step(h, nursery)
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(2):
                await h.rt.stop(h.agent.engine)
        assert [(d.cancelled, d.error) for d in running + queued] == [(True, ""), (True, "")]
        assert model.cancelled == 1
        assert (await h.tail()).state is S.PENDING_INPUT


async def test_leaving_the_runtime_block_while_a_slow_tool_runs_cancels_the_tool_promptly() -> None:
    probe = Probe()
    with trio.fail_after(3):
        async with open_agent([slow_tool(), {"text": "never"}], inputs=["go"], apps=[ProbeApp(probe)]) as h:
            await h.step()
            await h.step()
            h.client.tell_nowait(h.agent.engine, Step())
            await probe.started.wait()
    assert probe.cancelled == ["slow"]
    assert probe.finished == []


class CancelOnApply(Notebook):
    """A notebook that, applying an edit, tells the engine to ``Cancel`` (once, when armed):
    the cancel reaches the engine while it is between committing the effect and publishing
    the step's events, the window a cancel must never split."""

    def __init__(self, armed: dict[str, ActorId] | None = None) -> None:
        super().__init__()
        self.armed = armed if armed is not None else {}
        self.ctx: Context | None = None

    def told(self) -> Message:
        return Cancel()

    def fresh(self) -> CancelOnApply:
        return type(self)(self.armed)

    def bind(self, ctx: Context) -> None:
        self.ctx = ctx

    def apply(self, effect: Message) -> None:
        super().apply(effect)
        engine = self.armed.pop("engine", None)
        if engine is not None and self.ctx is not None:
            self.ctx.tell_nowait(engine, self.told())


class PauseOnApply(CancelOnApply):
    """The same, telling ``Pause``."""

    def told(self) -> Message:
        return Pause()


EDIT = {"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "kept"}}


@contextlib.asynccontextmanager
async def _run_told_while_recording(app: CancelOnApply) -> AsyncIterator[tuple[AgentHarness, Idle]]:
    """An agent whose model makes one notebook edit (with ``app``, armed to tell its engine
    while the edit is recorded), run until idle: the harness and the run's answer."""
    async with open_agent([{"tool_calls": [EDIT]}, {"text": "done"}], inputs=["edit"], apps=[app]) as h:
        app.armed["engine"] = h.agent.engine.id
        with trio.fail_after(5):
            idle = await h.run_until_idle(timeout=5)
        yield h, idle


async def test_a_cancel_arriving_while_a_step_records_lets_the_step_finish_then_ends_the_run() -> None:
    async with _run_told_while_recording(CancelOnApply()) as (h, idle):
        # the run ended at the cancel, before the model was asked again
        assert idle.reason is IdleReason.CANCELLED
        assert idle.state in (S.TOOL_RESULTS_READY, S.PENDING_TOOL_RESULTS)
        # the step that was recording finished: result and effect committed, effect applied ...
        assert await h.effects() == (NotebookEdited(text="kept"),)
        windows = await h.client.ask(h.agent.apps, GetWindows())
        assert isinstance(windows, Windows) and windows.text.endswith("kept")
        # ... and its events published
        await h.settle()
        (after,) = h.of_type(AfterToolExecute)
        assert after.status is ToolStatus.OK
        assert ("WaitingToolResults", "ToolResultsReady") in h.transitions()
        assert h.of_type(AfterModelCall)[-1].entry_id != ""
        assert len(h.of_type(AfterModelCall)) == 1  # no second model call


# Trio runs the tasks made runnable together in either order, so a test of what the engine
# does before its next step runs a few times: a step boundary that let the engine's own task
# run only now and then would fail one of them.


@pytest.mark.parametrize("attempt", range(8))
async def test_a_cancel_told_while_a_step_records_ends_the_run_before_the_next_step(attempt: int) -> None:
    async with _run_told_while_recording(CancelOnApply()) as (h, idle):
        # input, model call, tool call (during which the Cancel came): the results were not appended
        assert (idle.state, idle.steps, idle.reason) == (S.TOOL_RESULTS_READY, 3, IdleReason.CANCELLED)
        assert [type(e).__name__ for e in await h.entries()] == ["ModelInputEntry", "ModelOutputEntry"]


@pytest.mark.parametrize("attempt", range(8))
async def test_a_pause_told_while_a_step_records_ends_run_until_idle_before_the_model_is_called_again(
        attempt: int) -> None:
    # told with tell_nowait, the Pause waits in the engine's mailbox for the engine's own task
    async with _run_told_while_recording(PauseOnApply()) as (h, idle):
        # it ends after the step that was recording, or after the next one (which appends the
        # results), never after the model call that would follow
        assert idle.reason is IdleReason.PAUSED
        assert idle.state in (S.TOOL_RESULTS_READY, S.PENDING_TOOL_RESULTS)
        await h.settle()
        assert len(h.of_type(AfterModelCall)) == 1


class CancelAsTheOutputIsRecorded(ModelClient):
    """Ends its call by telling the engine ``Cancel`` and the history store a notification
    (handled in the store's own task), so that the engine waits (shielded) for the store to
    record the output while its own task handles the Cancel: the cancel comes after the
    step's last cancel point, and the step (the step job's last) runs to its end."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.name = inner.name
        self.h: AgentHarness | None = None

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        reply = await self.inner.complete(request, on_text)
        h, self.h = self.h, None
        if h is not None:
            h.client.tell_nowait(h.agent.engine, Cancel())
            h.client.tell_nowait(h.agent.history, PostNotification("busy"))
        return reply


async def test_a_cancel_that_comes_after_a_runs_last_cancel_point_leaves_the_next_run_alone() -> None:
    model = CancelAsTheOutputIsRecorded(scripted([{"text": "one"}, {"text": "two"}]))
    async with open_agent(model=model, inputs=["a", "b"]) as h:
        await h.step()
        model.h = h
        with trio.fail_after(5):
            done = await h.step()  # the model call, its output recorded whatever the cancel
            assert (done.to_state, done.progressed, done.error) == (S.WAITING_INPUT, True, "")
            await h.settle()  # the Cancel is answered: nothing was left to cancel
            done = await h.step()
        assert (done.from_state, done.to_state, done.progressed, done.error) == (
            S.WAITING_INPUT, S.PENDING_INPUT, True, "")
        idle = await h.run_until_idle()
        assert (idle.state, idle.steps, idle.reason) == (S.WAITING_INPUT, 1, IdleReason.NO_INPUT)
        texts = [e.content.live.text for e in await h.entries()]
        assert texts[:2] == ["a", "one"] and texts[2].startswith("b") and texts[3:] == ["two"]


async def test_cancelling_an_idle_engine_is_answered_at_once_and_changes_nothing() -> None:
    async with open_agent([{"text": "one"}], inputs=["a"]) as h:
        with trio.fail_after(2):
            await h.cancel()
        assert await h.entries() == ()
        idle = await h.run_until_idle()
        assert (idle.state, idle.steps, idle.reason) == (S.WAITING_INPUT, 2, IdleReason.NO_INPUT)

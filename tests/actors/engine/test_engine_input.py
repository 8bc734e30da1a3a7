"""The engine's input pulls: it skips the pull it knows would find nothing, and never one that
could find something (input provided during a run is taken by that run)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio
from attrs import frozen

from livecontext.protocol.agent import IdleReason, InputAvailable, ProvideInput, PullInput, WaitingInput
from livecontext.protocol.history import EngineState, ModelInputEntry, ModelReply, ModelRequest
from livecontext.protocol.kernel import ActorId, Message, Topic
from livecontext.runtime import Actor, AuditEvent, AuditRecord, Context, handler
from livecontext.runtime.models import ModelClient, TextCallback
from livecontext.runtime.testing import actor_instance
from tests.support.agent_harness import AgentHarness, ProbeModel, open_agent, scripted

S = EngineState


class ProvidingModel(ModelClient):
    """Answers from a script; at the end of each call it first provides the next of ``texts``
    to the input source, as a client would (``tell_nowait``: no checkpoint in between)."""

    def __init__(self, turns: int, texts: list[str]) -> None:
        self.inner = scripted([{"text": f"answer {i}"} for i in range(turns)])
        self.name = self.inner.name
        self.texts = texts
        self.client: Context | None = None
        self.input: ActorId | None = None

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        reply = await self.inner.complete(request, on_text)
        if self.texts and self.client is not None and self.input is not None:
            self.client.tell_nowait(self.input, ProvideInput(self.texts.pop(0)))
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


def pulls(records: list[AuditRecord]) -> int:
    return sum(1 for r in records if r.event is AuditEvent.DELIVERED and isinstance(r.envelope.payload, PullInput))


async def test_a_run_that_emptied_the_input_source_ends_with_no_input_without_pulling_again() -> None:
    async with open_agent([{"text": "one"}], inputs=["a"]) as h:
        records: list[AuditRecord] = []
        h.rt.add_audit_hook(records.append)
        idle = await h.run_until_idle()
        assert (idle.state, idle.steps, idle.reason) == (S.WAITING_INPUT, 2, IdleReason.NO_INPUT)
        assert pulls(records) == 1  # "a" (the source said nothing remained)


async def test_every_run_asks_the_source_at_least_once() -> None:
    async with open_agent([{"text": "one"}], inputs=["a"]) as h:
        await h.run_until_idle()
        records: list[AuditRecord] = []
        h.rt.add_audit_hook(records.append)
        idle = await h.run_until_idle()
        assert (idle.steps, idle.reason) == (0, IdleReason.NO_INPUT)
        assert pulls(records) == 1


async def test_a_source_that_had_more_is_asked_again() -> None:
    async with open_agent([{"text": "one"}, {"text": "two"}], inputs=["a", "b"]) as h:
        records: list[AuditRecord] = []
        h.rt.add_audit_hook(records.append)
        idle = await h.run_until_idle()
        assert (idle.steps, idle.reason) == (4, IdleReason.NO_INPUT)
        assert pulls(records) == 2  # "a" (one remained), "b" (none remained)


async def test_a_run_that_starts_where_the_last_stopped_for_input_asks_the_history_for_no_tail() -> None:
    # only the engine moves a thread on from waiting for input: the tail it stopped at holds
    async with open_agent([{"text": "one"}, {"text": "two"}], inputs=["a"]) as h:
        await h.run_until_idle()
        await h.notify("meanwhile")  # written by someone else between the runs: not the state
        records: list[AuditRecord] = []
        h.rt.add_audit_hook(records.append)
        await h.provide("b")
        idle = await h.run_until_idle()
        assert (idle.state, idle.steps, idle.reason) == (S.WAITING_INPUT, 2, IdleReason.NO_INPUT)
        asked = [type(r.envelope.payload).__name__ for r in records
                 if r.event is AuditEvent.DELIVERED and r.envelope.sender == h.agent.engine.id]
        assert "GetTail" not in asked and asked.count("PullInput") == 1
        inputs = [e for e in await h.entries() if isinstance(e, ModelInputEntry)]
        assert [e.text for e in inputs] == ["a", "b"] and len(inputs[1].notifications) == 1


@pytest.mark.parametrize("attempt", range(8))
async def test_input_provided_during_a_run_is_taken_by_that_run(attempt: int) -> None:
    # the input reaches the source while the engine records the model's answer, just before
    # the step that would skip the pull: whichever task runs first, the run must take it
    model = ProvidingModel(turns=2, texts=["b"])
    async with open_agent(model=model, inputs=["a"]) as h:
        model.client, model.input = h.client, h.agent.input.id
        with trio.fail_after(5):
            idle = await h.run_until_idle()
        assert (idle.state, idle.steps, idle.reason) == (S.WAITING_INPUT, 4, IdleReason.NO_INPUT)
        inputs = [e.text for e in await h.entries() if isinstance(e, ModelInputEntry)]
        assert inputs == ["a", "b"]


async def test_input_provided_while_the_model_thinks_is_taken_by_the_same_run() -> None:
    model = ProbeModel(scripted([{"text": "one"}, {"text": "two"}]))
    model.gate = trio.Event()  # the model thinks until the gate opens
    async with open_agent(model=model, inputs=["a"]) as h:
        async with trio.open_nursery() as nursery:
            idles = []

            async def run() -> None:
                idles.append(await h.run_until_idle())

            nursery.start_soon(run)
            await model.started.wait()  # the engine has pulled "a" (nothing remained) and calls the model
            await h.provide("b")
            await h.settle()  # "b" is in the input source
            model.gate.set()
        (idle,) = idles
        assert (idle.steps, idle.reason) == (4, IdleReason.NO_INPUT)
        inputs = [e.text for e in await h.entries() if isinstance(e, ModelInputEntry)]
        assert inputs == ["a", "b"]


@frozen
class Ping(Message):
    pass


class Deaf(Actor):
    """Subscribes to the engine's events and handles none of them: each one is dropped (and
    audited) in the publisher's task, at the moment it is published."""

    def __init__(self, topic: Topic) -> None:
        self.topic = topic

    async def on_start(self) -> None:
        self.ctx.subscribe(self.topic)

    @handler
    async def on_ping(self, msg: Ping) -> None:
        pass


async def _at_the_last_waiting_input(h: AgentHarness, act: Callable[[], None]) -> None:
    """Call ``act`` in the engine's task when it announces WaitingInput the second time, i.e.
    right before the step that would skip the pull (no checkpoint in between)."""
    await h.rt.spawn(lambda: Deaf(h.agent.events), "deaf/d")
    seen = 0

    def hook(record: AuditRecord) -> None:
        nonlocal seen
        if record.event is AuditEvent.DROPPED and isinstance(record.envelope.payload, WaitingInput):
            seen += 1
            if seen == 2:
                act()

    h.rt.add_audit_hook(hook)


async def test_input_waiting_in_the_sources_mailbox_at_the_last_moment_is_pulled() -> None:
    async with open_agent([{"text": "one"}, {"text": "two"}], inputs=["a"]) as h:
        await _at_the_last_waiting_input(h, lambda: h.client.tell_nowait(h.agent.input, ProvideInput("b")))
        idle = await h.run_until_idle()
        assert (idle.steps, idle.reason) == (4, IdleReason.NO_INPUT)
        assert [e.text for e in await h.entries() if isinstance(e, ModelInputEntry)] == ["a", "b"]


async def test_input_whose_notice_waits_in_the_engines_mailbox_at_the_last_moment_is_pulled() -> None:
    async with open_agent([{"text": "one"}, {"text": "two"}], inputs=["a"]) as h:
        source = actor_instance(h.agent.input)

        def provided_and_notified() -> None:  # what the source does with a ProvideInput
            source.buffer.append(ProvideInput("b"))
            h.client.tell_nowait(h.agent.engine, InputAvailable())

        await _at_the_last_waiting_input(h, provided_and_notified)
        idle = await h.run_until_idle()
        assert (idle.steps, idle.reason) == (4, IdleReason.NO_INPUT)
        assert [e.text for e in await h.entries() if isinstance(e, ModelInputEntry)] == ["a", "b"]

"""``Actor.completes_at_once``: an inline handler with an ``await`` that its actor knows it will
not reach this time runs as one with no ``await`` does (no shield, nothing for the loop to wait
on); a wrong promise is finished correctly and logged."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol import Message
from livecontext.runtime import Actor, handler, open_runtime


@frozen
class Work(Message):
    slow: bool
    """Whether the handler awaits this time."""


@frozen
class Done(Message):
    deadline: float
    """The effective deadline the handler ran under (inf: shielded from its asker)."""


class Worker(Actor):
    def __init__(self, promise: bool | None) -> None:
        self.promise = promise
        """True/False: what completes_at_once answers; None: it tells the truth."""
        self.asked: list[Message] = []

    def completes_at_once(self, message: Message) -> bool:
        self.asked.append(message)
        if self.promise is None:
            return isinstance(message, Work) and not message.slow
        return self.promise

    @handler(inline=True)
    async def on_work(self, msg: Work) -> Done:
        if msg.slow:
            await trio.lowlevel.checkpoint()
        return Done(trio.current_effective_deadline())


async def _ask(promise: bool | None, msg: Work) -> tuple[Done, Worker]:
    workers: list[Worker] = []

    def make() -> Worker:
        workers.append(Worker(promise))
        return workers[-1]

    async with open_runtime() as rt:
        ref = await rt.spawn(make, "worker/w")
        await trio.testing.wait_all_tasks_blocked()  # idle: the ask runs inline
        with trio.move_on_after(1000):
            done = await rt.client("asker").ask(ref, msg)
    return done, workers[0]


async def test_a_handler_promised_to_complete_at_once_runs_under_its_askers_own_deadline() -> None:
    done, worker = await _ask(None, Work(slow=False))
    assert done.deadline < float("inf")  # no shield scope around it
    assert worker.asked == [Work(slow=False)]


async def test_a_handler_not_promised_to_complete_runs_shielded_as_before() -> None:
    done, _ = await _ask(None, Work(slow=True))
    assert done.deadline == float("inf")


async def test_a_broken_promise_still_gets_its_answer_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="livecontext.runtime"):
        done, _ = await _ask(True, Work(slow=True))
    assert isinstance(done, Done)
    assert any("Worker.on_work suspended although completes_at_once() said it would not" in r.getMessage()
               for r in caplog.records)


async def test_after_a_broken_promise_the_actor_handles_its_next_messages_as_usual() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: Worker(True), "worker/w")
        client = rt.client("asker")
        await trio.testing.wait_all_tasks_blocked()
        first = await client.ask(ref, Work(slow=True))
        second = await client.ask(ref, Work(slow=False))
        assert isinstance(first, Done) and isinstance(second, Done)
        assert rt.statistics().restarts == 0


@frozen
class DeferLater(Message):
    """Handled by awaiting once, then deferring the reply and sending it from a background task."""


class LateDeferrer(Actor):
    def completes_at_once(self, message: Message) -> bool:
        return True  # wrong: the handler awaits

    @handler(inline=True)
    async def on_defer_later(self, msg: DeferLater) -> Done:
        await trio.lowlevel.checkpoint()
        pending = self.ctx.defer_reply()
        assert pending is not None, "the ask was forgotten while its handler was suspended"

        async def answer() -> None:
            await trio.sleep(0.01)
            pending.send(Done(-1.0))

        self.ctx.nursery.start_soon(answer)
        return Done(0.0)  # ignored: the reply is deferred


async def test_a_broken_promise_can_still_defer_its_reply_after_it_suspended() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(LateDeferrer, "worker/w")
        await trio.testing.wait_all_tasks_blocked()
        with trio.fail_after(5):
            done = await rt.client("asker").ask(ref, DeferLater())
        assert done == Done(-1.0)
        assert rt.statistics().pending_asks == 0

"""Shielded asks (``ctx.ask(..., shield=True)``): the caller's cancellation cannot cut them
short, they leave no cancel point behind them, and their own timeout still applies."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.runtime import Actor, AskTimeoutError, handler, open_runtime


@frozen
class Write(Message):
    """Handled inline: recorded at once."""

    text: str


@frozen
class SlowWrite(Message):
    """A plain handler (through the mailbox): recorded once the gate opens."""

    text: str


@frozen
class DeferredWrite(Message):
    """Handled with a deferred reply: a background task records it once the gate opens."""

    text: str


@frozen
class Hang(Message):
    """A plain handler that never answers."""


@frozen
class Written(Message):
    texts: tuple[str, ...]


class Ledger(Actor):
    def __init__(self, log: list[str], gate: trio.Event, entered: trio.Event) -> None:
        self.log = log
        self.gate = gate
        self.entered = entered

    @handler(inline=True)
    def on_write(self, msg: Write) -> Written:
        self.log.append(msg.text)
        return Written(tuple(self.log))

    @handler
    async def on_slow_write(self, msg: SlowWrite) -> Written:
        self.entered.set()
        await self.gate.wait()
        self.log.append(msg.text)
        return Written(tuple(self.log))

    @handler
    async def on_deferred(self, msg: DeferredWrite) -> None:
        pending = self.ctx.defer_reply()
        assert pending is not None

        async def later() -> None:
            await self.gate.wait()
            self.log.append(msg.text)
            pending.send(Written(tuple(self.log)))

        self.ctx.nursery.start_soon(later)
        self.entered.set()

    @handler
    async def on_hang(self, msg: Hang) -> None:
        await trio.sleep_forever()


class World:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.gate = trio.Event()
        self.entered = trio.Event()


async def _spawn(rt, world: World):  # type: ignore[no-untyped-def]
    ref = await rt.spawn(lambda: Ledger(world.log, world.gate, world.entered), "ledger/l")
    await trio.testing.wait_all_tasks_blocked()  # its loop is parked: inline asks run inline
    return ref


TIMEOUTS = pytest.mark.parametrize("timeout", [30.0, None], ids=["timed", "untimed"])
"""An ask with a timeout waits in a cancel scope of its own; one without (and unshielded) waits
in none: both must behave alike."""


@TIMEOUTS
@pytest.mark.parametrize("message", [SlowWrite("a"), DeferredWrite("a")], ids=["mailbox", "deferred"])
async def test_a_shielded_ask_returns_its_reply_though_the_caller_is_cancelled_while_it_waits(
        message: Message, timeout: float | None) -> None:
    world = World()
    async with open_runtime() as rt:
        ref = await _spawn(rt, world)
        client = rt.client("asker")
        replies: list[object] = []
        after_ask: list[bool] = []
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def ask() -> None:
                with scope:
                    replies.append(await client.ask(ref, message, shield=True, timeout=timeout))
                    after_ask.append(True)  # no cancel point between the ask and here
                    await trio.lowlevel.checkpoint()  # the cancel lands here
                    after_ask.append(False)

            nursery.start_soon(ask)
            await world.entered.wait()
            scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert replies == []  # still waiting, not cut short
            world.gate.set()
        assert replies == [Written(("a",))]
        assert after_ask == [True]
        assert scope.cancelled_caught


@TIMEOUTS
async def test_an_unshielded_ask_in_the_same_place_loses_its_reply_to_the_cancel(timeout: float | None) -> None:
    """The contrast to the test above: what ``shield=True`` is for."""
    world = World()
    async with open_runtime() as rt:
        ref = await _spawn(rt, world)
        client = rt.client("asker")
        replies: list[object] = []
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def ask() -> None:
                with scope:
                    replies.append(await client.ask(ref, SlowWrite("a"), timeout=timeout))

            nursery.start_soon(ask)
            await world.entered.wait()
            scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert rt.statistics().pending_asks == 0  # the asker gave up at once
            world.gate.set()
            await trio.testing.wait_all_tasks_blocked()
        assert world.log == ["a"]  # the handler itself is never cut short
        assert replies == []
        assert scope.cancelled_caught
        assert rt.statistics().dropped == 1  # its late reply, dropped


@TIMEOUTS
@pytest.mark.parametrize("inline", [True, False], ids=["inline", "mailbox"])
async def test_two_shielded_asks_in_an_already_cancelled_scope_both_finish_with_no_cancel_point_between(
        inline: bool, timeout: float | None) -> None:
    world = World()
    world.gate.set()
    async with open_runtime() as rt:
        ref = await _spawn(rt, world)
        client = rt.client("asker")
        replies: list[object] = []
        with trio.CancelScope() as scope:
            scope.cancel()
            for text in ("commit", "apply"):
                replies.append(await client.ask(ref, Write(text) if inline else SlowWrite(text), shield=True,
                                                timeout=timeout))
            replies.append("after both")
            await trio.lowlevel.checkpoint()
            replies.append("never")
        assert scope.cancelled_caught
        assert replies == [Written(("commit",)), Written(("commit", "apply")), "after both"]


@pytest.mark.parametrize("message", [Hang(), DeferredWrite("never answered")], ids=["mailbox", "deferred"])
async def test_a_shielded_asks_own_timeout_still_applies(message: Message) -> None:
    world = World()
    async with open_runtime(drain_timeout=0.1) as rt:  # the hanging handler is cancelled at the end
        ref = await _spawn(rt, world)
        client = rt.client("asker")
        with trio.fail_after(5):
            start = trio.current_time()
            with pytest.raises(AskTimeoutError):
                await client.ask(ref, message, timeout=0.2, shield=True)
            assert 0.2 <= trio.current_time() - start < 2

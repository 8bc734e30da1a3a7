"""Bad input never hangs or crashes the runtime: each gives a specific error or an audited drop."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.protocol.wire import (
    MalformedDataError,
    UnknownMessageTypeError,
    UnsupportedSchemaVersionError,
    make_converter,
)
from livecontext.runtime import (
    Actor,
    ActorStoppedError,
    AskTimeoutError,
    AuditEvent,
    AuditRecord,
    UnhandledMessageError,
    handler,
    open_runtime,
)


@frozen
class Order(Message):
    item: str
    quantity: int


@frozen
class Confirmed(Message):
    item: str


@frozen
class Unknown(Message):
    pass


@frozen
class SlowOrder(Message):
    pass


class Shop(Actor):
    @handler
    async def on_order(self, msg: Order) -> Confirmed:
        return Confirmed(msg.item)

    @handler
    async def on_slow(self, msg: SlowOrder) -> Confirmed:
        await trio.sleep(5)
        return Confirmed("late")


async def test_every_kind_of_bad_input_gets_its_specific_error_and_the_runtime_keeps_serving(
    autojump_clock: trio.testing.MockClock,
) -> None:
    converter = make_converter(extra_types=[Order, Confirmed])
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        shop = await rt.spawn(Shop, "shop/main")
        stopped = await rt.spawn(Shop, "shop/closed")
        await rt.stop(stopped)
        client = rt.client("gateway")
        assert await client.ask(shop, Order("tea", 1)) == Confirmed("tea")
        order_envelope = records[0].envelope

        # a message of a type the actor does not handle
        with pytest.raises(UnhandledMessageError, match="actor shop/main has no handler for Unknown"):
            await client.tell(shop, Unknown())
        # a message to a stopped actor
        with pytest.raises(ActorStoppedError, match="actor shop/closed is stopped"):
            await client.ask(stopped, Order("tea", 1))
        # a reply to an unknown correlation id (its ask timed out): an audited drop
        with pytest.raises(AskTimeoutError):
            await client.ask(shop, SlowOrder(), timeout=1)
        await trio.sleep(10)
        assert [r.event for r in records].count(AuditEvent.DROPPED) == 1
        # serialized envelopes from outside the process: decoded, or refused with a specific error
        good = json.loads(converter.envelope_to_json(order_envelope))
        bad_inputs = {
            "{truncated": MalformedDataError,
            json.dumps({**good, "schema": 7}): UnsupportedSchemaVersionError,
            json.dumps({**good, "payload": {"type": "Refund"}}): UnknownMessageTypeError,
            json.dumps({**good, "payload": {"type": "Order", "item": "tea", "quantity": "many"}}): MalformedDataError,
        }
        for text, error in bad_inputs.items():
            with pytest.raises(error):
                converter.envelope_from_json(text)
        wire = converter.envelope_to_json(converter.envelope_from_json(json.dumps(
            {**good, "payload": {"type": "Order", "item": "tea", "quantity": 2}})))
        assert await client.ask(shop, converter.envelope_from_json(wire).payload) == Confirmed("tea")
        assert rt.is_running(shop)

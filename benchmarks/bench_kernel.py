"""Throughput of the actor kernel against raw trio memory channels, in one run.

Run it from the repository root (not part of the test suite)::

    .venv/bin/python benchmarks/bench_kernel.py            # under half a minute
    .venv/bin/python benchmarks/bench_kernel.py --quick    # a few seconds, rougher figures
    .venv/bin/python benchmarks/bench_kernel.py --cpu      # rates per second of this process's CPU

It prints, all with the same channel buffer (the kernel's default mailbox size):

- raw trio: one-way ``await send`` / ``await receive`` (msg/s), the same messages moved with
  ``send_nowait`` / ``receive_nowait`` (msg/s), and a ping-pong over two channels (round trips/s);
- the kernel: ``tell`` from a client to an actor that counts (msg/s), ``ask`` round trips
  (round trips/s) to an ``async def`` handler (with the default 30 s timeout, and with
  ``timeout=None``: no cancel scope) and to a plain ``def`` one (``@handler(inline=True)``: the
  same mailbox, no coroutine), ``publish`` to 100 subscribed actors (deliveries/s);
- the ratios against raw trio, with the target of the one-delivery-path kernel (ask >= 0.4x
  raw ping-pong: every message goes through the mailbox), and against autogen-core's figures
  measured on the same machine (3,300 ask round trips/s, 13,000 fan-out deliveries/s).

Each figure is the median of several repetitions, each sized to take about half a second.
On a shared machine, wall-clock rates swing with the other processes' load; ``--cpu`` divides
by this process's CPU time instead (``time.process_time``), which the load disturbs far less.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Awaitable, Callable

import trio
from attrs import frozen

from livecontext.protocol.kernel import Message, Topic
from livecontext.runtime import Actor, handler, open_runtime

BUFFER = 128
"""Channel buffer and mailbox size for every measurement (the kernel's default mailbox)."""
FANOUT = 100
AUTOGEN_ASK_RT_S = 3_300
AUTOGEN_FANOUT_S = 13_000
ISSUE_RAW_PINGPONG_RT_S = 34_000
ISSUE_RAW_ONEWAY_S = 72_000
TOPIC = Topic("bench")


@frozen
class Item(Message):
    n: int


@frozen
class Count(Message):
    pass


@frozen
class Counted(Message):
    n: int


class Counter(Actor):
    def __init__(self) -> None:
        self.n = 0

    async def on_start(self) -> None:
        self.ctx.subscribe(TOPIC)

    @handler
    async def on_item(self, msg: Item) -> None:
        self.n += 1

    @handler
    async def on_count(self, msg: Count) -> Counted:
        return Counted(self.n)


class Echo(Actor):
    @handler
    async def on_item(self, msg: Item) -> Item:
        return msg


class InlineEcho(Actor):
    """The same handler as a plain ``def``: through the same mailbox, called without a coroutine."""

    @handler(inline=True)
    def on_item(self, msg: Item) -> Item:
        return msg


# -- raw trio ---------------------------------------------------------------------------------------


async def raw_oneway(n: int) -> float:
    send, receive = trio.open_memory_channel[int](BUFFER)

    async def produce() -> None:
        for i in range(n):
            await send.send(i)

    async def consume() -> None:
        for _ in range(n):
            await receive.receive()

    start = CLOCK()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(produce)
        nursery.start_soon(consume)
    return CLOCK() - start


async def raw_nowait(n: int) -> float:
    send, receive = trio.open_memory_channel[int](BUFFER)
    start = CLOCK()
    moved = 0
    while moved < n:
        batch = min(BUFFER, n - moved)
        for i in range(batch):
            send.send_nowait(i)
        for _ in range(batch):
            receive.receive_nowait()
        moved += batch
    elapsed = CLOCK() - start
    await trio.lowlevel.checkpoint()
    return elapsed


async def raw_pingpong(n: int) -> float:
    ping_send, ping_receive = trio.open_memory_channel[int](BUFFER)
    pong_send, pong_receive = trio.open_memory_channel[int](BUFFER)

    async def ponger() -> None:
        for _ in range(n):
            await pong_send.send(await ping_receive.receive())

    start = CLOCK()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ponger)
        for i in range(n):
            await ping_send.send(i)
            await pong_receive.receive()
    return CLOCK() - start


# -- the kernel -----------------------------------------------------------------------------------------


async def kernel_tell(n: int) -> float:
    async with open_runtime() as rt:
        ref = await rt.spawn(Counter, "bench/counter", mailbox_size=BUFFER)
        client = rt.client("producer")
        start = CLOCK()
        for i in range(n):
            await client.tell(ref, Item(i))
        reply = await client.ask(ref, Count())  # every tell handled
        elapsed = CLOCK() - start
        assert reply.n == n, reply
    return elapsed


async def kernel_ask(n: int, actor: type[Actor] = Echo, timeout: float | None = 30.0) -> float:
    async with open_runtime() as rt:
        ref = await rt.spawn(actor, "bench/echo", mailbox_size=BUFFER)
        client = rt.client("asker")
        item = Item(1)
        start = CLOCK()
        for _ in range(n):
            await client.ask(ref, item, timeout=timeout)
        return CLOCK() - start


async def kernel_fanout(deliveries: int) -> float:
    messages = max(1, deliveries // FANOUT)
    async with open_runtime() as rt:
        refs = [await rt.spawn(Counter, f"bench/sub{i}", mailbox_size=BUFFER) for i in range(FANOUT)]
        client = rt.client("publisher")
        start = CLOCK()
        for i in range(messages):
            await client.publish(TOPIC, Item(i))
        for ref in refs:  # every delivery handled
            reply = await client.ask(ref, Count())
            assert reply.n == messages, reply
        elapsed = CLOCK() - start
    return elapsed * deliveries / (messages * FANOUT)


# -- measuring --------------------------------------------------------------------------------------------


CLOCK = time.perf_counter
"""What the measurements read: the wall clock, or with ``--cpu`` this process's CPU time."""


async def rate(run: Callable[[int], Awaitable[float]], *, target_s: float, reps: int) -> float:
    """Units per second: the median of ``reps`` runs, each sized to take about ``target_s``."""
    n = 1_000
    while True:  # calibrate
        elapsed = await run(n)
        if elapsed >= target_s / 10:
            break
        n *= 4
    n = max(1, int(n * target_s / elapsed))
    return statistics.median([n / await run(n) for _ in range(reps)])


def _line(label: str, value: float, unit: str) -> None:
    print(f"  {label:<44} {value:>13,.0f} {unit}")


def _ratio(label: str, value: float, target: float | None = None) -> None:
    verdict = "" if target is None else ("  (target >= %.2f: %s)" % (target, "met" if value >= target else "MISSED"))
    print(f"  {label:<44} {value:>13.2f}x{verdict}")


async def main(target_s: float, reps: int) -> None:
    print(f"livecontext kernel benchmark: trio {trio.__version__}, buffer/mailbox {BUFFER}, "
          f"median of {reps} runs of ~{target_s:g} s each, "
          f"{'per second of CPU' if CLOCK is time.process_time else 'per second of wall time'}\n")
    print("raw trio memory channels")
    oneway = await rate(raw_oneway, target_s=target_s, reps=reps)
    _line("one-way await send / await receive", oneway, "msg/s")
    nowait = await rate(raw_nowait, target_s=target_s, reps=reps)
    _line("send_nowait / receive_nowait", nowait, "msg/s")
    pingpong = await rate(raw_pingpong, target_s=target_s, reps=reps)
    _line("ping-pong over two channels", pingpong, "round trips/s")

    print("\nlivecontext kernel")
    tell = await rate(kernel_tell, target_s=target_s, reps=reps)
    _line("tell, client -> counting actor", tell, "msg/s")
    ask = await rate(kernel_ask, target_s=target_s, reps=reps)
    _line("ask round trips", ask, "round trips/s")
    untimed = await rate(lambda n: kernel_ask(n, timeout=None), target_s=target_s, reps=reps)
    _line("ask round trips, timeout=None", untimed, "round trips/s")
    inline = await rate(lambda n: kernel_ask(n, InlineEcho), target_s=target_s, reps=reps)
    _line("ask round trips, plain def handler", inline, "round trips/s")
    fanout = await rate(kernel_fanout, target_s=target_s, reps=reps)
    _line(f"publish to {FANOUT} subscribers", fanout, "deliveries/s")

    print("\nratios")
    _ratio("kernel tell / raw one-way channel", tell / oneway)
    _ratio("kernel ask / raw ping-pong", ask / pingpong, 0.4)
    _ratio("ask, timeout=None / raw ping-pong", untimed / pingpong)
    _ratio("plain def ask / raw ping-pong", inline / pingpong)
    _ratio("kernel tell / raw send_nowait+receive_nowait", tell / nowait)

    print("\nfor reference (issue 2, measured on the project's machine)")
    _line("raw trio one-way send/receive", ISSUE_RAW_ONEWAY_S, "msg/s")
    _line("raw trio ping-pong", ISSUE_RAW_PINGPONG_RT_S, "round trips/s")
    _line("autogen-core send_message", AUTOGEN_ASK_RT_S, "round trips/s")
    _line("autogen-core fan-out", AUTOGEN_FANOUT_S, "deliveries/s")
    _ratio("kernel ask / autogen-core send_message", ask / AUTOGEN_ASK_RT_S)
    _ratio("plain def ask / autogen-core send_message", inline / AUTOGEN_ASK_RT_S)
    _ratio("kernel fan-out / autogen-core fan-out", fanout / AUTOGEN_FANOUT_S)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, rougher figures")
    parser.add_argument("--cpu", action="store_true", help="rates per second of this process's CPU time")
    args = parser.parse_args()
    if args.cpu:
        CLOCK = time.process_time
    trio.run(main, 0.1 if args.quick else 0.5, 3 if args.quick else 5)

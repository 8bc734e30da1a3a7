"""A system on asyncio: :func:`open_aio_system` and the :class:`AioSystem` it gives
(``livecontext.aio.open_system``), whose methods are :class:`System`'s as asyncio coroutines.

The system runs on Trio, in the guest run of the running asyncio loop that its agents' and
every other ``livecontext.aio`` agent's of that loop share (the runtime's
:class:`~livecontext.runtime.InGuest`). A cancelled :meth:`AioSystem.send` (or
:meth:`AioSystem.run_inputs`, :meth:`AioSystem.approve`, :meth:`AioSystem.deny`) cancels its
turn, which cancels the agent's run: nobody would read its answer (as :meth:`System.send`
cancelled under Trio).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from livecontext.protocol.agent import InputMode
from livecontext.runtime import InGuest

from ._running import AgentAnswer, InputsRun, System, SystemAgent, SystemStatus, agent_named, open_system
from ._system_log import SystemFork

if TYPE_CHECKING:
    from livecontext.actors.blueprint import SystemBlueprint

T = TypeVar("T")


@contextlib.asynccontextmanager
async def open_aio_system(blueprint: SystemBlueprint | str | os.PathLike[str],
                          **keywords: Any) -> AsyncIterator[AioSystem]:
    """Run a system of agents from asyncio for the ``async with`` block:
    ``async with livecontext.aio.open_system("team.toml") as system: await system.send("lead", "go")``.

    The arguments are :func:`open_system`'s, every one. The system runs in the Trio guest run
    of the running asyncio loop (started if none runs), and is closed when the block ends.

    Raises:
        UsageError: no asyncio event loop runs in this thread.
        Whatever :func:`open_system` raises, as it raises it.
    """
    system = AioSystem(blueprint, keywords)
    await system._open()
    try:
        yield system
    finally:
        await system.aclose()


class AioSystem:
    """A running system for asyncio code: :class:`System`'s calls as coroutines. Made by
    ``livecontext.aio.open_system``; valid inside its ``async with``, and in the asyncio loop
    that opened it only."""

    def __init__(self, blueprint: SystemBlueprint | str | os.PathLike[str], keywords: Mapping[str, Any]) -> None:
        self._held: InGuest[System] = InGuest(lambda: open_system(blueprint, **keywords), "the system",
                                              "livecontext.aio.open_system(...)")
        self.name = ""
        """The system's name."""
        self.agents: Mapping[str, SystemAgent] = {}
        """The agents by name, in the blueprint's order (:attr:`System.agents`)."""

    def __repr__(self) -> str:
        return f"<AioSystem {self.name!r}, {'closed' if self._held.closed else 'open'}>"

    def agent(self, name: str) -> SystemAgent:
        """The agent named ``name`` (:meth:`System.agent`).

        Raises:
            UsageError: there is none; the message names the agents there are.
        """
        return agent_named(self.agents, self.name, name)

    async def send(self, name: str, text: str, *, mode: InputMode | str = InputMode.QUEUE) -> AgentAnswer:
        """Give agent ``name`` the input ``text`` and run it until it waits for input again:
        :meth:`System.send`. Cancelled, it cancels the agent's run."""
        return await self._call(lambda system: system.send(name, text, mode=mode), "send")

    async def run_inputs(self, inputs: Mapping[str, Sequence[str]] | None = None) -> InputsRun:
        """Run every agent that has something to do, at once, each in one turn:
        :meth:`System.run_inputs`."""
        return await self._call(lambda system: system.run_inputs(inputs), "run_inputs")

    async def status(self) -> SystemStatus:
        """Each agent's thread, state, status, entries, apps and usage: :meth:`System.status`."""
        return await self._call(lambda system: system.status(), "status")

    async def approve(self, name: str, call_id: str, arguments: str | Mapping[str, Any] | None = None, *,
                      by: str = "user") -> AgentAnswer:
        """Approve agent ``name``'s call waiting for approval and run it on: :meth:`System.approve`."""
        return await self._call(lambda system: system.approve(name, call_id, arguments, by=by), "approve")

    async def deny(self, name: str, call_id: str, reason: str = "", *, by: str = "user") -> AgentAnswer:
        """Deny agent ``name``'s call waiting for approval and run it on: :meth:`System.deny`."""
        return await self._call(lambda system: system.deny(name, call_id, reason, by=by), "deny")

    async def checkpoint(self) -> int:
        """The system seq of the latest record of any of its threads: :meth:`System.checkpoint`."""
        return await self._call(_checkpoint, "checkpoint")

    async def fork(self, new_name: str, *, at: int | None = None) -> SystemFork:
        """Fork the whole system into a new system ``new_name``: :meth:`System.fork`."""
        return await self._call(lambda system: system.fork(new_name, at=at), "fork")

    async def aclose(self) -> None:
        """Close the system (what the ``async with`` block's end does): a call still running is
        cancelled (its caller gets a :class:`UsageError`); after the last agent or system of
        the loop, the guest run ends. Closing again does nothing."""
        await self._held.aclose()

    async def _open(self) -> None:
        system = await self._held.open()
        self.name, self.agents = system.name, system.agents
        self._held.what = f"system {system.name!r}"

    async def _call(self, function: Callable[[System], Awaitable[T]], name: str) -> T:
        return await self._held.call(function, name)


async def _checkpoint(system: System) -> int:
    return system.checkpoint()

"""livecontext on asyncio: the front door's :func:`open_agent`, whose agent's methods are
asyncio coroutines (and :meth:`AioAgent.stream` an async iterator), and :func:`open_system`,
whose system's are too::

    import asyncio, livecontext.aio

    async def main() -> None:
        async with livecontext.aio.open_agent(model="echo") as agent:
            print((await agent.send("hello")).text)

    asyncio.run(main())

In a notebook, whose cells cannot keep an ``async with`` open, :func:`start_agent` gives the
agent open (``agent = await livecontext.aio.start_agent(model="echo")``, later ``await
agent.aclose()``).

The agents and systems run on Trio, as a guest of the running asyncio loop (one guest run per
loop, shared by every agent and system open in it): docs/asyncio.md says how, and what cancelling a call does.
"""

from __future__ import annotations

from livecontext.actors.front import AioAgent, open_aio_agent as open_agent, start_aio_agent as start_agent
from livecontext.actors.system import AioSystem, open_aio_system as open_system

__all__ = ["AioAgent", "AioSystem", "open_agent", "open_system", "start_agent"]

"""The asyncio front door without an ``async with``: :func:`start_aio_agent`
(``livecontext.aio.start_agent``), for a notebook, whose cells cannot hold a block open from
one cell to the next::

    agent = await livecontext.aio.start_agent(model="echo", store="sqlite:chat.db", thread="chat")
    (await agent.send("hello")).text          # in any later cell
    await agent.aclose()                      # when done

The agent is the one :func:`open_aio_agent` gives, in the same Trio guest run of the loop (a
notebook kernel's loop runs between cells, so the agent's actors do too). A cell run again
opens its thread again: the agent this function opened before on the same store file and
thread, in the same loop, is closed first (else the second would find the thread busy).
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from typing import Any

from livecontext.runtime import UsageError

from ._aio import AioAgent

_log = logging.getLogger("livecontext")

_STARTED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], weakref.ref[AioAgent]]] = (
    weakref.WeakKeyDictionary())
"""The agents :func:`start_aio_agent` opened in each loop, by (store URL, thread). (Weakly: an
agent holds its loop, which must not be kept alive by this.)"""


async def start_aio_agent(**keywords: Any) -> AioAgent:
    """Open an agent from asyncio and give it, open, for code that cannot keep an ``async
    with`` block around its use (a notebook's cells): ``agent = await
    livecontext.aio.start_agent(model="echo")``; close it with ``await agent.aclose()``.

    The keywords are :func:`open_agent`'s, every one. An agent this function opened before in
    this loop on the same store (a URL given as ``store``, not ``memory:``) and thread, still
    open, is closed first: running a notebook cell again replaces its agent.

    Raises:
        UsageError: no asyncio event loop runs in this thread.
        Whatever :func:`open_agent` raises, as it raises it.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise UsageError("livecontext.aio.start_agent needs a running asyncio event loop: call it with `await` in "
                         "a notebook cell or in `async def` run by asyncio.run(...)") from None
    started = _STARTED.setdefault(loop, {})
    key = _key(keywords)
    if key is not None and (before := started.pop(key, _gone)()) is not None:
        _log.info("closing the agent of thread %s that livecontext.aio.start_agent opened before in this loop, "
                  "to open it again", key[1])
        await before.aclose()
    agent = AioAgent(keywords)
    await agent._open()
    if key is not None:
        started[key] = weakref.ref(agent)
    return agent


def _gone() -> None:
    return None


def _key(keywords: dict[str, Any]) -> tuple[str, str] | None:
    """The agent's (store, thread) when its store is a file or server named by URL (a
    ``memory:`` store is new each time, an open store object or a blueprint's is not known)."""
    store = keywords.get("store")
    if not isinstance(store, str | os.PathLike) or str(store).strip().startswith("memory:"):
        return None
    return str(store).strip(), str(keywords.get("thread") or "main")

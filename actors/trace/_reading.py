"""What can go wrong reading a store for a trace, and reading a thread there."""

from __future__ import annotations

from livecontext.runtime import UsageError
from livecontext.runtime.persistence import EventStore, ThreadNotFoundError, ThreadReader


class TraceError(UsageError):
    """A trace cannot be made as asked (the message says what to ask instead)."""


class ThreadMissingError(TraceError):
    """The store holds no such thread (or the system has no such thread)."""


class SeqPastEndError(TraceError):
    """``at`` names a seq the thread (or the system) has not reached."""


async def open_thread(store: EventStore, thread_id: str) -> ThreadReader:
    """A reader of ``thread_id``.

    Raises:
        ThreadMissingError: the store has no such thread (the message names those it has).
    """
    try:
        return await store.open_reader(thread_id)
    except ThreadNotFoundError:
        threads = [info.thread_id for info in await store.threads()]
        raise ThreadMissingError(f"thread {thread_id!r} does not exist in {store.url}; "
                                 + listing(threads, store.url)) from None


def listing(threads: list[str], url: str) -> str:
    """Some of ``threads`` by name, and how to list them all."""
    if not threads:
        return "it holds no threads yet"
    shown = ", ".join(threads[:8]) + (f" and {len(threads) - 8} more" if len(threads) > 8 else "")
    return f"its threads: {shown} (`livecontext threads --store {url}` lists them)"

"""A task that counts how often it gets to run: shows whether code lets other tasks run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


class Turns:
    """How many times the busy task has run since :func:`busy_task` started it."""

    def __init__(self) -> None:
        self.count = 0


@asynccontextmanager
async def busy_task() -> AsyncIterator[Turns]:
    """Run a task that counts its turns and yields at once each time, until the block ends.

    The count starts once the task has run its first turn, so it counts only turns taken
    while the block's code runs.
    """
    turns = Turns()

    async def busy() -> None:
        while True:
            turns.count += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(busy)
        await trio.lowlevel.checkpoint()
        turns.count = 0
        yield turns
        nursery.cancel_scope.cancel()

"""Ctrl-C for the commands: stop the thread cleanly, say where it is, exit 130, in time."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, NoReturn, TypeVar

import trio

from livecontext.runtime import LivecontextError

if TYPE_CHECKING:
    from ..agent import Stopped

T = TypeVar("T")

DEADLINE_S = 5.0
"""How long a command may take to stop after Ctrl-C before it is ended at once."""


class Interrupted(LivecontextError):
    """Ctrl-C cancelled a command outside any of its interruptible regions."""


class Interrupt:
    """Ctrl-C during one command.

    The first Ctrl-C cancels the command's :meth:`region` in progress (typically, waiting for
    the engine or for a typed line), so that the command can stop its thread the ordinary way
    (cancel the step in flight, record the pause, close the store) and say where it stopped;
    outside any region it cancels the whole command (:class:`Interrupted`). A second Ctrl-C,
    or :data:`DEADLINE_S` passing, ends the process at once with :attr:`hard_message`: the
    log needs no clean-up for that (an append is whole or absent, as after ``kill -9``).

    Trio delivers a plain Ctrl-C as a ``KeyboardInterrupt`` raised wherever the program is,
    inside exception groups; taking the signal ourselves avoids both.
    """

    def __init__(self, deadline_s: float = DEADLINE_S) -> None:
        self.caught = False
        """Ctrl-C was pressed."""
        self.hard_message = f"interrupted; did not stop within {deadline_s:g} s and was stopped at once"
        """What is said if the command does not stop in time (set by the command)."""
        self.again_message = "interrupted again; stopped at once"
        """What is said at a second Ctrl-C (set by the command)."""
        self._deadline_s = deadline_s
        self._regions: list[trio.CancelScope] = []
        self._whole = trio.CancelScope()
        self._timer: threading.Timer | None = None

    @contextlib.contextmanager
    def region(self) -> Iterator[trio.CancelScope]:
        """A block that Ctrl-C cancels (and that does not start if it came already); check
        :attr:`caught` after it."""
        with trio.CancelScope() as scope:
            if self.caught:
                scope.cancel()
            self._regions.append(scope)
            try:
                yield scope
            finally:
                self._regions.remove(scope)

    def _interrupt(self) -> None:
        if self.caught:
            self._force(self.again_message)
        self.caught = True
        # a thread, not a task: it fires even if the event loop is stuck
        self._timer = threading.Timer(self._deadline_s, lambda: self._force(self.hard_message))
        self._timer.daemon = True
        self._timer.start()
        for scope in self._regions or [self._whole]:
            scope.cancel()

    def _force(self, message: str) -> None:
        sys.stderr.write(f"livecontext: {message}\n")
        sys.stderr.flush()
        os._exit(130)

    async def guard(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` with Ctrl-C taken as described above.

        Raises:
            Interrupted: Ctrl-C cancelled ``fn`` outside its regions.
        """
        try:
            with trio.open_signal_receiver(signal.SIGINT) as signals:
                async with trio.open_nursery() as nursery:
                    async def watch() -> None:
                        async for _ in signals:
                            self._interrupt()

                    nursery.start_soon(watch)
                    try:
                        with self._whole:
                            result = await fn()
                    finally:
                        nursery.cancel_scope.cancel()
        finally:
            if self._timer is not None:
                self._timer.cancel()
        if self._whole.cancelled_caught:
            raise Interrupted
        return result


def resume_command(command: str, thread_id: str, store_url: str) -> str | None:
    """The command that resumes ``thread_id`` (``None``: a memory store keeps nothing)."""
    from livecontext.runtime.persistence import default_store_url

    if store_url.startswith("memory:"):
        return None
    store = "" if store_url == default_store_url() else f" --store {store_url}"
    return f"livecontext {command} --thread {thread_id}{store}"


def interrupting(thread_id: str, store_url: str, resume: str | None) -> Interrupt:
    """An :class:`Interrupt` for a command that runs ``thread_id``."""
    interrupt = Interrupt()
    then = f"; `{resume}` resumes it" if resume else " (its memory: store is gone)"
    interrupt.hard_message = (f"interrupted; thread {thread_id} did not stop within {DEADLINE_S:g} s and was "
                              f"stopped at once (its log is whole){then}")
    interrupt.again_message = f"interrupted again; thread {thread_id} was stopped at once (its log is whole){then}"
    return interrupt


def say_interrupted(thread_id: str, stopped: Stopped, resume: str | None, *, at_once: bool = False) -> NoReturn:
    """Say where an interrupted thread stopped, and what it did not record; exit 130.

    ``at_once``: end the process without the interpreter's shutdown, which would wait for a
    thread still blocked reading standard input (a read cannot be cancelled) and then fail on
    the lock it holds. Everything of ours is closed by then.
    """
    for text in stopped.unrecorded:
        shown = text if len(text) <= 60 else text[:59] + "…"
        sys.stderr.write(f"livecontext: note: the input {shown!r} was not recorded (the run stopped before "
                         "taking it): give it again\n")
    then = f", `{resume}` resumes it" if resume else " (its memory: store is gone with this process)"
    sys.stderr.write(f"livecontext: interrupted; thread {thread_id} is at {stopped.state.value}{then}\n")
    if at_once:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(130)

"""Trio as a guest of asyncio: what ``livecontext.aio`` is built on.

The runtime runs on Trio. An asyncio program (an ASGI server, Jupyter, a script under
``asyncio.run``) reaches it through a Trio *guest run* of its loop
(``trio.lowlevel.start_guest_run``): one per loop, in the loop's own thread, so no message hops
between threads. :class:`InGuest` is one thing opened in that run (an agent, a system): a task
of the guest's nursery enters its ``async with`` and holds it until it is closed; each call
from asyncio is a task of that nursery, in a cancel scope of its own, and completes an
``asyncio.Future``:

- the Trio call's result is the asyncio caller's; an exception it raises is raised in the
  caller, the same object (its own type);
- an asyncio caller cancelled cancels its call's scope and waits until the call is over (a call
  may first stop what it started: :meth:`InGuest.start`'s ``stop``), so nothing of it goes on
  behind the caller's back.

The guest run starts with the first thing opened in a loop and ends when the last one open in
it closes (a later one starts a new run, once the old one has ended).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, AsyncContextManager, Generic, TypeVar

import trio

from ._errors import UsageError

T = TypeVar("T")
H = TypeVar("H")

_log = logging.getLogger("livecontext")


class GuestCall(Generic[H, T]):
    """One call crossing from asyncio into the guest (its Trio state touched only in the guest)."""

    def __init__(self, function: Callable[[H], Awaitable[T]], name: str,
                 stop: Callable[[H, GuestCall[H, Any]], Awaitable[None]] | None,
                 future: asyncio.Future[T]) -> None:
        self.function = function
        self.name = name
        self.stop = stop
        """What a caller's cancellation does first, before the call's scope is cancelled."""
        self.future = future
        self.cancel_asked = trio.Event()
        self.stop_first = False
        self.by_caller = False
        self.task: trio.lowlevel.Task | None = None
        """The Trio task running the call (set once it started)."""
        self.done = trio.Event()

    def cancel(self, by_caller: bool) -> None:
        """Cancel the call (run in the guest): ``by_caller``, its asyncio caller was cancelled
        (its ``stop`` runs first); else the held thing is closing, or a reader stopped early."""
        self.by_caller = by_caller
        self.stop_first = by_caller and self.stop is not None
        self.cancel_asked.set()


class InGuest(Generic[H]):
    """A thing opened in the guest run of the running asyncio loop, and the calls into it.

    ``opener`` makes the async context manager that opens it (entered in the guest);
    ``what`` names it in errors (``"the agent of thread main"``) and ``again`` says how to open
    one again (``"livecontext.aio.open_agent(...)"``). Valid in the loop that opened it only.
    """

    def __init__(self, opener: Callable[[], AsyncContextManager[H]], what: str, again: str) -> None:
        self._opener = opener
        self.what = what
        self._again = again
        self._guest: _Guest | None = None
        self.value: H | None = None
        """What was opened (touched from asyncio only to read plain attributes)."""
        self.closed = False
        # (the guest's side: touched only in the Trio run)
        self._closing: trio.Event | None = None
        self._calls: set[GuestCall[H, Any]] = set()
        self._holder_done: asyncio.Future[None] | None = None
        self._open_scope: trio.CancelScope | None = None

    @property
    def guest(self) -> _Guest:
        assert self._guest is not None, "open() first"
        return self._guest

    # -- the asyncio side

    async def open(self) -> H:
        """Open it in the guest run of the running loop (started if none runs).

        Raises:
            UsageError: no asyncio event loop runs in this thread.
            Whatever the opener raises, as it raises it.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError(f"{self._again} needs a running asyncio event loop: use it inside `async def` run "
                             "by asyncio.run(...), or use livecontext.open_sync_agent from plain code") from None
        guest = self._guest = await _guest_of(loop)
        opened: asyncio.Future[H] = guest.watch(loop.create_future())
        self._holder_done = guest.watch(loop.create_future())
        try:
            guest.soon(guest.start_soon, self._hold, opened)
            try:
                value = await asyncio.shield(opened)
            except asyncio.CancelledError:
                self.closed = True
                guest.soon(self._close_in_guest)
                await uncancellable(self._holder_done)
                raise
            except BaseException:
                self.closed = True
                await uncancellable(self._holder_done)
                raise
        except BaseException:
            await guest.release()
            raise
        guest.held.add(self)
        return value

    async def call(self, function: Callable[[H], Awaitable[T]], name: str, *,
                   stop: Callable[[H, GuestCall[H, Any]], Awaitable[None]] | None = None) -> T:
        """Run ``function(value)`` in the guest and give its outcome (see :meth:`start`)."""
        return await self.finish(self.start(function, name, stop=stop))

    def start(self, function: Callable[[H], Awaitable[T]], name: str, *,
              stop: Callable[[H, GuestCall[H, Any]], Awaitable[None]] | None = None) -> GuestCall[H, T]:
        """Start ``function(value)`` in the guest; :meth:`finish` waits for it. If the caller is
        cancelled, ``stop(value, call)`` runs first (shielded), then the call is cancelled.

        Raises:
            UsageError: it is closed, or this is not the loop that opened it.
        """
        if self.closed or self.value is None:
            raise UsageError(f"{self.what} is closed: open one again with {self._again}")
        if asyncio.get_running_loop() is not self.guest.loop:
            raise UsageError(f"{name} was called from another asyncio loop than the one that opened "
                             f"{self.what}: use it only in the loop that opened it")
        call: GuestCall[H, T] = GuestCall(function, name, stop, self.guest.watch(self.guest.loop.create_future()))
        self.guest.soon(self.guest.start_soon, self._serve, call)
        return call

    async def finish(self, call: GuestCall[H, T]) -> T:
        """The outcome of ``call``; cancelled, the caller cancels the call and waits for its end."""
        try:
            return await asyncio.shield(call.future)
        except asyncio.CancelledError:
            if not call.future.done():
                self.guest.soon(call.cancel, True)
                with contextlib.suppress(BaseException):
                    await uncancellable(call.future)
            if not call.future.cancelled():
                call.future.exception()  # (its outcome is not the cancelled caller's: read, so not reported)
            raise

    async def aclose(self) -> None:
        """Close it: a call still running is cancelled (its caller gets a :class:`UsageError`);
        after the last thing open in the loop, the guest run ends. Closing again does nothing.

        Raises:
            Whatever closing raised in the guest, as it raised it.
        """
        if self.closed:
            return
        self.closed = True
        done = self._holder_done
        if done is None:
            return
        self.guest.held.discard(self)
        self.guest.soon(self._close_in_guest)
        try:
            await uncancellable(done)
        finally:
            await self.guest.release()

    # -- the guest's side (Trio)

    async def _hold(self, opened: asyncio.Future[H]) -> None:
        assert self._holder_done is not None
        self._closing = trio.Event()
        try:
            with trio.CancelScope() as scope:
                self._open_scope = scope
                if self.closed:
                    scope.cancel()
                async with self._opener() as value:
                    self.value = value
                    resolve(opened, value)
                    await self._closing.wait()
                    for call in list(self._calls):
                        call.cancel(False)
                    for call in list(self._calls):
                        await call.done.wait()
            if not opened.done():
                opened.set_exception(asyncio.CancelledError())
        except Exception as exc:
            if not opened.done():
                opened.set_exception(exc)
                resolve(self._holder_done, None)
            else:
                self._holder_done.set_exception(exc)
        else:
            resolve(self._holder_done, None)
        finally:
            self.value = None

    def _close_in_guest(self) -> None:
        if self._closing is not None:
            self._closing.set()
        if self.value is None and self._open_scope is not None:
            self._open_scope.cancel()

    async def _serve(self, call: GuestCall[H, T]) -> None:
        value = self.value
        if value is None or (self._closing is not None and self._closing.is_set()):
            fail(call.future, UsageError(f"{self.what} is closed: open one again with {self._again}"))
            call.done.set()
            return
        self._calls.add(call)
        ended = False
        try:
            async with trio.open_nursery() as nursery:

                async def body() -> None:
                    nonlocal ended
                    call.task = trio.lowlevel.current_task()
                    try:
                        result = await call.function(value)
                    except Exception as exc:
                        ended = True
                        fail(call.future, exc)
                    else:
                        ended = True
                        resolve(call.future, result)
                    nursery.cancel_scope.cancel()

                nursery.start_soon(body)
                await call.cancel_asked.wait()
                if call.stop_first and not ended:
                    assert call.stop is not None
                    with trio.CancelScope(shield=True):
                        try:
                            await call.stop(value, call)
                        except Exception:
                            _log.warning("stopping the work of %s's %s for a cancelled asyncio caller failed",
                                         self.what, call.name, exc_info=True)
                nursery.cancel_scope.cancel()
        finally:
            self._calls.discard(call)
            if not call.future.done():
                if call.by_caller:
                    call.future.set_exception(asyncio.CancelledError())
                else:
                    fail(call.future, UsageError(f"{self.what} was closed while {call.name} ran"))
            call.done.set()


class _Guest:
    """The Trio guest run of one asyncio loop, shared by the things open in it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.started: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()
        self.users = 0
        self.token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._ending: trio.Event | None = None
        self._waiting: set[asyncio.Future[Any]] = set()
        """The futures of calls and openings not done yet: failed if the run ends under them."""
        self.held: set[InGuest[Any]] = set()
        """What is open in the run (closed by :meth:`_keep` if the loop ends first)."""
        self._keeper: asyncio.Task[None] | None = None

    def watch(self, future: asyncio.Future[T]) -> asyncio.Future[T]:
        """Fail ``future`` if the run ends before it is done (a crash of the guest: no caller
        waits forever)."""
        self._waiting.add(future)
        future.add_done_callback(self._waiting.discard)
        return future

    def begin(self) -> None:
        self._keeper = self.loop.create_task(self._keep(), name="livecontext: the Trio guest run's keeper")
        trio.lowlevel.start_guest_run(
            self._main,
            run_sync_soon_threadsafe=self.loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=self.loop.call_soon,
            done_callback=self._done,
            host_uses_signal_set_wakeup_fd=True,
        )

    async def _keep(self) -> None:
        """Live as long as the run. ``asyncio.run`` ends by cancelling every task left: this
        one then closes what is still open in the run (an agent a script never closed), so that
        the run ends with the loop instead of being left behind in its thread, where it would
        refuse every later ``trio.run``."""
        try:
            await asyncio.shield(self.finished)
        except asyncio.CancelledError:
            if not self.finished.done():
                _log.warning("the asyncio loop is ending with %d livecontext agent(s) or system(s) still open in it: "
                             "closing them", len(self.held))
                for thing in list(self.held):
                    with contextlib.suppress(Exception):
                        await thing.aclose()
            raise
        except Exception:
            pass  # (the run failed: raised to its callers already)

    async def _main(self) -> None:
        self._ending = trio.Event()
        self.token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            resolve(self.started, None)
            await self._ending.wait()
            # (everything closed: its calls and holders are over; nothing is left to cancel)

    def _done(self, outcome: Any) -> None:
        for registry in (_GUESTS, _ENDING):  # (a guest holds its loop: kept, it would keep the loop alive)
            if registry.get(self.loop) is self:
                del registry[self.loop]
        try:
            outcome.unwrap()
        except BaseException as exc:  # (raised to whoever waits for the start or the end)
            fail(self.started, exc)
            fail(self.finished, exc)
            error = f"the Trio guest run of this asyncio loop failed ({type(exc).__name__}: {exc})"
        else:
            fail(self.started, UsageError("the Trio guest run ended before it started"))
            resolve(self.finished, None)
            error = "the Trio guest run of this asyncio loop ended"
        for future in list(self._waiting):
            fail(future, UsageError(f"{error} under a call: open it again"))

    def soon(self, function: Callable[..., object], *args: Any) -> None:
        """Run ``function(*args)`` in the guest, soon (from the loop's thread)."""
        assert self.token is not None
        try:
            self.token.run_sync_soon(function, *args)
        except trio.RunFinishedError:
            raise UsageError("the Trio guest run of this asyncio loop has ended: open it again") from None

    def start_soon(self, function: Callable[..., Awaitable[object]], *args: Any) -> None:
        """(In the guest) start a task in the main task's nursery."""
        assert self._nursery is not None
        self._nursery.start_soon(function, *args)

    async def release(self) -> None:
        """One user fewer; after the last, end the run and wait until it ended."""
        self.users -= 1
        if self.users > 0 or self.finished.done():
            return
        if _GUESTS.get(self.loop) is self:
            del _GUESTS[self.loop]  # (a thing opened from now on starts a new run, once this one ended)
        self.soon(self._end)
        with contextlib.suppress(Exception):  # (its failure was raised to a caller already)
            await uncancellable(self.finished)

    def _end(self) -> None:
        assert self._ending is not None
        self._ending.set()


_GUESTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Guest] = weakref.WeakKeyDictionary()
"""The guest run of each asyncio loop that has one (while something is open in it)."""

_ENDING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Guest] = weakref.WeakKeyDictionary()
"""The guest run of each loop until it has ended (a new one waits for it to end first)."""


async def _guest_of(loop: asyncio.AbstractEventLoop) -> _Guest:
    """The loop's guest run, started if none runs (one user more)."""
    while True:
        guest = _GUESTS.get(loop)
        if guest is None:
            ending = _ENDING.get(loop)
            if ending is not None and not ending.finished.done():
                with contextlib.suppress(Exception):
                    await asyncio.shield(ending.finished)  # (one guest run per thread at a time)
                continue
            guest = _GUESTS[loop] = _ENDING[loop] = _Guest(loop)
            guest.begin()
        guest.users += 1
        try:
            await asyncio.shield(guest.started)
        except BaseException:
            await guest.release()
            raise
        return guest


async def uncancellable(future: asyncio.Future[T]) -> T:
    """Wait for ``future`` to be done even if the waiting task is cancelled meanwhile; then
    raise that cancellation (the future's outcome read), else give the future's outcome."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = cancelled or not future.done()
        except BaseException:
            pass  # (done: its outcome is given below)
    if cancelled:
        if not future.cancelled():
            future.exception()
        raise asyncio.CancelledError()
    return future.result()


def resolve(future: asyncio.Future[T], value: T) -> None:
    if not future.done():
        future.set_result(value)


def fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)

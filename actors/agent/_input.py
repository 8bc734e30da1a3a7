"""Input sources: actors that buffer input for the engine to pull."""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any

from livecontext.protocol.agent import InputAvailable, InputMeasured, InputText, MeasureInput, ProvideInput, PullInput
from livecontext.protocol.history import ApprovalRecorded, DecideApproval, Retention
from livecontext.protocol.kernel import ActorId
from livecontext.runtime import (
    Actor,
    ActorRef,
    ActorStoppedError,
    Context,
    MailboxFullError,
    RemoteActorError,
    UsageError,
    handler,
)


class InputTooLargeError(UsageError):
    """A pinned input (the thread's task, or one given pinned) costs more than the whole room
    of a model call: it could never be sent whole, so it is refused and nothing of it is
    recorded, unless it was given with ``cut_oversized`` (then it is sent cut to its head and
    tail). Contrast with :class:`~livecontext.actors.history.BudgetTooSmallError`: raised when
    a call is rendered, about what is already recorded."""

    def __init__(self, tokens: int, room: int, budget: int) -> None:
        self.tokens = tokens
        """What the input costs, whole."""
        self.room = room
        """The budget minus what the system prompt and the tools cost."""
        self.budget = budget
        super().__init__(
            f"the pinned input is {tokens:,} tokens, more than the {room:,} a model call has room for "
            f"(budget {budget:,} minus {budget - room:,} for the system prompt and the tools); nothing was "
            "recorded; shorten it, raise the budget, or have it sent cut to its head and tail "
            "(--cut-oversized; in Python cut_oversized=True)"
        )


class InputSource(Actor):
    """Buffers lines of input; the engine pulls one per ``PullInput`` when it waits for input.

    Input arriving is told to ``notify`` (the engine) as :class:`InputAvailable`, so an engine
    that found nothing wakes up. Pushing and pulling are decoupled (seed note 002).

    Pass the same ``buffer`` (holding the start-up inputs) to every instance its factory makes,
    so that a restart keeps the input not pulled yet and brings back no line already pulled;
    ``lines`` are added to the buffer by each instance made. Each input keeps the retention
    class it was given with (:attr:`ProvideInput.retention`) until the engine records it.

    With ``history`` (the thread's history store), an input that would be pinned is measured
    first, and one larger than the room refused (:class:`InputTooLargeError`). Every input
    enters here, so this is the one place that refuses it, whoever gives it (the front door,
    the command line, a system, a sub-agent's parent).
    """

    def __init__(self, lines: Iterable[str] = (), notify: ActorId | None = None, *,
                 buffer: collections.deque[ProvideInput] | None = None, history: ActorId | None = None) -> None:
        self.buffer: collections.deque[ProvideInput] = buffer if buffer is not None else collections.deque()
        self.buffer.extend(ProvideInput(line) for line in lines)
        self.notify = notify
        self.history = history
        self._handed = False
        """An input was pulled: the next one given is not the thread's first."""

    @handler
    async def on_provide(self, msg: ProvideInput) -> None:
        if self.history is not None and not msg.cut_oversized and self._may_pin(msg):
            queued = bool(self.buffer) or self._handed
            measured = await self.ctx.ask(self.history, MeasureInput(msg.text, msg.retention, queued))
            assert isinstance(measured, InputMeasured)
            # (no room at all is the budget's fault, not the input's: the render says so)
            if measured.pinned and measured.room > 0 and measured.tokens > measured.room:
                raise InputTooLargeError(measured.tokens, measured.room, measured.budget)
        self.buffer.append(msg)
        if self.notify is None:
            return
        try:
            self.ctx.tell_nowait(self.notify, InputAvailable())
        except MailboxFullError:
            # the engine is busy: tell it later rather than lose the wake-up, which it relies
            # on to pull again after it found the buffer empty
            self.ctx.nursery.start_soon(self._notify)
        except ActorStoppedError:  # the input stays buffered for the engine's next start
            pass

    def _may_pin(self, msg: ProvideInput) -> bool:
        """Whether the input may be recorded CRITICAL: given so, or given with the store's
        default while nothing is ahead of it (the history store knows if it pins the task)."""
        if msg.retention is Retention.CRITICAL:
            return True
        return msg.retention is None and not self.buffer and not self._handed

    async def _notify(self) -> None:
        assert self.notify is not None
        try:
            await self.ctx.tell(self.notify, InputAvailable())
        except ActorStoppedError:
            pass

    @handler(inline=True)
    def on_pull(self, msg: PullInput) -> InputText:
        if not self.buffer:
            return InputText(None, 0)
        given = self.buffer.popleft()
        self._handed = self._handed or bool(given.text.strip())
        return InputText(given.text, len(self.buffer), given.retention, given.key)


async def give_input(asker: Context, source: ActorRef[InputSource], given: ProvideInput) -> None:
    """Ask ``source`` to take ``given``, raising what it refused the input with (an
    :class:`InputTooLargeError`, a :class:`UsageError`) as itself rather than wrapped in the
    runtime's :class:`RemoteActorError`: the caller gave the input, the mistake is theirs."""
    try:
        await asker.ask(source, given)
    except RemoteActorError as exc:
        if isinstance(exc.__cause__, UsageError):
            raise exc.__cause__ from None
        raise


async def decide_approval(asker: Context, history: ActorId | ActorRef[Any], decision: DecideApproval) -> ApprovalRecorded:
    """Ask a thread's history store to record ``decision`` (a person's approval or deny of a
    call waiting for one), raising what it refused the decision with (a one-line
    :class:`UsageError`: no such pending call, decided already, arguments not a JSON object)
    as itself rather than wrapped in the runtime's :class:`RemoteActorError`."""
    try:
        recorded = await asker.ask(history, decision)
    except RemoteActorError as exc:
        if isinstance(exc.__cause__, UsageError):
            raise exc.__cause__ from None
        raise
    assert isinstance(recorded, ApprovalRecorded)
    return recorded

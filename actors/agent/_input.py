"""Input sources: actors that buffer input for the engine to pull."""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any

from livecontext.protocol.agent import (
    InputAvailable,
    InputMeasured,
    InputMode,
    InputText,
    Interrupt,
    MeasureInput,
    PostNotification,
    ProvideInput,
    PullInput,
    Terminate,
)
from livecontext.protocol.history import ApprovalRecorded, DecideApproval, Retention
from livecontext.protocol.kernel import Ack, ActorId
from livecontext.runtime import (
    Actor,
    ActorRef,
    ActorStoppedError,
    Context,
    MailboxFullError,
    PendingReply,
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


INPUT_MODES: tuple[str, ...] = tuple(mode.value for mode in InputMode)
"""The dispatch modes' names (``queue``, ``interrupt``, ``terminate``, ``silent``), as given."""


def input_mode(given: InputMode | str) -> InputMode:
    """The mode ``given`` names: an :class:`~livecontext.protocol.agent.InputMode` or its
    value (any case).

    Raises:
        UsageError: ``given`` names no mode (the message lists them).
    """
    if isinstance(given, InputMode):
        return given
    if isinstance(given, str):
        try:
            return InputMode(given.strip().lower())
        except ValueError:
            pass
    raise UsageError(f"unknown input mode {given!r}: use one of {', '.join(INPUT_MODES)}")


def _silent_text(text: str, by: str) -> str:
    """The notification a ``silent`` input from ``by`` is recorded as (the audit and the
    model see who gave it)."""
    return f"silent input from {by}: {text}"


class InputSource(Actor):
    """Buffers lines of input; the engine pulls one per ``PullInput`` when it waits for input.

    Every input carries a dispatch mode (:attr:`ProvideInput.mode`, see
    :class:`~livecontext.protocol.agent.InputMode`):

    - ``queue``: buffered at the back, taken when the engine next waits for input;
    - ``interrupt``: buffered at the front (behind earlier interrupting inputs not taken yet),
      and the engine is told :class:`Interrupt`: it cancels the step in flight and takes it next;
    - ``terminate``: not buffered (its text is the reason, not a model input): the engine is
      told :class:`Terminate`;
    - ``silent``: not buffered: posted to the history store as a notification that names the
      sender (the model reads it with its next call); the engine is not woken. Answered once
      durable.

    The engine is told an interrupt or a termination before the giver's ask is answered (a
    tell that waits for room, never one put off), so what the giver sends the engine next
    comes after it.

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
        self._urgent = 0
        """Interrupting inputs at the front of the buffer, not pulled yet (a later one goes
        behind them: interrupts are taken in the order they came)."""

    @handler
    async def on_provide(self, msg: ProvideInput) -> None:
        if msg.mode is InputMode.SILENT:
            await self._silent(msg)
            return
        if msg.mode is InputMode.TERMINATE:
            if self.notify is None:
                raise UsageError("this input source has no engine to terminate; give the input as queue")
            if not msg.text.strip():
                raise UsageError("a terminate input's text is the reason the task ends; give one")
            # answered once the engine recorded it, by a task of ours: this handler does not
            # wait for the engine, which may be asking us for input meanwhile
            self.ctx.nursery.start_soon(self._terminate, Terminate(msg.text, self._giver()), self.ctx.defer_reply())
            return
        if self.history is not None and not msg.cut_oversized and self._may_pin(msg):
            queued = bool(self.buffer) or self._handed
            measured = await self.ctx.ask(self.history, MeasureInput(msg.text, msg.retention, queued))
            assert isinstance(measured, InputMeasured)
            # (no room at all is the budget's fault, not the input's: the render says so)
            if measured.pinned and measured.room > 0 and measured.tokens > measured.room:
                raise InputTooLargeError(measured.tokens, measured.room, measured.budget)
        if msg.mode is InputMode.INTERRUPT:
            self.buffer.insert(self._urgent, msg)
            self._urgent += 1
            if self.notify is not None:
                try:
                    await self.ctx.tell(self.notify, Interrupt(self._giver()))
                except ActorStoppedError:  # the input stays buffered, first, for the engine's next start
                    pass
            return
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

    async def _terminate(self, msg: Terminate, reply: PendingReply | None) -> None:
        assert self.notify is not None
        try:
            await self.ctx.ask(self.notify, msg, timeout=None)
        except Exception as exc:  # noqa: BLE001 - the giver is told
            if reply is not None:
                reply.fail(exc)
            return
        if reply is not None:
            reply.send(Ack())

    def _giver(self) -> str:
        """Who gave the input being handled."""
        env = self.ctx.current
        return str(env.sender if env is not None else self.ctx.self_id)

    async def _silent(self, msg: ProvideInput) -> None:
        if self.history is None:
            raise UsageError("a silent input is recorded in the thread's history, and this input source has "
                             "none; give it as queue or interrupt")
        if not msg.text.strip():
            raise UsageError("a silent input needs text; send text with something in it")
        await self.ctx.ask(self.history, PostNotification(_silent_text(msg.text, self._giver())))

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
        if not self.buffer or (msg.urgent and not self._urgent):
            return InputText(None, len(self.buffer))
        given = self.buffer.popleft()
        if self._urgent:
            self._urgent -= 1
        self._handed = self._handed or bool(given.text.strip())
        return InputText(given.text, len(self.buffer), given.retention, given.key, self._urgent)


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

"""Dispatch strategies (seed note 003): what an input does to the work in progress.

Every input carries an :class:`InputMode`. ``queue`` waits its turn (the input is taken when
the engine next waits for input); ``interrupt`` cancels the step in flight (the model call or
the tool) and is taken next; ``terminate`` ends the task (its text is the reason, not a model
input); ``silent`` is recorded as a notification the model reads with its next call, and no
step is taken for it.

The input source is the one place every input enters: it tells the engine :class:`Interrupt`
or :class:`Terminate`; the engine records what it cut (:class:`StepInterrupted`) and the end
of the task (:class:`TaskTerminated`) through the history store
(:class:`RecordInterruption`, :class:`RecordTermination`), and publishes
:class:`StepInterruptedEvent` and :class:`TaskTerminatedEvent`.
"""

from __future__ import annotations

import enum

from attrs import frozen

from ._message import Message


class InputMode(enum.Enum):
    """What an input does to the work in progress (its value is the wire form and the CLI's)."""

    QUEUE = "queue"
    """Wait its turn: taken when the engine next waits for input."""
    INTERRUPT = "interrupt"
    """Cancel the model call or the tool in flight (recorded, with who interrupted) and be taken
    next; with nothing running, a queued input taken first."""
    TERMINATE = "terminate"
    """End the task: the step in flight is cancelled, the calls left are recorded as not run,
    and the status becomes ``terminated`` with the input's text as its reason."""
    SILENT = "silent"
    """Recorded in the history (a notification naming the sender), read by the model with its
    next call; no step is taken for it."""


# -- to the engine (told by the input source) --------------------------------------------------


@frozen
class Interrupt(Message):
    """An interrupting input is at the front of the input source: cancel the step in flight
    (its model call or tool), record it, and take that input next (told, no reply)."""

    by: str
    """Who gave the input (an actor id's text)."""


@frozen
class Terminate(Message):
    """End the task: cancel the step in flight, record the calls left as not run, and record
    :class:`TaskTerminated` (told, no reply; a run in progress ends ``terminated``)."""

    reason: str
    by: str
    """Who gave the terminating input (an actor id's text)."""


# -- to the history store ---------------------------------------------------------------------


@frozen
class RecordInterruption(Message):
    """The engine cut the step in flight for an interrupt or a termination (ask: ``Ack`` once
    durable, as :class:`StepInterrupted`)."""

    what: str
    """What was cut: ``model call``, or ``tool NAME (call ID)``."""
    by: str


@frozen
class RecordTermination(Message):
    """The task is terminated (ask: ``Ack`` once durable, as :class:`TaskTerminated`); the
    calls of the last output all have their results and are appended first."""

    reason: str
    by: str


# -- log records --------------------------------------------------------------------------------


@frozen
class StepInterrupted(Message):
    """Log record: an interrupt or a termination cut the step in flight; the state stays what
    it was (a cut tool's result is recorded ``interrupted`` besides)."""

    what: str
    """What was cut: ``model call``, or ``tool NAME (call ID)``."""
    by: str
    """Who gave the input that cut it."""


@frozen
class TaskTerminated(Message):
    """Log record: a ``terminate`` input ended the task. The engine takes no step until new
    input, which starts a new task."""

    reason: str
    """The terminating input's text."""
    by: str
    """Who gave it."""


# -- engine events --------------------------------------------------------------------------------


@frozen
class StepInterruptedEvent(Message):
    """Published when an interrupt or a termination cut the engine's step (recorded as
    :class:`StepInterrupted`)."""

    thread_id: str
    what: str
    by: str


@frozen
class TaskTerminatedEvent(Message):
    """Published when a ``terminate`` input ended the task (recorded as :class:`TaskTerminated`)."""

    thread_id: str
    reason: str
    by: str


DispatchRecord = StepInterrupted | TaskTerminated
"""The log records of interrupts and terminations."""

"""A task's lifecycle (seed note 003): where an agent's task stands, and the records that say so.

The engine's state (:class:`~._state.EngineState`) says what its next step is; the *status*
says where the task stands, for the people and programs that drive the agent:

- ``active``: the engine has work to do (a model call, a tool, results to append);
- ``waiting_user``: the engine waits for input: the thread is new, the model answered
  without calling a tool, or it called ``wait_user_response`` (then :attr:`AgentStatus.question`
  holds its question);
- ``waiting_parent``: a sub-agent called ``wait_parent``: it waits for its parent's next
  message (:attr:`AgentStatus.question` holds what it said to the parent);
- ``waiting_internal``: the engine waits on another agent's work: a sub-agent it spawned or an
  ``ask_agent`` question (:attr:`AgentStatus.waiting_on` names the call);
- ``waiting_approval``: a wait of the same kind, on a person: the next tool call to run needs
  approval and is not decided yet (:attr:`AgentStatus.waiting_on` names the calls waiting,
  :attr:`AgentStatus.approvals` lists them; see ``protocol._approvals``);
- ``completed``: the model called ``task_complete``; :attr:`AgentStatus.result` holds the
  result, and the engine takes no step until new input comes;
- ``abandoned``: the model called ``task_abandon``; :attr:`AgentStatus.reason` holds why, and
  the engine takes no step until new input comes (which starts a new task, as after
  ``completed``);
- ``paused``: a ``Pause`` or ``Cancel`` stopped the engine with work left, or a spend limit
  did (then :attr:`AgentStatus.reason` names the limit and the figures);
- ``terminated``: a ``terminate`` input ended the task (:attr:`AgentStatus.reason` holds its
  text, :attr:`AgentStatus.by` who gave it); the engine takes no step until new input comes,
  which starts a new task;
- ``failed``: its last step failed (:attr:`AgentStatus.error` says why); the state did not
  change, and the next step tries again.

The status is a fold of the thread's log, like the rest of its state: the control tools'
effects (:class:`TaskCompleted`, :class:`TaskAbandoned`, :class:`UserQuestionAsked`,
:class:`ParentAwaited`) are committed with their tool
results, a stop by a pause and a failed step are records of their own
(:class:`EnginePaused`, :class:`StepFailed`), so a restarted thread has the status it had.
``protocol._status`` holds the fold and reads the status off it.
"""

from __future__ import annotations

import enum

from attrs import frozen

from ._approvals import Approval
from ._dispatch import DispatchRecord, RecordInterruption, RecordTermination, TaskTerminated
from ._message import Message
from ._tools import ToolCall

TASK_COMPLETE = "task_complete"
"""The control tool that ends the task with a result."""
WAIT_USER_RESPONSE = "wait_user_response"
"""The control tool that asks the user a question and waits for the answer."""
TASK_ABANDON = "task_abandon"
"""The control tool that gives the task up, saying why."""
OUTPUT = "output"
"""The control tool that shows the user some text at once; the task goes on."""
WAIT_PARENT = "wait_parent"
"""A sub-agent's control tool (instead of ``wait_user_response``): tell the parent something
and wait for its next message."""


class TaskStatus(enum.Enum):
    """Where an agent's task stands (see the module docstring)."""

    ACTIVE = "active"
    WAITING_USER = "waiting_user"
    WAITING_PARENT = "waiting_parent"
    WAITING_INTERNAL = "waiting_internal"
    WAITING_APPROVAL = "waiting_approval"
    COMPLETED = "completed"
    ABANDONED = "abandoned"
    PAUSED = "paused"
    FAILED = "failed"
    TERMINATED = "terminated"


@frozen
class AgentStatus(Message):
    """An agent's status, with what goes with it (the reply to :class:`GetStatus`)."""

    status: TaskStatus
    result: str | None = None
    """The result given to ``task_complete`` (``completed`` only)."""
    question: str | None = None
    """The question given to ``wait_user_response`` (``waiting_user`` after that tool only),
    or what a sub-agent said to its parent with ``wait_parent`` (``waiting_parent``)."""
    error: str | None = None
    """Why the last step failed (``failed`` only)."""
    reason: str | None = None
    """What paused the engine, when it was not a ``Pause`` or ``Cancel`` but a spend limit
    (``paused``): the limit, the figures and how to raise it; why the task was given up
    (``abandoned``); or the terminating input's text (``terminated``)."""
    by: str | None = None
    """Who terminated the task (``terminated`` only): the sender of the ``terminate`` input."""
    waiting_on: str | None = None
    """What the agent waits on (``waiting_internal`` and ``waiting_approval`` only): the tool
    and its call id, such as ``spawn_subagent call c1``, or the calls waiting for approval,
    such as ``approval of pay call c1, send_mail call c2``."""
    approvals: tuple[ToolCall, ...] = ()
    """The calls waiting for a person's approval, as the model made them (``waiting_approval``
    only): decide each with ``approve`` or ``deny`` by its id."""


@frozen
class GetStatus(Message):
    """Ask a history store for its thread's :class:`AgentStatus`."""


# -- effects of the control tools (committed with their tool results) ---------------------------


@frozen
class TaskCompleted(Message):
    """``task_complete`` was called: the task is over, with this result."""

    result: str


@frozen
class TaskAbandoned(Message):
    """``task_abandon`` was called: the task was given up, for this reason."""

    reason: str


@frozen
class ParentAwaited(Message):
    """A sub-agent called ``wait_parent``: it waits for its parent's next message, having said this."""

    message: str


@frozen
class UserQuestionAsked(Message):
    """``wait_user_response`` was called: the agent waits for the user's answer to this question."""

    question: str


# -- the engine's stops -------------------------------------------------------------------------


@frozen
class RecordPause(Message):
    """The engine stopped because of a ``Pause`` or ``Cancel``, or before a model call that
    would pass a spend limit (ask: ``Ack`` once durable).

    The store records :class:`EnginePaused` only if the thread has work left and is not
    paused already for the same reason: an engine waiting for input has nothing to pause."""

    reason: str | None = None
    """The spend limit that stopped it, with the figures (``None``: a ``Pause`` or ``Cancel``)."""


@frozen
class EnginePaused(Message):
    """Log record: the engine was paused with work left (until its next step)."""

    reason: str | None = None
    """What paused it, if a spend limit did (``None``: a ``Pause`` or ``Cancel``)."""


@frozen
class RecordStepFailure(Message):
    """A step failed (ask: ``Ack`` once durable); recorded unless the same failure is the
    thread's latest."""

    error: str


@frozen
class StepFailed(Message):
    """Log record: a step failed and changed nothing else (until the next step succeeds)."""

    error: str


# -- the fold -------------------------------------------------------------------------------------


StatusRequest = GetStatus | RecordPause | RecordStepFailure | RecordInterruption | RecordTermination
"""What the engine and the front door ask a history store about the task's status."""

StatusReply = AgentStatus
"""The history store's answer to :class:`GetStatus`."""

ControlToolEffect = TaskCompleted | TaskAbandoned | UserQuestionAsked | ParentAwaited
"""The effect of a lifecycle control tool, committed with its tool result."""

LifecycleRecord = EnginePaused | StepFailed | DispatchRecord
"""Log records of where the engine stopped."""


@frozen
class TaskMarks:
    """What a thread's log says of its task, besides its entries (kept in snapshots)."""

    ended: TaskCompleted | TaskAbandoned | UserQuestionAsked | ParentAwaited | TaskTerminated | None = None
    """The control tool that ended the task's last turn, or the termination that ended the task;
    cleared by the next input. Once the control tool's tool-results entry is appended, the
    engine waits for input; after a termination it does whatever the last entry (see
    :func:`~._state.derive_state`)."""
    paused: bool = False
    """A pause stopped the engine with work left, and it has taken no step since."""
    pause_reason: str | None = None
    """The spend limit that made the pause, if one did."""
    failure: str | None = None
    """The error of the last step, if it failed and no step succeeded since."""
    approvals: tuple[Approval, ...] = ()
    """The approvals requested for the current model output's calls, with their decisions;
    cleared by the next entry (a model output, an input, the tool-results entry)."""

    @property
    def terminated(self) -> bool:
        """A ``terminate`` input ended the task since the last input."""
        return isinstance(self.ended, TaskTerminated)

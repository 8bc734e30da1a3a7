"""Messages of an agent: engine control and events, history store, app host, input source.

One class per intent; requests name their reply type in their docstring.
"""

from __future__ import annotations

import enum

from attrs import field, frozen

from ._approvals import Approval
from ._apps import AppEffect, AppHistory
from ._chat import ChatMessage
from ._content import Retention, Shown
from ._approvals import ApprovalsRequested
from ._dispatch import InputMode, Interrupt, StepInterruptedEvent, TaskTerminatedEvent, Terminate
from ._context_mgmt import GetFill, HistoryFill, HistorySlice, LimitLevel, ReadHistory
from ._entries import HistoryEntry, Notification, Usage, UsageTotals
from ._lifecycle import ControlToolEffect
from ._message import Message
from ._state import EngineState
from ._tools import ToolCall, ToolContext, ToolResult, ToolSpec, ToolStatus
from ._windows import AppWindow

@frozen
class RenderedSpan:
    """A run of entries with consecutive ids (inclusive) shown the same way in one render;
    folded entries are in no span (the recaps stand for them)."""

    first: str
    last: str
    shown: Shown


# -- engine control ------------------------------------------------------------------------------


@frozen
class Pause(Message):
    """Stop running steps on its own after the current one (ask: ``Ack``)."""


@frozen
class Resume(Message):
    """Run steps on its own again (ask: ``Ack``)."""


@frozen
class Step(Message):
    """Do exactly one step (ask: :class:`StepDone`, once the step is over)."""


@frozen
class RunUntilIdle(Message):
    """Run steps until the engine waits for input and none is left (ask: :class:`Idle`)."""

    max_steps: int | None = None
    """Stop after this many steps even if not idle."""


@frozen
class Cancel(Message):
    """Cancel the step in flight (its model call or tool) and pause (ask: ``Ack`` once nothing runs)."""


@frozen
class StepDone(Message):
    """The reply to :class:`Step`."""

    from_state: EngineState
    to_state: EngineState
    progressed: bool
    """False when the step changed nothing (no input, or a failed model call)."""
    error: str = ""
    """Why the step failed (``""``: it did not), or ``"cancelled"`` when :attr:`cancelled`."""
    cancelled: bool = False
    """A ``Cancel`` (or the engine stopping) cut the step short."""


class IdleReason(enum.Enum):
    """Why the engine stopped running for a :class:`RunUntilIdle` (its value is the wire form)."""

    NO_INPUT = "no_input"
    """It waits for input and none is left."""
    MAX_STEPS = "max_steps"
    """It took the ``max_steps`` it was given."""
    PAUSED = "paused"
    """A ``Pause`` stopped it, or a spend limit (:attr:`Idle.limit` says which)."""
    CANCELLED = "cancelled"
    """A ``Cancel`` (or the engine stopping) cut its step short."""
    FAILED = "failed"
    """A step failed (:attr:`Idle.error` says why)."""
    WAITING_APPROVAL = "waiting_approval"
    """The next tool call needs a person's approval and is not decided yet
    (:attr:`Idle.waiting_on` names the calls waiting). The engine takes no step for it until
    the next ``RunUntilIdle`` or ``Step`` after a decision."""
    TERMINATED = "terminated"
    """A ``terminate`` input ended the task (the status is ``terminated``)."""


@frozen
class Idle(Message):
    """The reply to :class:`RunUntilIdle`: the engine stopped running."""

    state: EngineState
    steps: int
    reason: IdleReason
    error: str = ""
    """Why the last step failed, when :attr:`reason` is :attr:`IdleReason.FAILED`."""
    limit: str = ""
    """The spend limit that paused it and the figures, when one did (:attr:`IdleReason.PAUSED`)."""
    cut: tuple[ObservationCut, ...] = ()
    """The observations this run sent cut to their head and tail (they did not fit whole),
    in the order of its model calls."""
    waiting_on: str = ""
    """The calls waiting for approval, when :attr:`reason` is :attr:`IdleReason.WAITING_APPROVAL`
    (``approval of pay call c1``)."""

    @property
    def reason_text(self) -> str:
        """The reason in words: its value, with the error of a failed step (``failed: ...``),
        the spend limit that paused it (``paused: spend limit: ...``) or the calls waiting for
        approval (``waiting_approval: approval of pay call c1``)."""
        if self.reason is IdleReason.FAILED:
            return f"failed: {self.error}"
        if self.reason is IdleReason.WAITING_APPROVAL and self.waiting_on:
            return f"waiting_approval: {self.waiting_on}"
        if self.reason is IdleReason.PAUSED and self.limit:
            return f"paused: {self.limit}"
        return str(self.reason.value)


EngineControl = Pause | Resume | Step | RunUntilIdle | Cancel | Interrupt | Terminate
"""What the engine's mailbox takes from whoever drives it (the front door, a test, the CLI), and
what the input source tells it of an interrupting or terminating input."""

EngineReply = StepDone | Idle
"""The engine's answers to :class:`Step` and :class:`RunUntilIdle`."""


# -- engine events (published on the engine's events topic) -----------------------------------


@frozen
class WaitingInput(Message):
    """The engine asks its input source for input."""

    thread_id: str


@frozen
class BeforeModelCall(Message):
    """A model call is about to start."""

    thread_id: str
    call_index: int
    messages: int
    tokens: int
    budget: int = 0
    """The token budget the context was rendered under."""
    spans: tuple[RenderedSpan, ...] = ()
    """How each unfolded entry and recap was shown (see :attr:`Rendered.spans`)."""


@frozen
class ObservationCut(Message):
    """The latest observation (an input, or tool results) did not fit the context whole and is
    sent cut to its head and tail, with a line saying how much was left out (published right
    after :class:`BeforeModelCall`)."""

    thread_id: str
    call_index: int
    entry_id: str
    """The observation's entry."""
    what: str
    """The observation in words, for the note: ``input`` or ``tool results``."""
    tokens: int
    """What it costs whole (LIVE)."""
    sent_tokens: int
    """What it costs as sent (RECENT)."""

    @property
    def note(self) -> str:
        """One line saying so: ``input e1 did not fit the context whole: sent cut to its head
        and tail (1,985 of its 100,004 tokens)``."""
        return (f"{self.what} {self.entry_id} did not fit the context whole: sent cut to its head and "
                f"tail ({self.sent_tokens:,} of its {self.tokens:,} tokens)")


@frozen
class ModelTextDelta(Message):
    """A piece of streamed model text."""

    thread_id: str
    text: str


@frozen
class AfterModelCall(Message):
    """A model call ended: ``entry_id`` is the recorded output, or ``error`` says why not."""

    thread_id: str
    entry_id: str
    text: str
    tool_calls: int
    error: str = ""


@frozen
class BeforeToolExecute(Message):
    """A tool call is about to run."""

    thread_id: str
    call_id: str
    name: str
    arguments: str


@frozen
class AfterToolExecute(Message):
    """A tool call ended and its result was recorded."""

    thread_id: str
    call_id: str
    name: str
    status: ToolStatus
    gist: str


@frozen
class AgentOutput(Message):
    """The model called ``output``: this text is for the user, now (published once it is
    recorded, before the engine's next step; the task goes on)."""

    thread_id: str
    call_id: str
    text: str


@frozen
class StateTransition(Message):
    """The engine's state changed."""

    thread_id: str
    from_state: EngineState
    to_state: EngineState


EngineEvent = (WaitingInput | BeforeModelCall | ObservationCut | ModelTextDelta | AfterModelCall
               | BeforeToolExecute | AfterToolExecute | AgentOutput | StateTransition | StepInterruptedEvent
               | TaskTerminatedEvent | ApprovalsRequested)
"""What the engine publishes on its events topic."""


# -- history store ------------------------------------------------------------------------------


@frozen
class Tail(Message):
    """What the engine needs to know to take its next step."""

    last: HistoryEntry | None
    """The newest entry that is not a recap."""
    recorded: tuple[ToolResult, ...]
    """Results recorded for the last output's calls, not yet in a tool-results entry."""
    started: tuple[str, ...]
    """Call ids whose tool started (non-idempotent) and has no recorded result."""
    model_outputs: int
    """Model outputs the thread ever recorded, folded ones included."""
    entries: int
    state: EngineState
    limit: LimitLevel = LimitLevel.OK
    """How full the history is; at TRUNCATE the engine has it folded before a model call."""
    usage: UsageTotals = UsageTotals()
    """The model calls the thread recorded, summed (folded outputs included)."""
    approvals: tuple[Approval, ...] = ()
    """The approvals requested for the last output's calls, with their decisions (empty
    unless a call of that output needs approval)."""


@frozen
class GetTail(Message):
    """Ask for the :class:`Tail`."""


@frozen
class AppendInput(Message):
    """Append a model input with this text and the pending notifications (ask: :class:`Tail`)."""

    text: str
    retention: Retention | None = None
    """The entry's retention class; ``None``: the store's default (CRITICAL for a thread's
    first input when it pins the task, COMPRESSIBLE otherwise)."""
    key: str | None = None
    """The key of the run of a system that fed it (see :attr:`ProvideInput.key`)."""
    interrupting: bool = False
    """An interrupting input, taken before the next model call: accepted while the thread
    waits for a model call too (``PendingInput``, ``PendingToolResults``), not only for input."""


@frozen
class MeasureInput(Message):
    """How an input would be recorded, asked before it is given (ask: :class:`InputMeasured`):
    a pinned input larger than the room is refused before anything of it is written."""

    text: str
    retention: Retention | None = None
    """The retention class it is given with (see :attr:`AppendInput.retention`)."""
    queued: bool = False
    """Other input is given before it and not recorded yet (so it is not the thread's first)."""


@frozen
class InputMeasured(Message):
    """The answer to :class:`MeasureInput`."""

    tokens: int
    """What the input costs as a message, whole."""
    room: int
    """The thread's budget minus what its system prompt and tools cost (0 when the budget is
    not known)."""
    budget: int
    """The thread's budget (0: not known)."""
    pinned: bool
    """It would be recorded CRITICAL: given so, or the thread's first input when it pins its task."""


@frozen
class AppendOutput(Message):
    """Append a model output (ask: :class:`Tail`)."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    model: str = ""
    usage: Usage = field(factory=Usage)
    sent_tokens: int = 0
    """The rendered tokens of the context the call was sent."""
    shared_tokens: int = 0
    """Of those, the tokens of the leading messages identical to the previous call's context."""


@frozen
class RecordToolStarted(Message):
    """A non-idempotent tool is about to run (ask: ``Ack`` once durable)."""

    call_id: str
    name: str


@frozen
class RecordToolResult(Message):
    """Record a tool result and, in the same transaction, the effect it reports: an app's, or
    a control tool's (ask: :class:`Tail`)."""

    result: ToolResult
    effect: AppEffect | ControlToolEffect | None = None


@frozen
class AppendToolResults(Message):
    """Append the tool-results entry of the recorded results (ask: :class:`Tail`)."""


@frozen
class PostNotification(Message):
    """Post a notification for the agent (ask: :class:`NotificationPosted`)."""

    text: str
    key: str | None = None
    """If the thread holds a notification with this key already, it is the answer and
    nothing is posted (see :attr:`Notification.key`)."""


@frozen
class NotificationPosted(Message):
    """A notification was accepted."""

    notification: Notification


@frozen
class Render(Message):
    """Render the context for a model call under a token budget (ask: :class:`Rendered`)."""

    budget: int
    windows: str = ""
    """The apps' windows: injected into the latest observation (``fill``), or sent as the
    last message (``stable``)."""
    for_call: bool = False
    """The context is for a model call (the engine's): under the ``stable`` policy a
    compaction it makes is kept for the calls that follow, and :attr:`Rendered.shared_tokens`
    compares it with the previous call's, and the :attr:`apps`' windows that changed since
    the last recorded are recorded (:class:`AppWindowsRecorded`, :class:`AppWindowsChanged`). A render that only looks
    changes nothing."""
    apps: tuple[AppWindow, ...] = ()
    """The windows of :attr:`Windows.apps`, to record with a call (see :attr:`for_call`)."""


@frozen
class Rendered(Message):
    """OpenAI chat messages and their token count."""

    messages: tuple[ChatMessage, ...]
    tokens: int
    entries: int
    """How many history entries are represented."""
    spans: tuple[RenderedSpan, ...] = ()
    """How each unfolded entry and recap was shown (oldest first); folded entries are
    represented by the recaps."""
    shared_tokens: int = 0
    """The tokens of the leading messages identical to the previous call's context (what a
    provider's prompt cache can serve); 0 for the first call, or after a restart."""


@frozen
class GetAppEffects(Message):
    """What each app's state is rebuilt from: its latest saved state and the committed
    effects after it (ask: :class:`AppEffects`)."""


@frozen
class ReplayAppEffects(Message):
    """Every effect one app ever committed, read from the log, for an app that cannot load
    its saved state (ask: :class:`AppEffects`, with that app alone and no state)."""

    app: str


@frozen
class AppEffects(Message):
    """The reply to :class:`GetAppEffects` and :class:`ReplayAppEffects`: one
    :class:`AppHistory` per app with committed effects."""

    apps: tuple[AppHistory, ...]


@frozen
class SaveAppState(Message):
    """An app's state as of its ``effects``-th committed effect, for the history store to
    keep with the thread's snapshots (tell; from the app host).

    It only shortens rebuilding: the effects stay in the log, so a state the app cannot load
    later is replayed from them.
    """

    app: str
    effects: int
    """How many of the app's committed effects :attr:`state` folds in."""
    state: str
    """The app's ``state_text()``."""


@frozen
class HistoryChanged(Message):
    """Published by the history store after each accepted change, in the order of the log.

    A subscriber gets every one (publishing waits for room in its mailbox: none is dropped
    or merged), so one that takes each ``entry`` as it comes sees every entry appended while
    it subscribes, once each, in order, however fast they come; even one that a fold or a
    drop removes before it could have read it.
    """

    thread_id: str
    kind: str
    """The kind of the change's (last) record: ``EntryAppended``, ``HistoryEdited``, ..."""
    entries: int
    seq: int
    entry: HistoryEntry | None = None
    """The entry the change appended (``EntryAppended``, ``ToolResultsAppended``), as the
    history holds it (a tool-results entry with its results); ``None`` for other changes."""


AgentHistoryRequest = (GetTail | AppendInput | MeasureInput | AppendOutput | RecordToolStarted | RecordToolResult
                       | AppendToolResults | PostNotification | Render | ReadHistory | GetAppEffects
                       | ReplayAppEffects | SaveAppState | GetFill)
"""What the agent's own actors (engine, app host) ask or tell the history store, and the one
way any reader reads entries (:class:`~livecontext.protocol.context.ReadHistory`); the edits of
context management are :data:`~livecontext.protocol.context.HistoryEditRequest`."""

AgentHistoryReply = (Tail | InputMeasured | NotificationPosted | Rendered | HistorySlice | AppEffects
                     | HistoryChanged | HistoryFill)
"""The history store's answers to :data:`AgentHistoryRequest`, and what it publishes."""


# -- app host -------------------------------------------------------------------------------------


@frozen
class GetWindows(Message):
    """The apps' windows (ask: :class:`Windows`)."""


@frozen
class Windows(Message):
    """All apps' windows as one text."""

    text: str
    apps: tuple[AppWindow, ...] = ()
    """Each of the user's apps' window and state (the built-in apps' are not recorded:
    see :class:`AppWindowsRecorded`)."""


@frozen
class ListTools(Message):
    """The tools of every app (ask: :class:`Tools`)."""


@frozen
class Tools(Message):
    """Tool specs."""

    specs: tuple[ToolSpec, ...]


@frozen
class InvokeTool(Message):
    """Run one tool call; never changes an app (ask: :class:`ToolInvoked`)."""

    call: ToolCall
    context: ToolContext | None = None
    """What the call knows of itself (its idempotency key), for a tool that takes it."""


@frozen
class CheckTool(Message):
    """Ask a side-effecting tool's ``check(key)`` whether a call found started but unrecorded
    after a crash did its effect (ask: :class:`ToolChecked`)."""

    call: ToolCall
    context: ToolContext
    timeout_s: float | None = None
    """How long the check may take (``None``: as long as it needs); past it the check is
    cancelled and cannot tell (the outcome is reported unknown)."""


@frozen
class ToolChecked(Message):
    """What a tool's check found: the call's result if its effect is done, else ``None``,
    with :attr:`not_done` saying whether the check knows it is not (run it now) or cannot tell."""

    result: ToolInvoked | None
    not_done: bool = False
    """The check knows the effect did not happen: the engine runs the call now."""


@frozen
class ToolInvoked(Message):
    """A tool's result and the effect to commit with it: an app's (naming the app that made
    it), or the engine's own for a control tool of the task lifecycle."""

    result: ToolResult
    effect: AppEffect | ControlToolEffect | None = None


@frozen
class CancelTool(Message):
    """Cancel a running tool call (ask: ``Ack`` once it no longer runs)."""

    call_id: str


@frozen
class ApplyEffect(Message):
    """Fold a committed effect into its app (ask: :class:`Windows`, the apps' windows once it
    is folded in)."""

    effect: AppEffect


AppHostRequest = GetWindows | ListTools | InvokeTool | CheckTool | CancelTool | ApplyEffect
"""What the app host's mailbox takes."""

AppHostReply = Windows | Tools | ToolInvoked | ToolChecked
"""The app host's answers."""


# -- input source -----------------------------------------------------------------------------------


@frozen
class ProvideInput(Message):
    """Buffer a line of input for the engine."""

    text: str
    retention: Retention | None = None
    """The retention class its entry gets (``None``: the history store's default)."""
    key: str | None = None
    """Kept on its entry (:attr:`ModelInputEntry.key`): a system's run of inputs keys each of
    them, so that a run resumed after a crash feeds each input once."""
    cut_oversized: bool = False
    """A pinned input larger than the room is taken and sent cut to its head and tail, rather
    than refused (:class:`~livecontext.actors.InputTooLargeError`)."""
    mode: InputMode = InputMode.QUEUE
    """What it does to the work in progress: wait its turn, interrupt it, terminate the task,
    or be recorded silently (see :class:`InputMode`)."""


@frozen
class PullInput(Message):
    """Take the next buffered input, if any (ask: :class:`InputText`)."""

    urgent: bool = False
    """Only an interrupting input (one given with ``mode=interrupt`` and not taken yet)."""


@frozen
class InputText(Message):
    """The next input, or ``None`` when nothing is buffered."""

    text: str | None
    remaining: int = 0
    retention: Retention | None = None
    """The retention class given with the input (``None``: the history store's default)."""
    key: str | None = None
    """The key given with the input (:attr:`ProvideInput.key`)."""
    urgent: int = 0
    """Interrupting inputs still first in the source after this one (taken before the next
    model call too)."""


@frozen
class InputAvailable(Message):
    """Told to the engine when input arrives, so a waiting engine wakes up."""


InputSourceRequest = ProvideInput | PullInput
"""What the input source's mailbox takes."""

InputSourceReply = InputText | InputAvailable
"""The input source's answer to :class:`PullInput`, and the wake-up it tells the engine."""

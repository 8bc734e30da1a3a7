"""The engine actor: the agent's state machine (seed note 002, DESIGN.md "The engine").

The engine keeps no state of its own beyond what the history holds: every step starts from
the history store's tail (the one its previous write returned, or the one a run stopped at
for want of input, else asked for), derives the state from it, and does that state's one
piece of work. Steps run in a background task owned by the engine (so control messages are
handled while a model call or tool runs); the mailbox takes ``Pause``, ``Resume``, ``Step``,
``RunUntilIdle``, ``Cancel``, ``Interrupt`` and ``Terminate``.

Only the slow parts of a step, the model call and the tool call, can be cancelled. What comes
after them (recording the output or the result, applying the app effect, publishing the
events) runs shielded: a cancel never leaves an effect committed but not applied, an input
pulled but not recorded, or a recorded change without its events.

How, without a shield scope of ours around every write (a turn has many): the writes are
shielded asks (``ctx.ask(..., shield=True)``), which the caller's cancellation cannot cut
short and which have no cancel point, so a write and the one that must follow it (pull then
record, commit then apply) have no cancel point between them; the events after a write are
published under a shield, and only when someone subscribes (with nobody listening there is
nothing to lose and no need for a cancel point).

Between two steps the engine is at a cancel point (a Cancel that came while a step recorded
ends the run there) and waits only when mail waits in its mailbox: a control message told to
an idle engine was handled in its sender's task (every handler is inline: a plain ``def``),
and what waits (anything told while the engine was busy) is handled by the engine's own task
before the next step starts. The runner knows it has been by asking the engine itself, behind
that mail, rather than by counting on the order in which Trio runs its tasks. A step with
nothing to wait for costs no extra trip through Trio's scheduler.

Inputs carry a dispatch mode (``protocol._dispatch``): the input source tells the engine
:class:`Interrupt` (an interrupting input waits first in the source) or :class:`Terminate`.
Either cancels the slow part of the step in flight with a cancel scope of its own (one per
model call or tool call, besides the run's scope that ``Cancel`` uses), so the run goes on:
the cut is recorded (``StepInterrupted``; a cut tool's result says ``interrupted by ...``),
the calls of the step not run yet are recorded as not run, and then either the interrupting
input is appended before the next model call (:meth:`Engine._take_interrupt`) or the task is
recorded terminated (:meth:`Engine._terminate`; a run in progress ends ``terminated``, and
an engine that runs nothing records it at once).

With ``lifecycle`` on, the engine also offers the control tools ``task_complete``,
``task_abandon``, ``output`` and ``wait_user_response`` (``wait_parent`` in a sub-agent) and
answers their calls itself (see :mod:`._lifecycle`). Where the
engine stops is recorded too, so a thread's status (``protocol._lifecycle``) is in its log: a
failed step as ``StepFailed``, a stop for a ``Pause`` or ``Cancel`` as ``EnginePaused``
(both only on those paths: a step that goes well writes nothing more).

With spend limits (``wiring.spend``), the engine asks the spend ledger before each model
call, once the context is rendered and its size known; a call that would pass a limit is
not made: the step changes nothing and the engine pauses, recorded as ``EnginePaused`` with
the ledger's reason.
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, assert_never

import attrs
import trio
from attrs import define, field, frozen

from livecontext.protocol.agent import (
    AfterModelCall,
    AfterToolExecute,
    AgentOutput,
    AppendInput,
    AppendOutput,
    AppendToolResults,
    ApplyEffect,
    ApprovalsRequested,
    BeforeModelCall,
    BeforeToolExecute,
    Cancel,
    CancelTool,
    CheckSpend,
    CheckTool,
    GetTail,
    GetWindows,
    Idle,
    IdleReason,
    InputAvailable,
    InputText,
    Interrupt,
    InvokeTool,
    ListTools,
    ModelTextDelta,
    ObservationCut,
    Pause,
    PullInput,
    RecordInterruption,
    RecordPause,
    RecordStepFailure,
    RecordTermination,
    RecordToolResult,
    RecordToolStarted,
    Render,
    Rendered,
    Resume,
    RunUntilIdle,
    SpendReport,
    SpendVerdict,
    StateTransition,
    Step,
    StepDone,
    StepInterruptedEvent,
    Tail,
    TaskTerminatedEvent,
    Terminate,
    ToolChecked,
    ToolInvoked,
    Tools,
    WaitingInput,
    Windows,
)
from livecontext.protocol.context import FoldNow, LimitLevel
from livecontext.protocol.history import (
    OUTPUT,
    RecordApprovalRequest,
    approval_waits,
    EngineState,
    Level,
    ModelInputEntry,
    ModelOutputEntry,
    ModelReply,
    ModelRequest,
    Shown,
    ToolCall,
    ToolContext,
    ToolResult,
    ToolResultsEntry,
    ToolSpec,
    ToolStatus,
    Usage,
    id_number,
)
from livecontext.protocol.kernel import Ack, ActorId, Message, Topic
from livecontext.protocol.records import AppEffect
from livecontext.runtime import (
    Actor,
    ActorError,
    ActorStoppedError,
    AskTimeoutError,
    LivecontextError,
    ModelError,
    handler,
)
from livecontext.runtime.models import ModelClient
from livecontext.runtime.tokens import TokenCounter

from ._approval import NO_APPROVALS, ApprovalPolicy
from ._lifecycle import CONTROL_TOOL_NAMES, CONTROL_TOOLS, SUB_AGENT_CONTROL_TOOLS, is_sub_agent, run_control_tool

log = logging.getLogger("livecontext.engine")

_NO_USAGE = Usage()
_WRITE_TIMEOUT_S = 60.0
"""The deadline of a shielded write to the agent's own history store or input source (see
:meth:`Engine._ask`): a cancel cannot end it, this does."""
_SPEND_TIMEOUT_S = 60.0
"""The deadline of a ``CheckSpend``: the limits' actor is shared by the threads of a system,
not the agent's own."""

INTERRUPTED_TEXT = (
    "interrupted: the tool started but its outcome was never recorded (the process stopped "
    "or the call was cancelled); check its effect before calling it again"
)

UNKNOWN_TEXT = (
    "outcome unknown: {name} has side effects and started, but its outcome was never recorded "
    "(the process stopped or the call was cancelled), so it was not run again. Its idempotency "
    "key is {key}: find out whether its effect happened before calling it again (a call made "
    "again is a new call, with a new key)"
)


def engine_topic(thread_id: str) -> Topic:
    """The topic where a thread's engine publishes its events."""
    return Topic(f"engine.{thread_id}")


@frozen
class EngineWiring:
    """Who the engine talks to."""

    history: ActorId
    apps: ActorId
    input: ActorId
    """Answers ``PullInput`` with ``InputText`` (``remaining``: how many lines it still holds) and
    tells the engine ``InputAvailable`` whenever input arrives, as ``actors.InputSource`` does:
    the engine relies on both to skip a pull that would find nothing."""
    recap: ActorId | None = None
    """The recap maintainer, asked to fold at the truncate threshold (if there is one)."""
    spend: ActorId | None = None
    """The spend ledger asked before each model call (if the agent has spend limits: see
    ``livecontext.actors.spend``)."""


@frozen
class StepOutcome:
    """What one step did."""

    from_state: EngineState
    to_state: EngineState
    progressed: bool
    waiting_for_input: bool = False
    error: str = ""
    """Why the step failed: a model error or an unexpected error (``""``: it did not fail)."""
    cancelled: bool = False
    """A :class:`Cancel` (or the engine stopping) cut the step short: no failure, no error."""
    limit: str = ""
    """The spend limit the step's model call would have passed, with the figures: the call
    was not made and the engine pauses (``""``: no limit stopped it)."""
    approval: str = ""
    """The calls the step stopped at for want of a person's approval (``approval of pay call
    c1``): the run ends there (``""``: none)."""
    terminated: bool = False
    """A ``terminate`` input ended the task: the engine waits for new input."""


class _StepCut(LivecontextError):
    """The slow part of a step (``what``: the model call) was cancelled by an interrupt or a
    termination; caught by the step (never seen outside the engine)."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(what)


@frozen
class _TerminateAsked:
    """A :class:`Terminate` whose reply waits until the termination is recorded."""

    msg: Terminate
    reply: Any


class _SpendStop(LivecontextError):
    """The spend ledger refused the coming model call (``reason`` says why): caught by the
    step, which pauses the engine with that reason (never seen outside the engine)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@define
class _Job:
    kind: str  # "step" or "idle"
    reply: Any
    max_steps: int | None = None
    steps: int = 0
    paused: bool = False
    """A ``Pause`` arrived: an idle job ends after its current step."""
    cuts: list[ObservationCut] = field(factory=list)
    """The observations its model calls sent cut (an idle job's :attr:`Idle.cut`)."""


@define
class _Run:
    """The run in progress: a job's steps, or (``job`` ``None``) a free run while ``auto`` holds."""

    job: _Job | None
    tool_in_flight: str | None = None
    """The call id of the tool the run waits for: a cancelled run stops it."""
    over: trio.Event = field(factory=trio.Event)
    """Set when the run is over, a cancelled one included (the engine stopping waits for it)."""


@define
class _CancelAsked:
    """A ``Cancel`` whose reply waits for the runner to finish it (see :meth:`Engine.on_cancel`)."""

    reply: Any
    jobs: list[_Job]
    """The jobs it took from the queue, answered as cancelled."""


class _Deltas:
    """The model's text deltas, published by a task of their own (:meth:`forward`) so that a
    slow listener never slows the model; :meth:`wait_published` says when all are out."""

    def __init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[str](1024)
        self._unpublished = 0
        self._published = trio.Event()
        self._published.set()

    def push(self, text: str) -> None:
        """Queue ``text`` for publishing; a slow listener loses deltas, never the recorded output."""
        try:
            self._send.send_nowait(text)
        except trio.WouldBlock:
            return
        self._unpublished += 1
        if self._published.is_set():
            self._published = trio.Event()

    async def forward(self, publish: Callable[[str], Awaitable[None]]) -> None:
        """Publish every queued delta, in order, for the engine's life."""
        async for text in self._receive:
            try:
                await publish(text)
            finally:
                self._unpublished -= 1
                if not self._unpublished:
                    self._published.set()

    async def wait_published(self) -> None:
        """Wait until every delta queued so far is published."""
        await self._published.wait()


@frozen
class _AwaitingApproval:
    """What a tool step gives when its call waits for a person's decision: the calls waiting."""

    waiting_on: str


@frozen
class _CaughtUp(Message):
    """Asked by the engine of itself: answered once the mail sent to it before is handled
    (a mailbox takes its messages in order). Never sent by anyone else."""


class Engine(Actor):
    """Runs one agent thread's state machine; see the module docstring."""

    def __init__(self, thread_id: str, model: ModelClient, wiring: EngineWiring,
                 counter: TokenCounter, *, budget: int = 8000, auto: bool = False,
                 tool_timeout_s: float = 300.0, lifecycle: bool = True,
                 approval: ApprovalPolicy = NO_APPROVALS) -> None:
        self.thread_id = thread_id
        self.model = model
        self.wiring = wiring
        self.counter = counter
        self.budget = budget
        self.auto = auto
        self.tool_timeout_s = tool_timeout_s
        self.lifecycle = lifecycle
        """Offer the control tools and answer their calls (else the app host answers them:
        unknown tools)."""
        self.approval = approval
        """Which calls need a person's approval besides those whose tool requires it."""
        self._pause_unrecorded = False
        """A ``Pause`` came and the stop it makes is not recorded yet (see :meth:`_record_pause`)."""
        self._cancels: list[_CancelAsked] = []
        """Cancels handled but not yet answered: the runner answers them between runs."""
        self.topic = engine_topic(thread_id)
        self._jobs: collections.deque[_Job] = collections.deque()
        self._wake = trio.Event()
        self._run_scope: trio.CancelScope | None = None
        """The runner's cancel scope: Cancel cancels it while a run (a job's steps, or a free
        run) is in progress, which ends the run (see :meth:`_runner`)."""
        self._active: _Run | None = None
        """The run in progress, from its first step until it is over (a cancelled one included)."""
        self._tool_specs: Tools | None = None
        """The apps' tools, asked once: the host's apps are fixed when the agent is spawned."""
        self._windows: Windows | None = None
        """The apps' windows as the app host last gave them (``None``: ask it again). An app
        changes only by an effect applied, and the engine alone sends the host
        ``ApplyEffect``, whose answer is the windows after it: so they hold until the engine
        invokes a tool (a tool must not change its app; if one does, the next call asks)."""
        self._known_tail: Tail | None = None
        """The Tail the previous step's write returned; used by the next step of the same run only."""
        self._waiting_tail: Tail | None = None
        """The tail the last step stopped at for want of input (``None``: it did not): the next
        run starts from it. Only the engine moves a thread on from waiting for input (it alone
        appends entries, and the newest entry cannot be edited away), so that state holds
        whatever was written since; the input step uses nothing else of the tail."""
        self._last_state = EngineState.WAITING_INPUT
        self._input_empty = False
        """The input source had nothing left at this run's last pull, and no ``InputAvailable`` came since."""
        self._deltas = _Deltas()
        self._step_scope: trio.CancelScope | None = None
        """The scope of the slow part of the step in flight (the model call, the tool), while
        it runs: an interrupt or a termination cancels it (the run goes on)."""
        self._cut_by: str | None = None
        """Who gave the input that cancelled :attr:`_step_scope`."""
        self._interrupt_by: str | None = None
        """An interrupting input waits at the front of the input source, given by this sender:
        the engine takes it before its next model call (see :meth:`_take_interrupt`)."""
        self._terminations: list[_TerminateAsked] = []
        """Terminations told and not recorded yet (see :meth:`_terminate`)."""

    async def on_start(self) -> None:
        if self.wiring.spend is not None:  # what the thread spent in earlier runs counts against the limits
            tail = await self._tail()
            await self.ctx.tell(self.wiring.spend, SpendReport(self.thread_id, self.model.name, tail.usage))
        self.ctx.nursery.start_soon(self._runner)
        self.ctx.nursery.start_soon(self._deltas.forward, self._publish_delta)

    # -- control ---------------------------------------------------------------------------------

    def _poke(self) -> None:
        self._wake.set()

    @handler(inline=True)
    def on_pause(self, msg: Pause) -> None:
        """Stop running on its own; a ``RunUntilIdle`` in progress ends after its current step."""
        self.auto = False
        self._pause_unrecorded = True
        for job in self._jobs:
            if job.kind == "idle":
                job.paused = True
        self._poke()  # an idle runner records the pause

    @handler(inline=True)
    def on_resume(self, msg: Resume) -> None:
        self.auto = True
        self._pause_unrecorded = False
        self._poke()

    @handler(inline=True)
    def on_input_available(self, msg: InputAvailable) -> None:
        self._input_empty = False
        self._poke()

    @handler(inline=True)
    def on_interrupt(self, msg: Interrupt) -> None:
        """An interrupting input waits at the front of the input source: cancel the model call
        or the tool in flight (if any) and take that input next. The run goes on."""
        self._interrupt_by = msg.by
        self._input_empty = False
        self._cut_step(msg.by)
        self._poke()

    @handler(inline=True)
    def on_terminate(self, msg: Terminate) -> None:
        """End the task: cancel the model call or the tool in flight (if any); the runner
        records the termination (in the run in progress, or at once if none is) and replies."""
        self._terminations.append(_TerminateAsked(msg, self.ctx.defer_reply()))
        self._cut_step(msg.by)
        self._poke()

    def _pending_cut(self) -> str | None:
        """Who gave an interrupting or terminating input not acted on yet, if anyone did."""
        if self._terminations:
            return self._terminations[0].msg.by
        return self._interrupt_by

    def _cut_step(self, by: str) -> None:
        scope = self._step_scope
        if scope is not None and not scope.cancel_called:
            self._cut_by = by
            scope.cancel()

    @handler(inline=True)
    def on_step(self, msg: Step) -> StepDone | None:
        self._jobs.append(_Job("step", self.ctx.defer_reply()))
        self._poke()
        return None

    @handler(inline=True)
    def on_run_until_idle(self, msg: RunUntilIdle) -> Idle | None:
        self._jobs.append(_Job("idle", self.ctx.defer_reply(), msg.max_steps))
        self._poke()
        return None

    @handler(inline=True)
    def on_caught_up(self, msg: _CaughtUp) -> None:
        """Nothing to do: that it is answered says the mail before it was handled (see
        :meth:`_step_boundary`)."""

    @handler(inline=True)
    def on_cancel(self, msg: Cancel) -> None:
        """Cancel the step in flight and pause; reply once nothing of it runs any more and the
        pause is recorded.

        The handler only cancels (and takes the queued jobs, so that the runner cannot start
        one of them); the runner does the rest once the cancelled run is over (see
        :meth:`_finish_cancels`). A handler that waited for the run would hold the mailbox,
        and a stepping scheduler (which delivers the next envelope once no handler runs)
        could never deliver what ending the run needs.
        """
        self.auto = False
        run = self._active
        queued = [job for job in self._jobs if run is None or job is not run.job]
        for job in queued:
            self._jobs.remove(job)
        self._cancels.append(_CancelAsked(self.ctx.defer_reply(), queued))
        if run is not None:
            assert self._run_scope is not None
            self._run_scope.cancel()
        self._poke()

    async def on_stop(self) -> None:
        # answer every waiting asker rather than leave it to its timeout
        await self._cancel_all()
        asked, self._terminations = self._terminations, []
        for ask in asked:
            if ask.reply is not None:
                ask.reply.fail(LivecontextError(
                    f"the engine of thread {self.thread_id} stopped before it recorded the termination; "
                    "give the terminate input again"))
        if self._cancels:  # handled, the runner had not answered them yet
            await self._finish_cancels()

    async def _cancel_all(self) -> None:
        """Cancel the run in progress, wait until it is over and answer the queued jobs (as the
        engine stops: no runner will)."""
        self.auto = False
        # take the queued jobs first, so that the runner cannot start one of them
        run = self._active
        queued = [job for job in self._jobs if run is None or job is not run.job]
        for job in queued:
            self._jobs.remove(job)
        if run is not None:
            assert self._run_scope is not None
            self._run_scope.cancel()
            await run.over.wait()
        if queued:
            state = await self._state_now()
            for job in queued:
                self._answer(job, StepOutcome(state, state, False, cancelled=True), IdleReason.CANCELLED)

    # -- the runner -------------------------------------------------------------------------------

    async def _runner(self) -> None:
        """Take the jobs in turn, and run freely while ``auto`` holds, for the engine's life.

        Runs share one cancel scope until a ``Cancel`` uses it up (a scope per run cost one per
        turn; one per step would cost a scope per step for nothing: the writes inside a step
        are shielded asks anyway). ``Cancel`` cancels it only while a run is in progress, and
        the cancel lands at the run's next cancel point: in the slow part of the step in
        progress (the model call, the tool wait), or, if it came while the step was recording,
        at the start of the next step (:meth:`_step_boundary`), so the run ends before taking
        it. The cancelled run is then ended out of the spent scope, and a new one is made.
        """
        while True:
            with trio.CancelScope() as scope:
                self._run_scope = scope
                # (a run that ended before the cancel could land leaves the scope spent too)
                while not scope.cancel_called:
                    await self._serve()
            if self._active is not None:
                await self._end_cancelled_run(self._active)

    async def _serve(self) -> None:
        """Wait for work, or do the next piece of it: finish the cancels, answer a paused job,
        run a job or run freely."""
        if self._cancels:
            await self._finish_cancels()
            return
        if self._terminations:  # (an agent that runs no job is terminated all the same)
            try:
                await self._terminate(await self._tail())
            except LivecontextError as exc:  # (its askers are told)
                log.warning("engine %s: the termination was not recorded: %s", self.thread_id, exc)
            self._known_tail = None
            return
        if self._pause_unrecorded and not self.auto:
            await self._record_pause()
        if not self._jobs and not self.auto:
            self._wake = trio.Event()
            await self._wake.wait()
            return
        job = self._jobs[0] if self._jobs else None
        if job is not None and job.paused:  # paused before it took a step
            await self._record_pause()
            state = await self._state_now()
            self._finish(job, StepOutcome(state, state, False), IdleReason.PAUSED)
            return
        if job is not None:
            await self._run(job)
            return
        self._wake = trio.Event()  # made before the free run, so that a poke during it counts
        if await self._run(None):
            await self._wake.wait()

    async def _run(self, job: _Job | None) -> bool:
        """Run ``job`` to its end, or (``None``) run freely while no job waits and ``auto`` holds.

        A cancel (see :meth:`_runner`) leaves by ``trio.Cancelled``, the run still in progress:
        :meth:`_end_cancelled_run` ends it.

        Returns whether a free run should wait for a poke (no input, a failure).
        """
        self._active = run = _Run(job)
        self._input_empty = False  # each run's first pull asks the source
        while True:
            outcome = await self._guarded_step()
            if not outcome.progressed or outcome.error:
                self._known_tail = None
                if outcome.error:
                    await self._record_failure(outcome.error)
                if outcome.limit:  # recorded with its reason, so that the status says it
                    await self._record_stop(RecordPause(outcome.limit))
            if job is None:
                if (outcome.waiting_for_input or outcome.error or outcome.limit or outcome.approval
                        or outcome.terminated):
                    wait = True
                    break
                if self._jobs or not self.auto:
                    wait = False
                    break
            elif (reason := self._job_end(job, outcome)) is not None:
                if reason is IdleReason.PAUSED:
                    await self._record_pause()  # before the answer: its asker sees the status
                self._finish(job, outcome, reason)
                wait = False
                break
        self._run_over(run)
        return wait

    async def _finish_cancels(self) -> None:
        """Answer the cancels handled since the last time (their run, if any, is over): their
        jobs as cancelled, then (the pause recorded) their askers."""
        cancels, self._cancels = self._cancels, []
        try:
            jobs = [job for cancel in cancels for job in cancel.jobs]
            if jobs:
                state = await self._state_now()
                for job in jobs:
                    self._answer(job, StepOutcome(state, state, False, cancelled=True), IdleReason.CANCELLED)
            await self._record_pause()
        finally:
            for cancel in cancels:
                if cancel.reply is not None:
                    cancel.reply.send(Ack())

    async def _end_cancelled_run(self, run: _Run) -> None:
        """Stop the tool a cancelled run left running, and answer its job."""
        try:
            self._known_tail = None
            if run.tool_in_flight is not None:
                await self.ctx.ask(self.wiring.apps, CancelTool(run.tool_in_flight))
            if run.job is not None:
                state = await self._state_now()
                self._finish(run.job, StepOutcome(state, state, False, cancelled=True), IdleReason.CANCELLED)
        finally:
            self._run_over(run)

    def _run_over(self, run: _Run) -> None:
        self._active = None
        run.over.set()  # (the engine stopping may wait for it)

    def _job_end(self, job: _Job, outcome: StepOutcome) -> IdleReason | None:
        """Why ``outcome`` (of its latest step) ends ``job``, or ``None`` if it does not.

        A ``Step`` job is a run of at most one step: it ends after it (its answer, a
        :class:`StepDone`, carries no reason)."""
        if job.kind == "step":
            return IdleReason.MAX_STEPS
        job.steps += 1 if outcome.progressed else 0
        if outcome.terminated:
            return IdleReason.TERMINATED
        if outcome.waiting_for_input:
            return IdleReason.NO_INPUT
        if outcome.error:
            return IdleReason.FAILED
        if outcome.limit:
            return IdleReason.PAUSED
        if outcome.approval:
            return IdleReason.WAITING_APPROVAL
        if job.max_steps is not None and job.steps >= job.max_steps:
            return IdleReason.MAX_STEPS
        if job.paused:
            return IdleReason.PAUSED
        return None

    def _finish(self, job: _Job, outcome: StepOutcome, reason: IdleReason) -> None:
        self._known_tail = None
        if self._jobs and self._jobs[0] is job:
            self._jobs.popleft()
        self._answer(job, outcome, reason)

    @staticmethod
    def _answer(job: _Job, outcome: StepOutcome, reason: IdleReason) -> None:
        if job.reply is None:
            return
        if job.kind == "step":
            job.reply.send(StepDone(outcome.from_state, outcome.to_state, outcome.progressed, outcome.error,
                                    outcome.cancelled))
        else:
            job.reply.send(Idle(outcome.to_state, job.steps, reason, outcome.error, outcome.limit, tuple(job.cuts),
                                outcome.approval))

    async def _record_pause(self) -> None:
        """Have the history store record that a pause stopped the engine (it does so only if
        work is left and the log does not say so already)."""
        self._pause_unrecorded = False
        await self._record_stop(RecordPause())

    async def _record_failure(self, error: str) -> None:
        """Have the history store record a failed step (a step cut short by a cancel is no
        failure: the cancel records a pause)."""
        await self._record_stop(RecordStepFailure(error))

    async def _record_stop(self, msg: Message) -> None:
        try:
            await self.ctx.ask(self.wiring.history, msg, shield=True)
        except LivecontextError as exc:  # (the history store may be what failed)
            log.warning("engine %s: cannot record %s: %s", self.thread_id, type(msg).__name__, exc)

    async def _guarded_step(self) -> StepOutcome:
        """One step; an unexpected error becomes the outcome, never a crash.

        Crashing would restart the engine and lose the askers waiting for their replies (a
        ``livecontext run`` would hang): the step fails instead, with the error's text, and
        the state is whatever the history says. A cancel is not caught here: it ends the run
        (see :meth:`_runner`).
        """
        await self._step_boundary()
        try:
            return await self.do_step()
        except Exception as exc:  # noqa: BLE001 - reported to the asker, see above
            error = _describe(exc)
            log.info("engine %s: step failed: %s", self.thread_id, error)
        if self._active is not None:
            self._active.tool_in_flight = None
        state = await self._state_now()
        return StepOutcome(state, state, False, error=error)

    async def _step_boundary(self) -> None:
        """Between two steps: a cancel point always, and a wait for the mail that waits for us.

        A Cancel that came while the previous step recorded (shielded) ends the run here,
        before the next step does anything. Control messages told during a step are handled
        before the next one starts: a Pause, an InputAvailable or a Step told to an idle
        engine was handled in its sender's task (their handlers are inline: plain ``def``s);
        what waits in the mailbox (anything told while the engine was not idle) is handled by
        the engine's own task. The runner asks the engine
        itself (:class:`_CaughtUp`) and has its answer once all of that is handled, as a
        mailbox takes its messages in order: whichever order Trio runs its tasks in (a Cancel
        among them cancels the run, and this ask with it). With nothing waiting there is
        nothing to wait for; other tasks still get the CPU, as every ask a step makes is a
        schedule point.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if self.ctx.runtime.is_idle(self.ctx.self_id):
            return
        try:
            await self.ctx.ask(self.ctx.self_id, _CaughtUp(), timeout=None)
        except ActorStoppedError:  # the engine stops: its on_stop cancels the run
            pass

    # -- one step ---------------------------------------------------------------------------------

    async def _tail(self) -> Tail:
        tail: Tail = await self._ask(self.wiring.history, GetTail(), Tail)
        self._last_state = tail.state
        return tail

    async def _state_now(self) -> EngineState:
        """The state from the history, or the last one seen if the history store cannot say."""
        try:
            return (await self._tail()).state
        except ActorError as exc:
            log.warning("engine %s: cannot read the state: %s", self.thread_id, exc)
            return self._last_state

    async def _ask(self, to: ActorId, msg: Message, expected: type[Any], timeout: float | None = None,
                   *, shield: bool = False) -> Any:
        """Ask ``to`` and check the reply's type.

        A query to the agent's own history store or app host (``GetTail``, ``Render``,
        ``GetWindows``, ``ListTools``) has no deadline: it is a cancel point, so a Cancel or a
        stop ends it, and a read that is slow (a long history, a store behind a busy disk)
        is not failed for it; a deadline would only open a cancel scope on every call. A
        shielded write passes :data:`_WRITE_TIMEOUT_S`: a cancel cannot end it, so the
        deadline is what bounds a write to a store that never answers. An ask to an actor
        other than the agent's own (the shared spend limits, a tool) keeps its own timeout.
        """
        reply = await self.ctx.ask(to, msg, timeout=timeout, shield=shield)
        if not isinstance(reply, expected):
            raise LivecontextError(f"{to} answered {type(msg).__name__} with {type(reply).__name__}, expected {expected.__name__}")
        return reply

    async def _announce(self, event: Callable[..., Message], *args: Any) -> None:
        """Publish ``event(*args)`` about a change already recorded: a cancel must not lose it.

        Shielded, and only when someone subscribes: with nobody listening the event reaches no
        one (it is not even made), and skipping it keeps the write's shielded ask the last
        await (no cancel point).
        """
        if self.ctx.runtime.has_subscribers(self.topic):
            with trio.CancelScope(shield=True):
                await self.ctx.publish(self.topic, event(*args))

    async def _tell_listeners(self, event: Callable[..., Message], *args: Any) -> None:
        """Publish ``event(*args)``, made only if someone subscribes; a cancel point either way,
        as a publish is."""
        if self.ctx.runtime.has_subscribers(self.topic):
            await self.ctx.publish(self.topic, event(*args))
        else:
            await trio.lowlevel.checkpoint_if_cancelled()

    async def _tools(self) -> Tools:
        if self._tool_specs is None:
            tools: Tools = await self._ask(self.wiring.apps, ListTools(), Tools)
            if self.lifecycle:
                control = SUB_AGENT_CONTROL_TOOLS if is_sub_agent(self.thread_id) else CONTROL_TOOLS
                tools = Tools(tools.specs + control)
            self._tool_specs = tools
        return self._tool_specs

    async def do_step(self) -> StepOutcome:
        """Do the one piece of work of the current state (see DESIGN.md's table)."""
        tail, self._known_tail = self._known_tail or self._waiting_tail, None
        self._waiting_tail = None
        if tail is None:
            tail = await self._tail()
        state = tail.state
        if self._terminations:
            return await self._terminate(tail)
        if self._interrupt_by is not None and state is not EngineState.WAITING_INPUT:
            return await self._take_interrupt(tail)
        if state is EngineState.WAITING_INPUT:
            await self._tell_listeners(WaitingInput, self.thread_id)
            after = await self._step_input()
            if after is None:
                self._waiting_tail = tail
                return StepOutcome(state, state, False, waiting_for_input=True)
        elif state in (EngineState.PENDING_INPUT, EngineState.PENDING_TOOL_RESULTS):
            try:
                after = await self._step_model(tail)
            except _SpendStop as stop:  # no call made, nothing changed: the engine pauses
                return StepOutcome(state, state, False, limit=stop.reason)
            except _StepCut as cut:  # nothing changed but the record of the cut: the run goes on
                if self.wiring.spend is not None:  # the call allowed is no longer under way
                    await self.ctx.tell(self.wiring.spend, SpendReport(self.thread_id, self.model.name, tail.usage))
                if cut.what:  # (else the call was not made: the next step takes the input)
                    await self._deltas.wait_published()  # (listeners see the deltas before the cut)
                    await self._record_cut(cut.what)
                return StepOutcome(state, state, False)
            except Exception as exc:  # noqa: BLE001 - a failed model call changes nothing
                error = _describe(exc)
                if not isinstance(exc, ModelError):
                    log.info("engine %s: model step failed: %s", self.thread_id, error)
                if self.wiring.spend is not None:  # the call allowed is no longer under way
                    await self.ctx.tell(self.wiring.spend, SpendReport(self.thread_id, self.model.name, tail.usage))
                await self._after_model_call(AfterModelCall(self.thread_id, "", "", 0, error))
                return StepOutcome(state, state, False, error=error)
        elif state is EngineState.WAITING_TOOL_RESULTS:
            try:
                stepped = await self._step_tool(tail)
            except _StepCut:  # an interrupt came before the tool started: the next step takes it
                return StepOutcome(state, state, False)
            if isinstance(stepped, _AwaitingApproval):  # nothing to do until a person decides
                return StepOutcome(state, state, False, approval=stepped.waiting_on)
            after = stepped
        elif state is EngineState.TOOL_RESULTS_READY:
            after = await self._ask(self.wiring.history, AppendToolResults(), Tail, _WRITE_TIMEOUT_S,
                                    shield=True)
        else:  # pragma: no cover - exhaustive
            assert_never(state)
        if after.state is not state:
            await self._announce(StateTransition, self.thread_id, state, after.state)
        self._known_tail = after  # the store's own answer to this step's write
        return StepOutcome(state, after.state, True)

    async def _step_input(self) -> Tail | None:
        if self._input_empty and self._input_quiet():
            return None  # the pull would find nothing (typically at the end of a turn)
        # (input on its way, a ProvideInput in the source's mailbox, is pulled all the same:
        # the pull waits in that mailbox behind it)
        # shielded asks: an input pulled from the source must be recorded, not lost
        while True:
            got = await self._ask(self.wiring.input, PullInput(), InputText, _WRITE_TIMEOUT_S, shield=True)
            self._input_empty = not got.remaining
            if got.text is None:
                return None
            self._interrupt_by = None  # (an interrupting input is first: this is it)
            if got.text.strip():  # blank input is ignored, not recorded
                tail: Tail = await self._ask(self.wiring.history, AppendInput(got.text, got.retention, got.key), Tail,
                                             _WRITE_TIMEOUT_S, shield=True)
                return tail

    def _input_quiet(self) -> bool:
        """Whether no input can have reached the source since the last pull found it empty.

        Input reaches the source as ``ProvideInput``, which the source answers by telling us
        ``InputAvailable`` (which clears ``_input_empty``). With the source idle, every such
        message has been handled and its ``InputAvailable`` sent; with us idle too (the runner
        is no handler), every one sent has been handled. So the pull can be skipped: it would
        find nothing, and an input that comes later wakes the engine as usual.
        """
        rt = self.ctx.runtime
        return rt.is_idle(self.wiring.input) and rt.is_idle(self.ctx.self_id)

    async def _step_model(self, tail: Tail) -> Tail:
        if tail.limit is LimitLevel.TRUNCATE and self.wiring.recap is not None:
            # the one place the engine waits for the recap maintainer: the context must not overflow
            try:
                await self.ctx.ask(self.wiring.recap, FoldNow(), timeout=self.tool_timeout_s)
            except ActorError as exc:  # a maintainer gone must not halt the agent: render still cuts to budget
                log.warning("engine %s: no fold before the model call: %s", self.thread_id, exc)
        windows = self._windows
        if windows is None:
            windows = self._windows = await self._ask(self.wiring.apps, GetWindows(), Windows)
        tools = await self._tools()
        rendered: Rendered = await self._ask(self.wiring.history, Render(self.budget, windows.text, for_call=True,
                                                                          apps=windows.apps),
                                             Rendered)
        if self.wiring.spend is not None:
            verdict: SpendVerdict = await self._ask(self.wiring.spend, CheckSpend(
                self.thread_id, self.model.name, tail.usage, rendered.tokens, rendered.shared_tokens), SpendVerdict,
                timeout=_SPEND_TIMEOUT_S)
            if verdict.stop is not None:
                raise _SpendStop(verdict.stop)
        await self._tell_listeners(BeforeModelCall, self.thread_id, tail.model_outputs,
                                   len(rendered.messages), rendered.tokens, self.budget, rendered.spans)
        cut = observation_cut(self.thread_id, tail, rendered)
        if cut is not None:
            await self._tell_listeners(lambda: cut)
            if self._active is not None and self._active.job is not None:
                self._active.job.cuts.append(cut)
        request = ModelRequest(rendered.messages, tools.specs, tail.model_outputs, self.thread_id)
        # text deltas are events for listeners: with none, the model need not pace its stream
        listening = self.ctx.runtime.has_subscribers(self.topic)
        if self._pending_cut() is not None:  # it came while the call was prepared: no call
            raise _StepCut("")
        with trio.CancelScope() as scope:  # an interrupt cuts the call, not the run
            self._step_scope = scope
            try:
                reply: ModelReply = await self.model.complete(request, self._deltas.push if listening else None)
            finally:
                self._step_scope = None
        if scope.cancelled_caught:
            raise _StepCut("model call")
        return await self._record_output(reply, rendered)

    async def _record_output(self, reply: ModelReply, rendered: Rendered) -> Tail:
        usage = reply.usage if reply.usage != _NO_USAGE else self._counted_usage(reply, rendered.tokens)
        after: Tail = await self._ask(self.wiring.history, AppendOutput(
            reply.text, reply.tool_calls, reply.model, usage, rendered.tokens, rendered.shared_tokens), Tail,
            _WRITE_TIMEOUT_S, shield=True)
        if self.wiring.spend is not None:  # the threads sharing the limits see this call at once
            with trio.CancelScope(shield=True):
                await self.ctx.tell(self.wiring.spend, SpendReport(self.thread_id, self.model.name, after.usage))
        if self.ctx.runtime.has_subscribers(self.topic):  # see _announce
            entry_id = after.last.id if after.last is not None else ""
            with trio.CancelScope(shield=True):
                await self._after_model_call(AfterModelCall(
                    self.thread_id, entry_id, reply.text, len(reply.tool_calls)))
        return after

    def _counted_usage(self, reply: ModelReply, sent_tokens: int) -> Usage:
        """The usage of a call whose model reported none (the offline ones): the rendered
        count of what was sent, the counted text and calls of the answer, nothing cached."""
        out = self.counter.count(reply.text) if reply.text else 0
        for call in reply.tool_calls:
            out += self.counter.count(call.name) + self.counter.count(call.arguments)
        return Usage(prompt_tokens=sent_tokens, completion_tokens=out, counted=True)

    async def _publish_delta(self, text: str) -> None:
        await self.ctx.publish(self.topic, ModelTextDelta(self.thread_id, text))

    async def _after_model_call(self, event: AfterModelCall) -> None:
        """Publish ``event`` once the call's text deltas are out: listeners see them first."""
        await self._deltas.wait_published()
        await self.ctx.publish(self.topic, event)

    async def _step_tool(self, tail: Tail) -> Tail | _AwaitingApproval:
        last = tail.last
        assert isinstance(last, ModelOutputEntry)
        call = last.tool_calls[len(tail.recorded)]
        if self.lifecycle and call.name in CONTROL_TOOL_NAMES:
            await self._tell_listeners(BeforeToolExecute, self.thread_id, call.id, call.name, call.arguments)
            answered = run_control_tool(call, self.counter)
            after = await self._record_result(call, answered, apply=False)
            if call.name == OUTPUT and answered.result.status is ToolStatus.OK:
                await self._announce(AgentOutput, self.thread_id, call.id, json.loads(call.arguments)["text"])
            return after
        if self._pending_cut() is not None:
            raise _StepCut("")
        tools = await self._tools()
        spec = next((s for s in tools.specs if s.name == call.name), None)
        approval = next((a for a in tail.approvals if a.call.id == call.id), None) if tail.approvals else None
        if approval is None and self._needs_approval(call, spec):
            return await self._request_approvals(tail, last, tools)
        edited = None
        if approval is not None and approval.decided is None:
            # requested, not decided when this tail was read: a decision may have come since
            # (the tail is the one the previous step's write returned), so look once more
            tail = await self._tail()
            approval = next((a for a in tail.approvals if a.call.id == call.id), None)
            if approval is None or approval.decided is None:
                return _AwaitingApproval(approval_waits(tail.approvals))
        if approval is not None:
            decided = approval.decided
            assert decided is not None
            if not decided.approved:  # not run: the model reads who denied it and why
                text = (f"denied: {decided.by} did not approve this call of {call.name}, so it was not run. "
                        f"Reason: {decided.reason}")
                return await self._record_result(call, ToolInvoked(ToolResult(
                    call.id, call.name, ToolStatus.FAILED,
                    self.counter.content(text, text, f"{call.name} denied by {decided.by}: {decided.reason}"))),
                    apply=False)
            if decided.arguments is not None and decided.arguments != call.arguments:
                edited = decided
                call = attrs.evolve(call, arguments=decided.arguments)
        idempotent = spec is None or spec.idempotent  # an unknown tool has no effect to repeat
        context = ToolContext.of(made_in(last, self.thread_id), last.id, call.id)
        if call.id in tail.started and not idempotent:
            resumed = await self._resume_started(call, spec, context)
            if resumed is not None:
                return await self._record_result(call, resumed)
        if not idempotent:
            await self.ctx.ask(self.wiring.history, RecordToolStarted(call.id, call.name), shield=True)
        await self._tell_listeners(BeforeToolExecute, self.thread_id, call.id, call.name, call.arguments)
        run = self._active
        if run is not None:
            run.tool_in_flight = call.id
        self._windows = None  # (see __init__)
        # the ask's own timeout bounds the call; the scope is for an interrupt, which cuts the
        # call and not the run
        with trio.CancelScope() as scope:
            self._step_scope = scope
            if (by := self._pending_cut()) is not None:  # it came while the call was prepared
                self._cut_step(by)
            try:
                invoked: ToolInvoked = await self._ask(self.wiring.apps, InvokeTool(call, context), ToolInvoked,
                                                       timeout=self.tool_timeout_s)
            except AskTimeoutError:
                await self.ctx.ask(self.wiring.apps, CancelTool(call.id))
                invoked = ToolInvoked(self._timed_out(call, spec, context))
            finally:
                self._step_scope = None
        if scope.cancelled_caught:
            await self.ctx.ask(self.wiring.apps, CancelTool(call.id), shield=True)
            by = await self._record_cut(f"tool {call.name} (call {call.id})")
            invoked = ToolInvoked(self._cut_result(call, spec, context, by))
        if run is not None:
            run.tool_in_flight = None
        if edited is not None:
            invoked = attrs.evolve(invoked, result=self._edited(invoked.result, edited.by, call.arguments))
        return await self._record_result(call, invoked)

    def _needs_approval(self, call: ToolCall, spec: ToolSpec | None) -> bool:
        """Whether ``call`` (not a control tool) waits for a person's approval before it runs."""
        if self.lifecycle and call.name in CONTROL_TOOL_NAMES:
            return False
        return self.approval.needs(call, spec)

    async def _request_approvals(self, tail: Tail, last: ModelOutputEntry, tools: Tools) -> _AwaitingApproval:
        """Record, in one commit, a request for every call of ``last`` still to run that needs
        approval and has none requested yet; the step stops there."""
        specs = {s.name: s for s in tools.specs}
        known = {a.call.id for a in tail.approvals}
        calls = tuple(c for c in last.tool_calls[len(tail.recorded):]
                      if c.id not in known and self._needs_approval(c, specs.get(c.name)))
        after: Tail = await self._ask(self.wiring.history, RecordApprovalRequest(calls), Tail, _WRITE_TIMEOUT_S,
                                      shield=True)
        await self._announce(ApprovalsRequested, self.thread_id, tuple(a.call for a in after.approvals if a.pending))
        return _AwaitingApproval(approval_waits(after.approvals))

    def _edited(self, result: ToolResult, by: str, arguments: str) -> ToolResult:
        """``result`` saying first that ``by`` edited the call's arguments, and what they were."""
        note = f"({by} approved this call with edited arguments: {arguments})\n"
        content = result.content
        return attrs.evolve(result, content=self.counter.content(
            note + content.live.text, note + content.recent.text, content.gist.text + " (arguments edited)"))

    async def _record_result(self, call: ToolCall, invoked: ToolInvoked, *, apply: bool = True) -> Tail:
        """Commit a result with its effect, then apply the effect: both or (on failure) neither.
        A control tool's effect (``apply=False``) is the history's own: there is no app to apply it to.

        Two shielded asks with no cancel point between them, then the event (see _announce).
        """
        after: Tail = await self._ask(self.wiring.history, RecordToolResult(invoked.result, invoked.effect), Tail,
                                      _WRITE_TIMEOUT_S, shield=True)
        if isinstance(invoked.effect, AppEffect) and apply:
            try:
                applied = await self.ctx.ask(self.wiring.apps, ApplyEffect(invoked.effect), shield=True)
                self._windows = applied if isinstance(applied, Windows) else None
            except ActorError as exc:  # the host restarts and rebuilds its apps from the log
                log.warning("engine %s: applying %s failed: %s", self.thread_id,
                            type(invoked.effect).__name__, exc)
        await self._announce(AfterToolExecute, self.thread_id, call.id, call.name, invoked.result.status,
                             invoked.result.content.gist.text)
        return after

    async def _resume_started(self, call: ToolCall, spec: ToolSpec | None, context: ToolContext) -> ToolInvoked | None:
        """What to record for a call found started but unrecorded: today's "interrupted" for a
        tool without side effects; for one with them, what its check says (``None``: the check
        knows the effect did not happen, so the call is run now), else "outcome unknown" with
        the call's idempotency key. Never the call run again blindly."""
        if spec is None or not spec.side_effects:
            return ToolInvoked(self._interrupted(call))
        if spec.checked:
            # (the host cancels a check past the tool timeout, and says it cannot tell)
            checked: ToolChecked = await self._ask(self.wiring.apps, CheckTool(call, context, self.tool_timeout_s),
                                                   ToolChecked)
            if checked.result is not None:
                return checked.result
            if checked.not_done:
                return None
        text = UNKNOWN_TEXT.format(name=call.name, key=context.key)
        return ToolInvoked(ToolResult(call.id, call.name, ToolStatus.INTERRUPTED, self.counter.content(
            text, text, f"{call.name}: outcome unknown (key {context.key})")))

    # -- interrupts and terminations ------------------------------------------------------------

    async def _record_cut(self, what: str) -> str:
        """Record that an interrupt or a termination cut ``what`` (and publish it); return who
        gave the input that did."""
        by, self._cut_by = self._cut_by or "unknown", None
        await self._record_stop(RecordInterruption(what, by))
        await self._announce(StepInterruptedEvent, self.thread_id, what, by)
        return by

    def _cut_result(self, call: ToolCall, spec: ToolSpec | None, context: ToolContext, by: str) -> ToolResult:
        text = f"interrupted by {by} while it ran, and cancelled; {_after_cut(spec, context)}"
        return ToolResult(call.id, call.name, ToolStatus.INTERRUPTED,
                          self.counter.content(text, text, f"{call.name}: interrupted by {by}"))

    def _not_run(self, call: ToolCall, why: str) -> ToolResult:
        text = f"not run: {why}"
        return ToolResult(call.id, call.name, ToolStatus.SKIPPED, self.counter.content(text, text, text))

    async def _close_step(self, tail: Tail, why: str) -> Tail:
        """Record every call of the last output still without a result as not run (``why``)
        and append the results, so that an input may follow (a chat API refuses a call with
        no answer)."""
        after = tail
        while after.state is EngineState.WAITING_TOOL_RESULTS:
            last = after.last
            assert isinstance(last, ModelOutputEntry)
            call = last.tool_calls[len(after.recorded)]
            after = await self._record_result(call, ToolInvoked(self._not_run(call, why)), apply=False)
        if after.state is EngineState.TOOL_RESULTS_READY:
            after = await self._ask(self.wiring.history, AppendToolResults(), Tail, _WRITE_TIMEOUT_S, shield=True)
        return after

    async def _take_interrupt(self, tail: Tail) -> StepOutcome:
        """The step after an interrupt: the calls left are recorded as not run, and the
        interrupting input (first in the input source) is appended before the next model call."""
        state, by = tail.state, self._interrupt_by
        after = await self._close_step(tail, f"{by} interrupted the step")
        self._interrupt_by = None
        while True:  # every interrupting input given meanwhile, in the order they came
            got = await self._ask(self.wiring.input, PullInput(urgent=True), InputText, _WRITE_TIMEOUT_S,
                                  shield=True)
            self._input_empty = not got.remaining
            if got.text is not None and got.text.strip():
                after = await self._ask(self.wiring.history, AppendInput(got.text, got.retention, got.key,
                                                                         interrupting=True), Tail,
                                        _WRITE_TIMEOUT_S, shield=True)
            # (none: it was taken already, and the step goes on as it was; a queued one waits)
            if got.text is None or not got.urgent:
                break
        if after.state is not state:
            await self._announce(StateTransition, self.thread_id, state, after.state)
        self._known_tail = after
        return StepOutcome(state, after.state, after is not tail)

    async def _terminate(self, tail: Tail) -> StepOutcome:
        """End the task for the terminations told: the calls left are recorded as not run,
        then :class:`~livecontext.protocol.records.TaskTerminated` (the first termination's
        reason and sender); every asker is answered once it is durable."""
        asked, self._terminations = self._terminations, []
        first = asked[0].msg
        state = tail.state
        try:
            after = await self._close_step(tail, f"{first.by} terminated the task")
            await self.ctx.ask(self.wiring.history, RecordTermination(first.reason, first.by), shield=True,
                               timeout=_WRITE_TIMEOUT_S)
        except BaseException as exc:
            for ask in asked:
                if ask.reply is not None:
                    ask.reply.fail(exc if isinstance(exc, Exception) else LivecontextError(
                        f"the termination of thread {self.thread_id} was not recorded"))
            raise
        for ask in asked:
            if ask.reply is not None:
                ask.reply.send(Ack())
        self._interrupt_by = None
        await self._announce(TaskTerminatedEvent, self.thread_id, first.reason, first.by)
        if after.state is not EngineState.WAITING_INPUT:
            await self._announce(StateTransition, self.thread_id, state, EngineState.WAITING_INPUT)
        self._known_tail = None
        return StepOutcome(state, EngineState.WAITING_INPUT, True, terminated=True)

    def _interrupted(self, call: ToolCall) -> ToolResult:
        return ToolResult(call.id, call.name, ToolStatus.INTERRUPTED,
                          self.counter.content(INTERRUPTED_TEXT, INTERRUPTED_TEXT, "interrupted: outcome unknown"))

    def _timed_out(self, call: ToolCall, spec: ToolSpec | None, context: ToolContext) -> ToolResult:
        text = f"{call.name} timed out after {self.tool_timeout_s:g} s and was cancelled; {_after_cut(spec, context)}"
        return ToolResult(call.id, call.name, ToolStatus.FAILED,
                          self.counter.content(text, text, f"{call.name} timed out"))


def _after_cut(spec: ToolSpec | None, context: ToolContext) -> str:
    """What the model is told of a call cut short while it ran (a timeout, an interrupt): with
    side effects, that its outcome is unknown, with its key; else that nothing was applied."""
    if spec is not None and spec.side_effects:  # what it did outside the thread may stand
        return (f"it has side effects, so its outcome is unknown: its idempotency key is {context.key}; "
                "find out whether its effect happened before calling it again")
    return "its effect, if any, was not applied"


def made_in(output: ModelOutputEntry, thread_id: str) -> str:
    """The thread whose model made ``output``'s calls, which their idempotency keys derive
    from: the thread of the engine that recorded it (its author). A fork copies its source's
    entries with their authors, so a call made before the fork point keeps its source's key in
    the fork, and a call made after it gets the fork's own. An entry not recorded by an engine
    (rewritten by an edit) counts as made in ``thread_id``, the thread it is in."""
    author = output.author
    return author.name if author.kind == "engine" else thread_id


def _describe(exc: Exception) -> str:
    """One line saying what failed: our errors speak for themselves, others get their type."""
    text = str(exc).strip()
    if isinstance(exc, LivecontextError) and text:
        return text.splitlines()[0]
    return f"{type(exc).__name__}: {text}".rstrip(": ").splitlines()[0]


def observation_cut(thread_id: str, tail: Tail, rendered: Rendered) -> ObservationCut | None:
    """What says that the latest observation (``tail.last``) went cut into ``rendered``, read
    off its spans (nothing is rendered again); ``None`` when it went whole."""
    last = tail.last
    if not isinstance(last, (ModelInputEntry, ToolResultsEntry)):
        return None
    number = id_number(last.id)
    shown = next((span.shown for span in rendered.spans if span.shown is not Shown.RECAP
                  and id_number(span.first) <= number <= id_number(span.last)), None)
    if shown not in (Shown.RECENT, Shown.GIST):
        return None
    level = Level.RECENT if shown is Shown.RECENT else Level.GIST

    def cost(at: Level) -> int:
        results = last.results if isinstance(last, ToolResultsEntry) else ()
        return last.content.at(at).tokens + sum(r.content.at(at).tokens for r in results)

    whole, sent = cost(Level.LIVE), cost(level)
    if sent >= whole:  # (only the windows were left out: the observation itself went whole)
        return None
    what = "input" if isinstance(last, ModelInputEntry) else "tool results"
    return ObservationCut(thread_id, tail.model_outputs, last.id, what, whole, sent)

"""The engine actor: the agent's state machine (seed note 002, DESIGN.md "The engine").

The engine keeps no state of its own beyond what the history holds: every step starts by
asking the history store for the tail, derives the state from it, and does that state's one
piece of work. Steps run in a background task owned by the engine (so control messages are
handled while a model call or tool runs); the mailbox takes ``Pause``, ``Resume``, ``Step``,
``RunUntilIdle`` and ``Cancel``.
"""

from __future__ import annotations

import collections
from typing import Any

import trio
from attrs import define, frozen

from livecontext.protocol import (
    ActorId,
    AfterModelCall,
    AfterToolExecute,
    AppendInput,
    AppendOutput,
    AppendToolResults,
    ApplyEffect,
    BeforeModelCall,
    BeforeToolExecute,
    Cancel,
    CancelTool,
    EngineState,
    FoldNow,
    GetTail,
    GetWindows,
    Idle,
    InputAvailable,
    InputText,
    InvokeTool,
    LimitLevel,
    ListTools,
    Message,
    ModelOutputEntry,
    ModelReply,
    ModelRequest,
    ModelTextDelta,
    Pause,
    PullInput,
    RecordToolResult,
    RecordToolStarted,
    Render,
    Rendered,
    Resume,
    RunUntilIdle,
    StateTransition,
    Step,
    StepDone,
    Tail,
    ToolCall,
    ToolInvoked,
    ToolResult,
    Tools,
    ToolStatus,
    Topic,
    WaitingInput,
    Windows,
)
from livecontext.runtime import Actor, LivecontextError, ModelError, handler
from livecontext.runtime.models import ModelClient
from livecontext.runtime.tokens import TokenCounter

INTERRUPTED_TEXT = (
    "interrupted: the tool started but its outcome was never recorded (the process stopped "
    "or the call was cancelled); check its effect before calling it again"
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
    recap: ActorId | None = None
    """The recap maintainer, asked to fold at the truncate threshold (if there is one)."""


@frozen
class StepOutcome:
    """What one step did."""

    from_state: EngineState
    to_state: EngineState
    progressed: bool
    waiting_for_input: bool = False
    error: str = ""


@define
class _Job:
    kind: str  # "step" or "idle"
    reply: Any
    max_steps: int | None = None
    steps: int = 0


class Engine(Actor):
    """Runs one agent thread's state machine; see the module docstring."""

    def __init__(self, thread_id: str, model: ModelClient, wiring: EngineWiring,
                 counter: TokenCounter, *, budget: int = 8000, auto: bool = False,
                 tool_timeout_s: float = 300.0) -> None:
        self.thread_id = thread_id
        self.model = model
        self.wiring = wiring
        self.counter = counter
        self.budget = budget
        self.auto = auto
        self.tool_timeout_s = tool_timeout_s
        self.topic = engine_topic(thread_id)
        self._jobs: collections.deque[_Job] = collections.deque()
        self._wake = trio.Event()
        self._step_scope: trio.CancelScope | None = None
        self._step_done = trio.Event()
        self._step_done.set()
        self._tool_in_flight: str | None = None
        self._deltas_send, self._deltas_receive = trio.open_memory_channel[str](1024)

    async def on_start(self) -> None:
        self.ctx.nursery.start_soon(self._runner)
        self.ctx.nursery.start_soon(self._forward_deltas)

    # -- control ---------------------------------------------------------------------------------

    def _poke(self) -> None:
        self._wake.set()

    @handler
    async def on_pause(self, msg: Pause) -> None:
        self.auto = False

    @handler
    async def on_resume(self, msg: Resume) -> None:
        self.auto = True
        self._poke()

    @handler
    async def on_input_available(self, msg: InputAvailable) -> None:
        self._poke()

    @handler
    async def on_step(self, msg: Step) -> StepDone | None:
        self._jobs.append(_Job("step", self.ctx.defer_reply()))
        self._poke()
        return None

    @handler
    async def on_run_until_idle(self, msg: RunUntilIdle) -> Idle | None:
        self._jobs.append(_Job("idle", self.ctx.defer_reply(), msg.max_steps))
        self._poke()
        return None

    @handler
    async def on_cancel(self, msg: Cancel) -> None:
        """Cancel the step in flight and pause; reply once nothing of it runs any more."""
        self.auto = False
        if self._step_scope is not None:
            self._step_scope.cancel()
        await self._step_done.wait()
        tail = await self._tail()
        while self._jobs:
            job = self._jobs.popleft()
            self._answer(job, tail.state, tail.state, "cancelled", progressed=False)

    # -- the runner -------------------------------------------------------------------------------

    async def _runner(self) -> None:
        while True:
            if not self._jobs and not self.auto:
                self._wake = trio.Event()
                await self._wake.wait()
                continue
            job = self._jobs[0] if self._jobs else None
            outcome = await self._guarded_step()
            if job is None:  # free running
                if outcome.waiting_for_input or outcome.error:
                    self._wake = trio.Event()
                    await self._wake.wait()
                continue
            if job.kind == "step":
                self._finish(job, outcome, "step")
                continue
            job.steps += 1 if outcome.progressed else 0
            if outcome.waiting_for_input:
                self._finish(job, outcome, "no_input")
            elif outcome.error:
                self._finish(job, outcome, f"failed: {outcome.error}")
            elif job.max_steps is not None and job.steps >= job.max_steps:
                self._finish(job, outcome, "max_steps")

    def _finish(self, job: _Job, outcome: StepOutcome, reason: str) -> None:
        if self._jobs and self._jobs[0] is job:
            self._jobs.popleft()
        self._answer(job, outcome.from_state, outcome.to_state, reason, outcome.progressed, outcome.error)

    @staticmethod
    def _answer(job: _Job, from_state: EngineState, to_state: EngineState, reason: str,
                progressed: bool, error: str = "") -> None:
        if job.reply is None:
            return
        if job.kind == "step":
            job.reply.send(StepDone(from_state, to_state, progressed, error))
        else:
            job.reply.send(Idle(to_state, job.steps, reason))

    async def _guarded_step(self) -> StepOutcome:
        self._step_done = trio.Event()
        try:
            with trio.CancelScope() as scope:
                self._step_scope = scope
                return await self.do_step()
            tail = await self._tail()
            if self._tool_in_flight is not None:
                await self.ctx.ask(self.wiring.apps, CancelTool(self._tool_in_flight))
            return StepOutcome(tail.state, tail.state, False, error="cancelled")
        finally:
            self._tool_in_flight = None
            self._step_scope = None
            self._step_done.set()

    # -- one step ---------------------------------------------------------------------------------

    async def _tail(self) -> Tail:
        tail = await self.ctx.ask(self.wiring.history, GetTail())
        assert isinstance(tail, Tail)
        return tail

    async def _ask(self, to: ActorId, msg: Message, expected: type[Any], timeout: float = 60.0) -> Any:
        reply = await self.ctx.ask(to, msg, timeout=timeout)
        if not isinstance(reply, expected):
            raise LivecontextError(f"{to} answered {type(msg).__name__} with {type(reply).__name__}, expected {expected.__name__}")
        return reply

    async def do_step(self) -> StepOutcome:
        """Do the one piece of work of the current state (see DESIGN.md's table)."""
        tail = await self._tail()
        state = tail.state
        if state is EngineState.WAITING_INPUT:
            after = await self._step_input()
            if after is None:
                return StepOutcome(state, state, False, waiting_for_input=True)
        elif state in (EngineState.PENDING_INPUT, EngineState.PENDING_TOOL_RESULTS):
            try:
                after = await self._step_model(tail)
            except ModelError as exc:
                await self.ctx.publish(self.topic, AfterModelCall(self.thread_id, "", "", 0, str(exc)))
                return StepOutcome(state, state, False, error=str(exc))
        elif state is EngineState.WAITING_TOOL_RESULTS:
            after = await self._step_tool(tail)
        elif state is EngineState.TOOL_RESULTS_READY:
            after = await self._ask(self.wiring.history, AppendToolResults(), Tail)
        else:  # pragma: no cover - exhaustive
            raise AssertionError(state)
        if after.state is not state:
            await self.ctx.publish(self.topic, StateTransition(self.thread_id, state, after.state))
        return StepOutcome(state, after.state, True)

    async def _step_input(self) -> Tail | None:
        await self.ctx.publish(self.topic, WaitingInput(self.thread_id))
        while True:
            got = await self._ask(self.wiring.input, PullInput(), InputText)
            if got.text is None:
                return None
            if got.text.strip():  # blank input is ignored, not recorded
                tail: Tail = await self._ask(self.wiring.history, AppendInput(got.text), Tail)
                return tail

    async def _step_model(self, tail: Tail) -> Tail:
        if tail.limit is LimitLevel.TRUNCATE and self.wiring.recap is not None:
            # the one place the engine waits for the recap maintainer: the context must not overflow
            await self.ctx.ask(self.wiring.recap, FoldNow(), timeout=self.tool_timeout_s)
        windows: Windows = await self._ask(self.wiring.apps, GetWindows(), Windows)
        tools: Tools = await self._ask(self.wiring.apps, ListTools(), Tools)
        rendered: Rendered = await self._ask(self.wiring.history, Render(self.budget, windows.text), Rendered)
        await self.ctx.publish(self.topic, BeforeModelCall(
            self.thread_id, tail.model_outputs, len(rendered.messages), rendered.tokens))
        request = ModelRequest(rendered.messages, tools.specs, tail.model_outputs, self.thread_id)
        reply: ModelReply = await self.model.complete(request, self._on_text)
        after: Tail = await self._ask(self.wiring.history, AppendOutput(
            reply.text, reply.tool_calls, reply.model, reply.usage), Tail)
        entry_id = after.last.id if after.last is not None else ""
        await self.ctx.publish(self.topic, AfterModelCall(
            self.thread_id, entry_id, reply.text, len(reply.tool_calls)))
        return after

    def _on_text(self, text: str) -> None:
        try:
            self._deltas_send.send_nowait(text)
        except trio.WouldBlock:  # a slow listener loses deltas, never the recorded output
            pass

    async def _forward_deltas(self) -> None:
        async for text in self._deltas_receive:
            await self.ctx.publish(self.topic, ModelTextDelta(self.thread_id, text))

    async def _step_tool(self, tail: Tail) -> Tail:
        last = tail.last
        assert isinstance(last, ModelOutputEntry)
        call = last.tool_calls[len(tail.recorded)]
        tools: Tools = await self._ask(self.wiring.apps, ListTools(), Tools)
        spec = next((s for s in tools.specs if s.name == call.name), None)
        idempotent = spec is None or spec.idempotent  # an unknown tool has no effect to repeat
        if call.id in tail.started and not idempotent:
            result = self._interrupted(call)
            after: Tail = await self._ask(self.wiring.history, RecordToolResult(result), Tail)
            await self.ctx.publish(self.topic, AfterToolExecute(
                self.thread_id, call.id, call.name, result.status, result.content.gist.text))
            return after
        if not idempotent:
            await self.ctx.ask(self.wiring.history, RecordToolStarted(call.id, call.name))
        await self.ctx.publish(self.topic, BeforeToolExecute(self.thread_id, call.id, call.name, call.arguments))
        self._tool_in_flight = call.id
        invoked: ToolInvoked = await self._ask(self.wiring.apps, InvokeTool(call), ToolInvoked,
                                               timeout=self.tool_timeout_s)
        self._tool_in_flight = None
        after = await self._ask(self.wiring.history, RecordToolResult(invoked.result, invoked.effect), Tail)
        if invoked.effect is not None:
            await self.ctx.ask(self.wiring.apps, ApplyEffect(invoked.effect))
        await self.ctx.publish(self.topic, AfterToolExecute(
            self.thread_id, call.id, call.name, invoked.result.status, invoked.result.content.gist.text))
        return after

    def _interrupted(self, call: ToolCall) -> ToolResult:
        return ToolResult(call.id, call.name, ToolStatus.INTERRUPTED,
                          self.counter.content(INTERRUPTED_TEXT, INTERRUPTED_TEXT, "interrupted: outcome unknown"))



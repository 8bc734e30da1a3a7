"""The front door: :func:`open_agent` and the :class:`Agent` it gives (re-exported by
``livecontext``).

One call opens a model, a store, a thread and a runtime with the agent's actors in it (as
``livecontext run`` does), and closes them in order on exit. Every blueprint key has a
keyword; ``blueprint=PATH`` loads one and the keywords given override it. The keywords make
one :class:`AgentSpec` (:func:`agent_spec`), opened by :func:`open_agent_from` as every other
caller opens one. The :class:`Agent`
talks to its actors only through their messages, like any other client of the runtime.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio
from attrs import frozen

from livecontext.protocol.agent import (
    AfterModelCall,
    AfterToolExecute,
    AgentOutput,
    AgentStatus,
    AppEffects,
    BeforeModelCall,
    BeforeToolExecute,
    Cancel,
    GetAppEffects,
    GetStatus,
    GetTail,
    GetWindows,
    Idle,
    InputMode,
    ModelTextDelta,
    ObservationCut,
    Pause,
    ProvideInput,
    Render,
    Rendered,
    Resume,
    RunUntilIdle,
    StateTransition,
    Step,
    StepDone,
    ApprovalsRequested,
    StepInterruptedEvent,
    Tail,
    TaskTerminatedEvent,
    Windows,
)
from livecontext.protocol.context import HistorySlice, ReadHistory
from livecontext.protocol.history import (
    ApprovalRecorded,
    DecideApproval,
    EngineState,
    HistoryEntry,
    ModelOutputEntry,
    Retention,
    TaskStatus,
    ToolCall,
    ToolSpec,
    UsageTotals,
)
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import ThreadConfigured
from livecontext.runtime.models import ModelClient
from livecontext.runtime.persistence import EventStore, ThreadInfo

from livecontext.runtime import RuntimeClock, UsageError, WallClock

from ..agent import (
    Session,
    apps_json,
    check_text,
    check_thread_id,
    decide_approval,
    give_input,
    input_mode,
    json_data,
    shown_state,
    status_json,
    usage_json,
)
from ..analyzers import AnalyzerSettings
from ..apps import App
from ..engine import ApprovalPolicy
from ..mcp import McpLike, mcp_servers
from ..blueprint import NOT_GIVEN, AgentSpec, Blueprint, NotGiven, ToolLike, load_blueprint
from ..history import ContextPolicy, HistoryLimits
from ..recap import RecapSettings
from ..spend import SpendLimits
from ._open import open_agent_from

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

log = logging.getLogger("livecontext")


ApprovalLike = ApprovalPolicy | Callable[[ToolCall, ToolSpec | None], bool] | Iterable[str] | str
"""Which calls need approval: tool names, a function ``(call, spec) -> bool``, or its import path."""

AppLike = App | str
"""An app: an instance, or the import path ``module:Class`` of a class made with no arguments."""

AgentEvent = (ModelTextDelta | BeforeModelCall | ObservationCut | AfterModelCall | BeforeToolExecute | AfterToolExecute
              | AgentOutput | StateTransition | StepInterruptedEvent | TaskTerminatedEvent | ApprovalsRequested)
"""What :meth:`Agent.stream` yields before its :class:`Reply`."""
_STREAMED = (ModelTextDelta, BeforeModelCall, ObservationCut, AfterModelCall, BeforeToolExecute, AfterToolExecute,
             AgentOutput, StateTransition, StepInterruptedEvent, TaskTerminatedEvent, ApprovalsRequested)


@frozen
class Reply:
    """What a run of the agent ended with."""

    text: str
    """The agent's answer: the result it gave ``task_complete``, else the question it gave
    ``wait_user_response``, else the reason it gave ``task_abandon`` (or the terminating
    input's text), else its last model output's text (empty if the run recorded none)."""
    state: EngineState
    """Where the thread stands: ``WAITING_INPUT`` once it has answered."""
    steps: int
    """Steps the run took."""
    reason: str
    """Why it stopped: ``no_input``, ``max_steps``, ``cancelled``, ``paused`` (``paused: spend
    limit: ...`` when a spend limit stopped it before a model call), ``waiting_approval:
    approval of pay call c1`` (a tool call waits for a person's decision), ``failed: ...`` or
    ``terminated``; ``silent`` for a ``send(..., mode="silent")``, which runs nothing."""
    status: AgentStatus
    """Where the task stands (``active``, ``waiting_user``, ``waiting_parent``,
    ``waiting_internal``, ``waiting_approval``, ``completed``, ``abandoned``, ``terminated``,
    ``paused``, ``failed``), with its result, question, reason or error, or the calls waiting
    for approval (:attr:`AgentStatus.approvals`)."""
    entry_id: str = ""
    """The last model output's entry id (empty if the run recorded none)."""
    usage: UsageTotals = UsageTotals()
    """The thread's model calls so far (every run's, its sub-agents' included), summed:
    input tokens (the cached ones among them), output tokens, calls."""
    cut: tuple[str, ...] = ()
    """One line for each observation the run sent cut to its head and tail because it did not
    fit the context whole (see :class:`~livecontext.protocol.agent.ObservationCut`); empty when
    every one was sent whole."""


@frozen
class AgentState:
    """A thread's state, as ``livecontext state --json`` reports it."""

    thread: str
    state: EngineState
    status: AgentStatus
    """Where the task stands, with its result, question or error."""
    entries: int
    """Entries in the thread's history, every one: those folded into a recap and the recaps
    included (``history()`` gives them)."""
    model_outputs: int
    """Model outputs ever recorded (folded ones included)."""
    apps: Mapping[str, str]
    """Each app's state, as text, by name: the notebook's text; one of your apps'
    :meth:`App.state_text`, or its view if it saves none."""
    usage: UsageTotals = UsageTotals()
    """The thread's model calls (its sub-agents' included), summed: input tokens (the cached
    ones among them), output tokens, calls."""

    def json(self) -> dict[str, Any]:
        """JSON data in the shape ``livecontext state --json`` prints (plus ``thread`` and
        ``model_outputs``): ``json.dumps(state.json())`` never fails."""
        data: dict[str, Any] = json_data({
            "thread": self.thread, "state": self.state, **status_json(self.status), "entries": self.entries,
            "model_outputs": self.model_outputs, "apps": self.apps, "usage": usage_json(self.usage)})
        return data


class Agent:
    """A running agent: one thread of a store, its actors in a runtime of its own.

    Made by :func:`open_agent`; valid inside its ``async with``. One run at a time: a second
    :meth:`send` waits for the first to end, unless it interrupts it, terminates it or is
    silent (``mode=``).
    """

    def __init__(self, session: Session, nursery: trio.Nursery, budget: int, max_steps: int | None,
                 cut_oversized: bool = False, changed: tuple[str, ...] = ()) -> None:
        self._session = session
        self.changed = changed
        """One line for each setting given to :func:`open_agent` (or by its blueprint) that
        differs from what the resumed thread recorded, as it is logged (a warning of the
        ``livecontext`` logger): ``thread lake-trip: budget 4000 -> 8000 (budget=)``; empty
        when nothing changed, and for a new thread."""
        self._cut_oversized = cut_oversized
        self._budget = budget
        self._nursery = nursery
        self._client = session.rt.client(f"front-{session.agent.thread_id}")
        self._lock = trio.Lock()
        self._max_steps = max_steps
        self._running: _Running | None = None
        """The run in progress (under the lock), whose reply an interrupting send returns."""
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError(f"the agent of thread {self.thread} is closed (its async with block has ended): "
                             "open one again with livecontext.open_agent(...)")

    @property
    def thread(self) -> str:
        """The thread id."""
        return self._session.agent.thread_id

    @property
    def store(self) -> EventStore:
        """The store the thread lives in (open while the agent is)."""
        return self._session.store

    async def send(self, text: str, *, pin: bool = False, max_steps: int | None = None,
                   cut_oversized: bool | None = None, mode: InputMode | str = InputMode.QUEUE) -> Reply:
        """Give the agent ``text`` as input and run it until it waits for input again.

        An input too large for the context is sent cut to its head and tail, and
        :attr:`Reply.cut` says so; a pinned one (``pin``, or the thread's task) is refused
        instead, unless ``cut_oversized``: it would be cut in every call.

        ``mode`` says what the input does to a run in progress (docs/input.md):

        - ``"queue"`` (the default): it waits for the run in progress to end, then runs;
        - ``"interrupt"``: given at once, it cuts the run's model call or tool short (recorded,
          with who interrupted) and is taken next; the reply is that of the run that answered
          it (the one in progress, which goes on, else a new one);
        - ``"terminate"``: given at once, it ends the task (``text`` is the reason, not an
          input for the model): the run in progress ends, and the reply's status is
          ``terminated``. Inputs queued before it stay queued for the next task;
        - ``"silent"``: recorded at once as a notification the model reads with its next
          call, and nothing runs: the reply has no steps, the reason ``silent`` and the
          current status.

        Args:
            text: The input.
            pin: Keep it in every context (CRITICAL: never folded).
            max_steps: Stop after this many steps (default: ``open_agent(max_steps=)``).
            cut_oversized: Take a pinned input larger than the room and send it cut to its
                head and tail (default: ``open_agent(cut_oversized=)``).
            mode: ``"queue"``, ``"interrupt"``, ``"terminate"`` or ``"silent"`` (or an
                :class:`~livecontext.protocol.agent.InputMode`).

        Raises:
            InputTooLargeError: the input would be pinned and costs more than the budget
                leaves beside the system prompt and the tools (nothing is recorded).
            UsageError: ``mode`` names no mode.
        """
        self._check_open()
        given = input_mode(mode)
        if given is InputMode.QUEUE:
            async with self._lock:
                await self._provide(text, pin, cut_oversized)
                return await self._run(max_steps)
        running = self._running
        await self._provide(text, pin, cut_oversized, given)  # at once: not behind the run in progress
        if given is InputMode.INTERRUPT:
            async with self._lock:
                reply = await self._run(max_steps)
            # (the run in progress took the input: its reply is the answer, ours ran no step)
            if running is not None and running.reply is not None and reply.steps == 0:
                return running.reply
            return reply
        if given is InputMode.TERMINATE:
            async with self._lock:  # the run in progress ends: terminated
                if running is not None and running.reply is not None and running.reply.reason == "terminated":
                    return running.reply
                return await self._reply_now("terminated")
        return await self._reply_now("silent")  # (a run in progress goes on)

    async def run(self, *, max_steps: int | None = None) -> Reply:
        """Run until the agent waits for input with none left (what was given is used first),
        or for a person's approval of a tool call (:attr:`Reply.status` is then
        ``waiting_approval``, naming the calls: :meth:`approve` or :meth:`deny` each, then run again)."""
        self._check_open()
        async with self._lock:
            return await self._run(max_steps)

    async def stream(self, text: str, *, pin: bool = False, max_steps: int | None = None,
                     cut_oversized: bool | None = None) -> AsyncIterator[AgentEvent | Reply]:
        """Like :meth:`send`, yielding the engine's events as they happen (text deltas, model
        calls, observations sent cut, tool calls, state changes), then the :class:`Reply`.

        Stopping early (``break``) does not stop the run: it goes on in the agent's nursery
        and the next :meth:`send` waits for it.
        """
        self._check_open()
        # unbounded: a run's events are few, and handing one over must not be a checkpoint
        # (an event taken from the subscription is never lost to the cancellation below)
        send, receive = trio.open_memory_channel[AgentEvent | Reply](math.inf)

        async def drive() -> None:
            async with self._lock, send:
                rt = self._session.rt
                async with rt.open_subscription(self._session.agent.events, buffer=1024) as events:
                    async with trio.open_nursery() as nursery:
                        async def forward() -> None:
                            async for env in events:
                                if isinstance(env.payload, _STREAMED):
                                    _offer(send, env.payload)
                        nursery.start_soon(forward)
                        await self._provide(text, pin, cut_oversized)
                        reply = await self._run(max_steps)
                        nursery.cancel_scope.cancel()
                    while True:  # every event was published before the reply
                        try:
                            payload = events.receive_nowait().payload
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                        if isinstance(payload, _STREAMED):
                            _offer(send, payload)
                _offer(send, reply)

        self._nursery.start_soon(drive)
        async with receive:
            async for item in receive:
                yield item

    async def history(self) -> tuple[HistoryEntry, ...]:
        """Every entry of the thread, oldest first: those folded into a recap included (their
        ``folded`` is true) and the recaps themselves."""
        self._check_open()
        entries = await self._client.ask(self._session.agent.history, ReadHistory(include_folded=True))
        assert isinstance(entries, HistorySlice)
        return entries.entries

    async def render(self, budget: int | None = None) -> Rendered:
        """The context the model would be sent now (with the apps' windows), under ``budget``
        (default: the agent's)."""
        self._check_open()
        windows = await self._client.ask(self._session.agent.apps, GetWindows())
        assert isinstance(windows, Windows)
        rendered = await self._client.ask(self._session.agent.history,
                                          Render(budget or self._budget, windows.text))
        assert isinstance(rendered, Rendered)
        return rendered

    async def state(self) -> AgentState:
        """Where the thread stands, and its apps' states."""
        self._check_open()
        tail = await self._client.ask(self._session.agent.history, GetTail())
        effects = await self._client.ask(self._session.agent.history, GetAppEffects())
        status = await self._client.ask(self._session.agent.history, GetStatus())
        assert isinstance(tail, Tail) and isinstance(effects, AppEffects) and isinstance(status, AgentStatus)
        windows = await self._client.ask(self._session.agent.apps, GetWindows())
        assert isinstance(windows, Windows)
        apps = apps_json(effects.apps, self._session.app_names)
        apps.update((w.app, shown_state(w)) for w in windows.apps)  # (the user's apps: as their code says)
        return AgentState(self.thread, tail.state, status, tail.entries, tail.model_outputs,
                          {name: "" if value is None else str(value) for name, value in apps.items()},
                          await self._session.usage(self._client, tail))

    async def pending_approvals(self) -> tuple[ToolCall, ...]:
        """The tool calls waiting for a person's approval, as the model made them (empty
        unless the status is ``waiting_approval``)."""
        self._check_open()
        status = await self._client.ask(self._session.agent.history, GetStatus())
        assert isinstance(status, AgentStatus)
        return status.approvals

    async def approve(self, call_id: str, arguments: str | Mapping[str, Any] | None = None, *,
                      by: str = "user") -> ApprovalRecorded:
        """Approve a call waiting for approval; it runs at the next :meth:`run` (as in the
        OpenAI Agents SDK: approve, then run): ``await agent.approve("c1"); reply = await agent.run()``.

        Calls of one model output are decided one by one, in any order; a run carries them out
        in the output's order and stops again at the first one still undecided.

        Args:
            call_id: The call's id (:meth:`pending_approvals`, or ``Reply.status.approvals``).
            arguments: Edited arguments (a dict, or a JSON object as text) the call runs with
                instead of the model's; its result then tells the model they were edited.
            by: Who approves (recorded in the log with the decision).

        Returns:
            The decision as recorded, and the ids of the calls still waiting.

        Raises:
            HistoryConflictError: no call waits for approval with that id, it is decided
                already, or ``arguments`` is not a JSON object.
        """
        self._check_open()
        text = arguments if arguments is None or isinstance(arguments, str) else json.dumps(dict(arguments))
        return await self._decide(DecideApproval(call_id, True, text, "", by))

    async def deny(self, call_id: str, reason: str = "", *, by: str = "user") -> ApprovalRecorded:
        """Deny a call waiting for approval: it is never run, and its result tells the model
        who denied it and ``reason`` (``denied`` when empty). Then :meth:`run` carries on.

        Raises:
            HistoryConflictError: no call waits for approval with that id, or it is decided already.
        """
        self._check_open()
        return await self._decide(DecideApproval(call_id, False, None, reason, by))

    async def _decide(self, decision: DecideApproval) -> ApprovalRecorded:
        return await decide_approval(self._client, self._session.agent.history, decision)

    async def pause(self) -> None:
        """Stop taking steps on its own after the current one."""
        self._check_open()
        await self._ack(Pause())

    async def resume(self) -> None:
        """Take steps on its own again (as input arrives)."""
        self._check_open()
        await self._ack(Resume())

    async def cancel(self) -> None:
        """Cancel the step in flight (its model call or tool) and pause."""
        self._check_open()
        await self._ack(Cancel())

    async def step(self) -> StepDone:
        """Take exactly one step."""
        self._check_open()
        done = await self._client.ask(self._session.agent.engine, Step(), timeout=None)
        assert isinstance(done, StepDone)
        return done

    async def fork(self, thread: str, *, at: int | None = None) -> ThreadInfo:
        """Copy this thread, up to log record ``at`` (default: all of it), to a new thread of
        the same store; open it with ``open_agent(store=agent.store, thread=...)``."""
        self._check_open()
        seq = await self._session.log.last_seq() if at is None else at
        return await self._session.store.fork(self.thread, seq, check_thread_id(thread))

    async def _provide(self, text: str, pin: bool, cut_oversized: bool | None,
                       mode: InputMode = InputMode.QUEUE) -> None:
        check_text(text, "pinned input" if pin else "input")
        cut = self._cut_oversized if cut_oversized is None else cut_oversized
        given = ProvideInput(text, Retention.CRITICAL if pin else None, cut_oversized=cut, mode=mode)
        await give_input(self._client, self._session.agent.input, given)

    async def _run(self, max_steps: int | None) -> Reply:
        self._running = running = _Running()
        try:
            running.reply = reply = await self._run_once(max_steps)
        finally:
            self._running = None
        return reply

    async def _reply_now(self, reason: str) -> Reply:
        """A reply for a send that ran nothing: the thread as it stands, no steps."""
        tail = await self._client.ask(self._session.agent.history, GetTail())
        status = await self._client.ask(self._session.agent.history, GetStatus())
        assert isinstance(tail, Tail) and isinstance(status, AgentStatus)
        text = status.reason if status.status is TaskStatus.TERMINATED and status.reason is not None else ""
        return Reply(text, tail.state, 0, reason, status, "", await self._session.usage(self._client, tail))

    async def _run_once(self, max_steps: int | None) -> Reply:
        before = await self._client.ask(self._session.agent.history, GetTail())
        assert isinstance(before, Tail)
        idle = await self._client.ask(self._session.agent.engine,
                                      RunUntilIdle(max_steps if max_steps is not None else self._max_steps),
                                      timeout=None)
        assert isinstance(idle, Idle)
        tail = await self._client.ask(self._session.agent.history, GetTail())
        status = await self._client.ask(self._session.agent.history, GetStatus())
        assert isinstance(tail, Tail) and isinstance(status, AgentStatus)
        # (a task ended by a control tool ends with that tool's results: its answer is the status's)
        last = tail.last if isinstance(tail.last, ModelOutputEntry) and tail.model_outputs > before.model_outputs else None
        answer = status.result if status.result is not None else status.question
        if answer is None and status.status in (TaskStatus.ABANDONED, TaskStatus.TERMINATED):
            answer = status.reason
        if answer is None:
            answer = last.content.live.text if last is not None else ""
        return Reply(answer, idle.state, idle.steps, idle.reason_text, status, last.id if last is not None else "",
                     await self._session.usage(self._client, tail), tuple(cut.note for cut in idle.cut))

    async def _ack(self, message: Message) -> None:
        await self._client.ask(self._session.agent.engine, message, timeout=None)  # (done when answered)


class _Running:
    """A run in progress, and its reply once it ended."""

    def __init__(self) -> None:
        self.reply: Reply | None = None


def _offer(send: trio.MemorySendChannel[AgentEvent | Reply], item: AgentEvent | Reply) -> None:
    try:
        send.send_nowait(item)
    except trio.BrokenResourceError:
        pass  # the reader stopped early: the run goes on without it


@asynccontextmanager
async def open_agent(
    *,
    model: str | ModelClient | None = None,
    tools: Sequence[ToolLike] = (),
    apps: Sequence[AppLike] | None = None,
    mcp: Sequence[McpLike] = (),
    store: str | EventStore | None = None,
    thread: str | None = None,
    system: str | None = None,
    budget: int | None = None,
    limits: HistoryLimits | None | NotGiven = NOT_GIVEN,
    context: ContextPolicy | None = None,
    recap: RecapSettings | None | NotGiven = NOT_GIVEN,
    recap_model: str | ModelClient | None = None,
    analyzers: Sequence[AnalyzerSettings] | None = None,
    analyzer_models: Mapping[str, str | ModelClient] | None = None,
    pin_task: bool | None = None,
    lifecycle: bool | None = None,
    pins: Sequence[str] | None = None,
    inputs: Sequence[str] | None = None,
    max_steps: int | None = None,
    snapshot_every: int | None = None,
    spend: SpendLimits | None | NotGiven = NOT_GIVEN,
    cut_oversized: bool = False,
    approval: ApprovalLike | None = None,
    blueprint: str | os.PathLike[str] | Blueprint | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    tracer_provider: TracerProvider | None = None,
    spec: AgentSpec | None = None,
    clock: RuntimeClock = WallClock(),
) -> AsyncIterator[Agent]:
    """Open an agent: its model, store, thread and actors; close them in order on exit.

    ``async with livecontext.open_agent(model="echo", tools=[add]) as agent:
    reply = await agent.send("hello")``

    An existing thread is resumed as it ran: a setting not given (``budget``, ``context``,
    ``limits``, ``recap``, ``analyzers``, ``spend``, ``pin_task``, ``lifecycle``; the model
    and apps likewise) is the one it recorded, not the default. One given (or given by the
    blueprint) that differs from the recorded one is used, logged as a warning of the
    ``livecontext`` logger, and listed in :attr:`Agent.changed`.

    Args:
        model: A model spec (``echo``, ``scripted:PATH``, ``openai:MODEL``) or an open
            :class:`ModelClient`. Default: the blueprint's, else the one a resumed thread
            recorded, else ``echo``.
        tools: Functions (or their import paths) offered as tools (see :func:`tool`).
        apps: Apps (instances or import paths). Default (with no ``tools`` and no ``mcp``):
            the blueprint's, else the ones a resumed thread recorded, else a Memory Notebook.
        mcp: MCP servers whose tools are offered (``livecontext.McpServer(name, command=[...])``,
            ``McpServer(name, url=...)``, or mappings of its keys), each one app ``mcp.NAME``
            beside the apps; added to the blueprint's. A resumed thread recorded its servers:
            they need not be given again (docs/mcp.md).
        store: A store URL (``memory:``, ``sqlite:PATH``, ``jsonl:DIR``, ``postgresql://...``)
            or an open :class:`EventStore`. Default: the blueprint's, else ``memory:`` (nothing
            written to disk).
        thread: The thread id; an existing thread is resumed. Default ``main``.
        system: The system prompt (``None``: a resumed thread keeps its own).
        budget: Token budget of each model call's context (default 8000).
        limits: Limits of the unfolded history (``None``: none given, derived from the
            budget when a recap runs, the default).
        context: How each call's context is rendered (default: the ``stable`` policy, a
            prefix the provider caches; ``ContextPolicy("fill")`` for a model without a cache).
        recap: Run a recap maintainer with these settings (``None``: no recap, the default).
        recap_model: The recap's model (``model_summary``), a spec or a client.
        analyzers: Analyzers run beside the engine.
        analyzer_models: Each ``model`` analyzer's model, by analyzer name.
        pin_task: Pin the thread's first input (default ``True``).
        lifecycle: Offer the control tools ``task_complete``, ``task_abandon``, ``output``
            and ``wait_user_response`` (default ``True``).
        pins: Pinned inputs fed when the agent opens (before ``inputs``).
        inputs: Inputs fed when the agent opens (run them with :meth:`Agent.run`).
        max_steps: Default step limit of each run.
        snapshot_every: Snapshot the thread every this many log records.
        spend: Spend limits: the engine stops (status ``paused``, with the reason) before a
            model call that would pass one; reopening with higher limits resumes (``None``:
            no limits). Default: the blueprint's ``[spend]``, else none.
        cut_oversized: Take a pinned input (``pins``, the task, ``send(pin=True)``) larger
            than the room a model call has for it, and send it cut to its head and tail,
            rather than refuse it with :class:`InputTooLargeError`.
        approval: Which tool calls wait for a person's approval before they run, besides
            those whose tool requires it (``@tool(approval=True)``): a list of tool names, a
            function ``(call, spec) -> bool`` (True: needs approval), or its import path
            ``"module:function"`` (kept by a resumed thread, as the names are). Default: the
            blueprint's, else the one a resumed thread recorded, else none. A run that reaches
            such a call stops with status ``waiting_approval``: decide with
            :meth:`Agent.approve` or :meth:`Agent.deny`, then :meth:`Agent.run`.
        blueprint: A blueprint file (or a loaded :class:`Blueprint`); keywords override it.
        base_url: OpenAI-compatible server for ``openai:`` specs.
        api_key: Its API key (default ``$OPENAI_API_KEY``).
        tracer_provider: Trace the agent with this OpenTelemetry provider (by default it is
            traced only if ``OTEL_TRACES_EXPORTER`` asks for it: see README, "OpenTelemetry").
        spec: The agent's settings as one :class:`AgentSpec` (in place of a blueprint);
            keywords override it.
        clock: Where the agent reads the time of day it stamps on its records: the
            machine's clock (the default), or a :class:`~livecontext.runtime.VirtualClock`,
            with which a run under ``trio.testing.MockClock`` stamps virtual times and
            replays byte for byte (docs/testing.md, "Virtual time"). Model latency, tool
            delays and timeouts always follow the Trio run's clock.

    Raises:
        UsageError: a value is not usable (the message says which and what to do).
        SpendLimitsError: ``spend`` sets a ``max_cost`` and no price is known for the model.
        InputTooLargeError: a pinned input given (``pins``, or the task in ``inputs``) is
            larger than the room, and ``cut_oversized`` is not set.
        BlueprintError: the blueprint file is not valid.
        ToolDefinitionError: a tool cannot be described.
        AppDefinitionError: an app path names no App class.
        McpServerError: an MCP server is not given right or cannot be started (one line).
    """
    bp = _blueprint(blueprint)
    if bp is not None and spec is not None:
        raise UsageError("open_agent takes a blueprint or a spec, not both: give one")
    base = AgentSpec.from_blueprint(bp) if bp is not None else (spec if spec is not None else AgentSpec())
    made = agent_spec(base, model=model, tools=tools, apps=apps, mcp=mcp, store=store, thread=thread, system=system,
                      budget=budget, limits=limits, context=context, recap=recap, recap_model=recap_model,
                      analyzers=analyzers, analyzer_models=analyzer_models, pin_task=pin_task, lifecycle=lifecycle,
                      pins=pins, inputs=inputs, max_steps=max_steps, snapshot_every=snapshot_every, spend=spend,
                      cut_oversized=cut_oversized, approval=approval)
    async with AsyncExitStack() as stack:
        opened = await stack.enter_async_context(
            open_agent_from(made, base_url=base_url, api_key=api_key, tracer_provider=tracer_provider,
                            clock=clock))
        for line in opened.changed:
            log.warning("%s", line)
        nursery = await stack.enter_async_context(trio.open_nursery())
        agent = Agent(opened.session, nursery, opened.settings.budget, made.max_steps, made.cut_oversized,
                      opened.changed)
        try:
            yield agent
        finally:
            agent._closed = True
        nursery.cancel_scope.cancel()


def agent_spec(
    base: AgentSpec, *, model: str | ModelClient | None = None, tools: Sequence[ToolLike] = (),
    apps: Sequence[AppLike] | None = None, mcp: Sequence[McpLike] = (), store: str | EventStore | None = None, thread: str | None = None,
    system: str | None = None, budget: int | None = None, limits: HistoryLimits | None | NotGiven = NOT_GIVEN,
    context: ContextPolicy | None = None, recap: RecapSettings | None | NotGiven = NOT_GIVEN,
    recap_model: str | ModelClient | None = None, analyzers: Sequence[AnalyzerSettings] | None = None,
    analyzer_models: Mapping[str, str | ModelClient] | None = None, pin_task: bool | None = None,
    lifecycle: bool | None = None, pins: Sequence[str] | None = None, inputs: Sequence[str] | None = None,
    max_steps: int | None = None, snapshot_every: int | None = None,
    spend: SpendLimits | None | NotGiven = NOT_GIVEN, cut_oversized: bool = False,
    approval: ApprovalLike | None = None,
) -> AgentSpec:
    """``base`` with :func:`open_agent`'s keywords given in place of its values (``None``, or
    :data:`NOT_GIVEN` where ``None`` means "none", keeps ``base``'s). Each setting given is said
    ``NAME=`` if it changes what a resumed thread recorded. ``tools`` are added to ``base``'s,
    unless ``apps`` replaces its apps (and with them its tools).

    Raises:
        UsageError: a value is not usable (the message names it).
    """
    kept: dict[str, object] = {"thread": thread, "system_prompt": system, "budget": budget, "context": context,
                               "pin_task": pin_task, "lifecycle": lifecycle, "max_steps": max_steps,
                               "snapshot_every": snapshot_every, "model": model, "recap_model": recap_model,
                               "store": store, "approval": approval}
    given: dict[str, Any] = {name: value for name, value in kept.items() if value is not None}
    given.update({name: value for name, value in (("limits", limits), ("recap", recap), ("spend", spend))
                  if value is not NOT_GIVEN})
    if analyzers is not None:
        given["analyzers"] = tuple(analyzers)
    if analyzer_models:
        given["analyzer_models"] = {**base.analyzer_models, **analyzer_models}
    if pins is not None:
        given["pins"] = tuple(pins)
    if inputs is not None:
        given["inputs"] = tuple(inputs)
    if apps is not None:
        given["apps"], given["tools"] = tuple(apps), tuple(tools)
    elif tools:
        given["tools"] = (*base.tools, *tools)
    if mcp:
        given["mcp"] = (*base.mcp, *mcp_servers(mcp))
    if cut_oversized:
        given["cut_oversized"] = True
    return base.given(**given)

def _blueprint(given: str | os.PathLike[str] | Blueprint | None) -> Blueprint | None:
    if given is None or isinstance(given, Blueprint):
        return given
    return load_blueprint(given)

"""The front door: :func:`open_agent` and the :class:`Agent` it gives (re-exported by
``livecontext``).

One call opens a model, a store, a thread and a runtime with the agent's actors in it (as
``livecontext run`` does), and closes them in order on exit. Every blueprint key has a
keyword; ``blueprint=PATH`` loads one and the keywords given override it. The :class:`Agent`
talks to its actors only through their messages, like any other client of the runtime.
"""

from __future__ import annotations

import enum
import logging
import math
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import attrs
import trio
from attrs import frozen

from livecontext.protocol.agent import (
    AfterModelCall,
    AfterToolExecute,
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
    Tail,
    Windows,
)
from livecontext.protocol.context import HistorySlice, ReadHistory
from livecontext.protocol.history import EngineState, HistoryEntry, ModelOutputEntry, Retention, UsageTotals
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import ThreadConfigured
from livecontext.runtime.models import ModelClient
from livecontext.runtime.persistence import EventStore, ThreadInfo

from ..agent import (
    SETTINGS,
    AgentSettings,
    Session,
    apps_json,
    check_text,
    check_thread_id,
    give_input,
    json_data,
    make_recorded_app,
    open_session,
    recorded_config,
    recorded_models,
    resume,
    shown_state,
    status_json,
    usage_json,
)
from ..analyzers import AnalyzerSettings
from ..apps import App, FunctionTools, Notebook
from ..blueprint import AppUse, Blueprint, load_blueprint, open_blueprint_models
from ..history import ContextPolicy, HistoryLimits
from ..recap import RecapSettings
from ..spend import SpendLimits

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

log = logging.getLogger("livecontext")


class _Given(enum.Enum):
    NOT_GIVEN = "not given"


NOT_GIVEN: Literal[_Given.NOT_GIVEN] = _Given.NOT_GIVEN
"""The default of :func:`open_agent`'s keywords whose ``None`` means "none" (``recap``,
``limits``, ``spend``): not given, so the blueprint's, else what a resumed thread recorded."""

ToolLike = Callable[..., Any] | str
"""A tool: a function (marked with ``@tool`` or not) or its import path ``module:function``."""
AppLike = App | str
"""An app: an instance, or the import path ``module:Class`` of a class made with no arguments."""

AgentEvent = (ModelTextDelta | BeforeModelCall | ObservationCut | AfterModelCall | BeforeToolExecute | AfterToolExecute
              | StateTransition)
"""What :meth:`Agent.stream` yields before its :class:`Reply`."""
_STREAMED = (ModelTextDelta, BeforeModelCall, ObservationCut, AfterModelCall, BeforeToolExecute, AfterToolExecute,
             StateTransition)


@frozen
class Reply:
    """What a run of the agent ended with."""

    text: str
    """The agent's answer: the result it gave ``task_complete``, else the question it gave
    ``wait_user_response``, else its last model output's text (empty if the run recorded none)."""
    state: EngineState
    """Where the thread stands: ``WAITING_INPUT`` once it has answered."""
    steps: int
    """Steps the run took."""
    reason: str
    """Why it stopped: ``no_input``, ``max_steps``, ``cancelled``, ``paused`` (``paused: spend
    limit: ...`` when a spend limit stopped it before a model call) or ``failed: ...``."""
    status: AgentStatus
    """Where the task stands (``active``, ``waiting_user``, ``completed``, ``paused``,
    ``failed``), with its result, question or error."""
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
    :meth:`send` waits for the first to end.
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

    @property
    def thread(self) -> str:
        """The thread id."""
        return self._session.agent.thread_id

    @property
    def store(self) -> EventStore:
        """The store the thread lives in (open while the agent is)."""
        return self._session.store

    async def send(self, text: str, *, pin: bool = False, max_steps: int | None = None,
                   cut_oversized: bool | None = None) -> Reply:
        """Give the agent ``text`` as input and run it until it waits for input again.

        An input too large for the context is sent cut to its head and tail, and
        :attr:`Reply.cut` says so; a pinned one (``pin``, or the thread's task) is refused
        instead, unless ``cut_oversized``: it would be cut in every call.

        Args:
            text: The input.
            pin: Keep it in every context (CRITICAL: never folded).
            max_steps: Stop after this many steps (default: ``open_agent(max_steps=)``).
            cut_oversized: Take a pinned input larger than the room and send it cut to its
                head and tail (default: ``open_agent(cut_oversized=)``).

        Raises:
            InputTooLargeError: the input would be pinned and costs more than the budget
                leaves beside the system prompt and the tools (nothing is recorded).
        """
        async with self._lock:
            await self._provide(text, pin, cut_oversized)
            return await self._run(max_steps)

    async def run(self, *, max_steps: int | None = None) -> Reply:
        """Run until the agent waits for input with none left (what was given is used first)."""
        async with self._lock:
            return await self._run(max_steps)

    async def stream(self, text: str, *, pin: bool = False, max_steps: int | None = None,
                     cut_oversized: bool | None = None) -> AsyncIterator[AgentEvent | Reply]:
        """Like :meth:`send`, yielding the engine's events as they happen (text deltas, model
        calls, observations sent cut, tool calls, state changes), then the :class:`Reply`.

        Stopping early (``break``) does not stop the run: it goes on in the agent's nursery
        and the next :meth:`send` waits for it.
        """
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
        entries = await self._client.ask(self._session.agent.history, ReadHistory(include_folded=True))
        assert isinstance(entries, HistorySlice)
        return entries.entries

    async def render(self, budget: int | None = None) -> Rendered:
        """The context the model would be sent now (with the apps' windows), under ``budget``
        (default: the agent's)."""
        windows = await self._client.ask(self._session.agent.apps, GetWindows())
        assert isinstance(windows, Windows)
        rendered = await self._client.ask(self._session.agent.history,
                                          Render(budget or self._budget, windows.text))
        assert isinstance(rendered, Rendered)
        return rendered

    async def state(self) -> AgentState:
        """Where the thread stands, and its apps' states."""
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

    async def pause(self) -> None:
        """Stop taking steps on its own after the current one."""
        await self._ack(Pause())

    async def resume(self) -> None:
        """Take steps on its own again (as input arrives)."""
        await self._ack(Resume())

    async def cancel(self) -> None:
        """Cancel the step in flight (its model call or tool) and pause."""
        await self._ack(Cancel())

    async def step(self) -> StepDone:
        """Take exactly one step."""
        done = await self._client.ask(self._session.agent.engine, Step(), timeout=None)
        assert isinstance(done, StepDone)
        return done

    async def fork(self, thread: str, *, at: int | None = None) -> ThreadInfo:
        """Copy this thread, up to log record ``at`` (default: all of it), to a new thread of
        the same store; open it with ``open_agent(store=agent.store, thread=...)``."""
        seq = await self._session.log.last_seq() if at is None else at
        return await self._session.store.fork(self.thread, seq, check_thread_id(thread))

    async def _provide(self, text: str, pin: bool, cut_oversized: bool | None) -> None:
        check_text(text, "pinned input" if pin else "input")
        cut = self._cut_oversized if cut_oversized is None else cut_oversized
        given = ProvideInput(text, Retention.CRITICAL if pin else None, cut_oversized=cut)
        await give_input(self._client, self._session.agent.input, given)

    async def _run(self, max_steps: int | None) -> Reply:
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
        if answer is None:
            answer = last.content.live.text if last is not None else ""
        return Reply(answer, idle.state, idle.steps, idle.reason_text, status, last.id if last is not None else "",
                     await self._session.usage(self._client, tail), tuple(cut.note for cut in idle.cut))

    async def _ack(self, message: Message) -> None:
        await self._client.ask(self._session.agent.engine, message, timeout=None)  # (done when answered)


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
    store: str | EventStore | None = None,
    thread: str | None = None,
    system: str | None = None,
    budget: int | None = None,
    limits: HistoryLimits | None | Literal[_Given.NOT_GIVEN] = NOT_GIVEN,
    context: ContextPolicy | None = None,
    recap: RecapSettings | None | Literal[_Given.NOT_GIVEN] = NOT_GIVEN,
    recap_model: str | ModelClient | None = None,
    analyzers: Sequence[AnalyzerSettings] | None = None,
    analyzer_models: Mapping[str, str | ModelClient] | None = None,
    pin_task: bool | None = None,
    lifecycle: bool | None = None,
    pins: Sequence[str] | None = None,
    inputs: Sequence[str] | None = None,
    max_steps: int | None = None,
    snapshot_every: int | None = None,
    spend: SpendLimits | None | Literal[_Given.NOT_GIVEN] = NOT_GIVEN,
    cut_oversized: bool = False,
    blueprint: str | os.PathLike[str] | Blueprint | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    tracer_provider: TracerProvider | None = None,
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
        apps: Apps (instances or import paths). Default (with no ``tools``): the
            blueprint's, else the ones a resumed thread recorded, else a Memory Notebook.
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
        lifecycle: Offer the control tools ``task_complete`` and ``wait_user_response``
            (default ``True``).
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
        blueprint: A blueprint file (or a loaded :class:`Blueprint`); keywords override it.
        base_url: OpenAI-compatible server for ``openai:`` specs.
        api_key: Its API key (default ``$OPENAI_API_KEY``).
        tracer_provider: Trace the agent with this OpenTelemetry provider (by default it is
            traced only if ``OTEL_TRACES_EXPORTER`` asks for it: see README, "OpenTelemetry").

    Raises:
        UsageError: a value is not usable (the message says which and what to do).
        SpendLimitsError: ``spend`` sets a ``max_cost`` and no price is known for the model.
        InputTooLargeError: a pinned input given (``pins``, or the task in ``inputs``) is
            larger than the room, and ``cut_oversized`` is not set.
        BlueprintError: the blueprint file is not valid.
        ToolDefinitionError: a tool cannot be described.
        AppDefinitionError: an app path names no App class.
    """
    bp = _blueprint(blueprint)
    # the keys a blueprint's override takes (and checks) go through it; the rest are settings
    given = (bp or Blueprint(path="<open_agent>", settings=AgentSettings())).override(
        thread=thread, system_prompt=system, budget=budget, max_steps=max_steps, inputs=inputs,
        pins=pins, pin_task=pin_task)
    kept = given.settings
    settings = attrs.evolve(
        kept, limits=kept.limits if limits is NOT_GIVEN else limits,
        recap=kept.recap if recap is NOT_GIVEN else recap,
        context=kept.context if context is None else context,
        analyzers=kept.analyzers if analyzers is None else tuple(analyzers),
        lifecycle=kept.lifecycle if lifecycle is None else lifecycle,
        snapshot_every=kept.snapshot_every if snapshot_every is None else snapshot_every,
        spend=kept.spend if spend is NOT_GIVEN else spend)
    store_given: str | EventStore = store if store is not None else (given.store or "memory:")
    recorded = await recorded_config(store_given, settings.thread_id)  # resumed as it was
    typed = {"budget": budget is not None, "context": context is not None, "analyzers": analyzers is not None,
             "pin_task": pin_task is not None, "lifecycle": lifecycle is not None, "limits": limits is not NOT_GIVEN,
             "recap": recap is not NOT_GIVEN, "spend": spend is not NOT_GIVEN}
    labels = {name: f"blueprint {bp.path}" for name in SETTINGS} if bp is not None else {}
    labels.update({name: f"{name}=" for name, was_given in typed.items() if was_given})
    settings, changed = resume(recorded, settings, labels)
    for line in changed:
        log.warning("%s", line)
    if bp is None and recorded is not None and apps is None and not tools and recorded.apps:
        app_list = [make_recorded_app(settings.thread_id, info) for info in recorded.apps]
    else:
        app_list = _apps(apps, bp) + ([FunctionTools(tools)] if tools else [])
    model_spec = model if isinstance(model, str) else (
        bp.model if bp is not None else (recorded.model if recorded is not None and recorded.model else "echo"))
    async with AsyncExitStack() as stack:
        side_specs = _side_models(bp, recap_model, analyzer_models, recorded if bp is None else None, settings)
        side = await stack.enter_async_context(open_blueprint_models(side_specs, base_url=base_url, api_key=api_key))
        recap_client = recap_model if isinstance(recap_model, ModelClient) else side.recap
        analyzer_clients = {**side.analyzers,
                            **{k: v for k, v in (analyzer_models or {}).items() if isinstance(v, ModelClient)}}
        session = await stack.enter_async_context(open_session(
            store_given, settings, model_spec,
            inputs=given.inputs, pins=given.pins, cut_oversized=cut_oversized,
            base_url=base_url, api_key=api_key, apps=app_list,
            model=model if isinstance(model, ModelClient) else None,
            recap_model=recap_client, analyzer_models=analyzer_clients, tracer_provider=tracer_provider,
            side_specs=(side_specs.recap_model or "", dict(side_specs.analyzer_models))))
        nursery = await stack.enter_async_context(trio.open_nursery())
        yield Agent(session, nursery, settings.budget, given.max_steps, cut_oversized, changed)
        nursery.cancel_scope.cancel()


def _blueprint(given: str | os.PathLike[str] | Blueprint | None) -> Blueprint | None:
    if given is None or isinstance(given, Blueprint):
        return given
    return load_blueprint(given)


def _side_models(bp: Blueprint | None, recap_model: str | ModelClient | None,
                 analyzer_models: Mapping[str, str | ModelClient] | None,
                 recorded: ThreadConfigured | None, settings: AgentSettings) -> Blueprint:
    """What :func:`open_blueprint_models` should open: the side models named by spec (the
    blueprint's, else the ones the resumed thread ``recorded`` for the recap and analyzers
    it runs with, or the ones given in their place); clients given are used as they are."""
    recorded_recap, recorded_analyzers = recorded_models(recorded)
    recap_spec = bp.recap_model if bp is not None else (recorded_recap if settings.recap is not None else None)
    if recap_model is not None:
        recap_spec = recap_model if isinstance(recap_model, str) else None
    names = {a.name for a in settings.analyzers}
    specs = dict(bp.analyzer_models) if bp is not None else {
        name: spec for name, spec in recorded_analyzers.items() if name in names}
    for name, given in (analyzer_models or {}).items():
        specs.pop(name, None)
        if isinstance(given, str):
            specs[name] = given
    return Blueprint(path="<open_agent>", settings=AgentSettings(), recap_model=recap_spec, analyzer_models=specs)


def _apps(given: Sequence[AppLike] | None, bp: Blueprint | None) -> list[App]:
    if given is None:
        return bp.make_apps() if bp is not None else [Notebook()]
    return [AppUse(a).make() if isinstance(a, str) else a for a in given]

"""Opening a store, a thread, a model and a runtime with one agent in it (for the CLI and
:func:`~livecontext.open_agent`)."""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TextIO

import trio
from attrs import field, frozen

from livecontext.protocol.agent import (
    AgentStatus,
    AppEffects,
    Cancel,
    GetAppEffects,
    GetStatus,
    GetTail,
    Idle,
    InputMode,
    NotificationPosted,
    ProvideInput,
    RunUntilIdle,
    Tail,
)
from livecontext.protocol.context import HistorySlice, HistoryUsage, ReadHistory
from livecontext.protocol.history import EngineState, ModelInputEntry, Retention, UsageTotals
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import EntryAppended, ThreadConfigured
from livecontext.protocol.wire import ProtocolConverter, make_converter
from livecontext.runtime import Context, Runtime, RuntimeClock, UsageError, WallClock, open_runtime
from livecontext.runtime.models import ModelClient, open_model_client
from livecontext.runtime.persistence import EventStore, ThreadLockedError, ThreadLog, open_store
from livecontext.runtime.tokens import TokenCounter

from ._agent import AgentActors, AgentSettings, spawn_agent
from ._existing_store import StoreMissingError, open_existing_store
from ._thread_ids import parent_thread_id
from ._input import give_input
from ._text import check_text
from ._format import apps_json, dump_json_line, entry_json, event_json, status_json, usage_json
from ..apps import App, Notebook
from ..history import load_state
from ..recap import recap_topic
from ..telemetry import open_tracing
from ._usage import OUTPUTS, live_usage

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider


def owner_string(thread_id: str) -> str:
    """Who writes a thread: its history store (the lock also records this process and host)."""
    return f"history/{thread_id}"


class ThreadBusyError(UsageError):
    """Another process (or session) is running the thread: one writer per thread."""

    def __init__(self, thread_id: str, holder: str) -> None:
        self.thread_id = thread_id
        self.holder = holder
        super().__init__(
            f"thread {thread_id!r} is being run by another writer: {holder}; wait for it to "
            f"finish (or stop it) and run again; `livecontext state --thread {thread_id}` "
            "reads it meanwhile"
        )


def _readonly(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@frozen
class SideModels:
    """An agent's models besides its own: the recap's and the analyzers', open, with the specs
    its thread records of them (empty: none, or a client given in Python)."""

    recap: ModelClient | None = None
    """The recap maintainer's model (``model_summary`` only)."""
    analyzers: Mapping[str, ModelClient] = field(factory=dict, converter=_readonly, hash=False)
    """Each ``model`` analyzer's model, by analyzer name."""
    recap_spec: str = ""
    """The recap's model spec, as the thread records it."""
    analyzer_specs: Mapping[str, str] = field(factory=dict, converter=_readonly, hash=False)
    """Each analyzer's model spec, by analyzer name, as the thread records it."""


@frozen
class Session:
    """A running agent and what it runs on."""

    rt: Runtime
    agent: AgentActors
    store: EventStore
    log: ThreadLog
    converter: ProtocolConverter
    resumed_state: EngineState
    """The thread's state when the session opened (``WaitingInput`` for a new thread)."""
    held_inputs: tuple[str, ...] = ()
    """Inputs not fed because the thread was resumed in the middle of a step (see
    :func:`open_session`)."""
    app_names: tuple[str, ...] = ()
    """The agent's apps."""

    async def summary(self) -> dict[str, Any]:
        """The ``run --json`` object: thread, state, status (with its result, question or
        error), entries, apps, usage (its sub-agents' included)."""
        client = self.rt.client(f"summary-{trio.current_time():.6f}")
        entries = await client.ask(self.agent.history, ReadHistory(include_folded=True))
        tail = await client.ask(self.agent.history, GetTail())
        effects = await client.ask(self.agent.history, GetAppEffects())
        status = await client.ask(self.agent.history, GetStatus())
        assert isinstance(entries, HistorySlice) and isinstance(tail, Tail) and isinstance(effects, AppEffects)
        assert isinstance(status, AgentStatus)
        usage = await live_usage(client, self.store, self.converter, self.agent.thread_id, tail.usage, entries.entries)
        return {
            "thread": self.agent.thread_id,
            "state": tail.state.value,
            **status_json(status),
            "entries": [entry_json(e) for e in entries.entries],
            "apps": apps_json(effects.apps, self.app_names),
            "usage": usage_json(usage),
        }

    async def usage(self, client: Context, tail: Tail) -> UsageTotals:
        """The thread's usage (``tail``'s, read by ``client``) plus its sub-agents'."""
        held = await client.ask(self.agent.history, OUTPUTS)
        assert isinstance(held, HistorySlice)
        return await live_usage(client, self.store, self.converter, self.agent.thread_id, tail.usage, held.entries)


@asynccontextmanager
async def open_session(
    store_url: str | EventStore, settings: AgentSettings, model_spec: str, *, inputs: Sequence[str] = (),
    pins: Sequence[str] = (), cut_oversized: bool = False, input_mode: InputMode = InputMode.QUEUE,
    base_url: str | None = None, api_key: str | None = None, auto: bool = False,
    apps: Sequence[App] | None = None, model: ModelClient | None = None,
    on_note: Callable[[str], None] | None = None, side: SideModels = SideModels(),
    tracer_provider: TracerProvider | None = None, clock: RuntimeClock = WallClock(),
) -> AsyncIterator[Session]:
    """Everything needed to run one thread, closed in order on exit.

    The model is opened before the store, so that a bad ``model_spec`` writes nothing.

    ``pins`` (pinned inputs: CRITICAL) then ``inputs`` are fed only if the thread waits for
    input when the session opens (a new
    thread, or one whose last step ended with an answer). A thread stopped in the middle of
    a step (a crash, ``kill -9``, ``--max-steps``) is resumed as it was: its interrupted work
    is finished first, and ``inputs`` are held back (see :attr:`Session.held_inputs`;
    ``on_note`` is told, by default with a note on stderr), because the command re-run to
    resume a thread is usually the one that started it: feeding its input again would do
    that input twice.

    ``input_mode`` is the dispatch mode of ``inputs`` (docs/input.md): ``interrupt`` given to
    a thread stopped in the middle of a step is taken before that step's work is finished;
    ``terminate`` ends its task; ``silent`` is recorded and takes no step.

    A pinned input larger than the room (a pin, or the task when the thread pins it) is
    refused, nothing of it recorded, unless ``cut_oversized`` (see
    :class:`~livecontext.actors.InputTooLargeError`).

    ``side`` holds the recap's and the analyzers' models, and their specs for the thread to
    record.

    The session is traced with ``tracer_provider``, or as the ``OTEL_*`` variables say (see
    :func:`~livecontext.actors.telemetry.open_tracing`).

    ``clock`` is the runtime's (see :func:`~livecontext.runtime.open_runtime`); the model's
    retry jitter is drawn from it too.

    Raises:
        ThreadBusyError: another writer holds the thread.
        InvalidTextError: an input, a pin or the system prompt is not valid UTF-8 (nothing
            is opened or written).
        SpendLimitsError: ``settings.spend`` sets a ``max_cost`` and no price is known for the
            model (nothing is opened or written).
        InputTooLargeError: a pinned input is larger than the room (nothing of it is written).
    """
    for text in pins:
        check_text(text, "pinned input")
    for text in inputs:
        check_text(text, "input")
    if settings.system_prompt is not None:
        check_text(settings.system_prompt, "system prompt")
    if settings.spend is not None:  # (before anything is opened or written)
        settings.spend.check_model(model.name if model is not None else model_spec)
    converter = make_converter()
    counter = TokenCounter.from_env()
    refused: UsageError | None = None
    """An input refused (:class:`InputTooLargeError`): nothing of it was written."""
    async with _model(model, model_spec, base_url, api_key, clock.random(f"retry:{settings.thread_id}")) as client, \
            _store(store_url) as store:
        await _not_an_orphan(store, settings.thread_id)
        try:
            log = await store.open_thread(settings.thread_id, create=True,
                                          owner=owner_string(settings.thread_id))
        except ThreadLockedError as exc:
            raise ThreadBusyError(exc.thread_id, exc.holder) from None
        async with log:
            async with open_runtime(clock=clock) as rt, open_tracing(rt, settings.thread_id,
                                                                    tracer_provider=tracer_provider):
                given = [ProvideInput(text, Retention.CRITICAL, cut_oversized=cut_oversized) for text in pins]
                given += [ProvideInput(text, cut_oversized=cut_oversized, mode=input_mode) for text in inputs]
                try:
                    agent = await spawn_agent(rt, log, client, settings, converter=converter,
                                              counter=counter, apps=apps, auto=auto,
                                              model_spec=_recordable(model_spec) if model is None else "",
                                              recap_model=side.recap, analyzer_models=side.analyzers,
                                              recap_model_spec=_recordable(side.recap_spec),
                                              analyzer_model_specs={name: _recordable(spec)
                                                                    for name, spec in side.analyzer_specs.items()})
                    state, held = await _feed(rt, agent, given)
                except UsageError as exc:  # (raised below, once closed: not inside the runtime's group)
                    refused = exc
                else:
                    if held:
                        (on_note or _note)(
                            f"thread {settings.thread_id} was stopped in the middle of a step "
                            f"({state.value}) after it recorded the input {held[0]!r}; it resumes "
                            "where it stopped, and the inputs given (the same again) are not fed twice")
                    names = tuple(app.name for app in apps) if apps is not None else (Notebook.name,)
                    yield Session(rt, agent, store, log, converter, state, held, names)
    if refused is not None:
        raise refused


@frozen
class Stopped:
    """Where a thread stands after :func:`stop_interrupted`."""

    state: EngineState
    unrecorded: tuple[str, ...]
    """The inputs given that the thread did not record (still queued when it stopped)."""


STOP_GRACE_S = 2.0
"""How long :func:`stop_interrupted` waits for the step in flight to end."""


async def stop_interrupted(session: Session, given: Sequence[str], since_seq: int) -> Stopped:
    """Stop a thread whose run was interrupted: cancel the step in flight (the engine records
    that it paused), then say where the thread stands and which of ``given`` (inputs fed
    after log record ``since_seq``, in order) it did not record.

    An input is recorded once the engine takes it (never half: it is taken and recorded
    under a shield); those still queued when the engine stopped are lost with the session.
    """
    client = session.rt.client(f"stop-{session.agent.thread_id}")
    with trio.move_on_after(STOP_GRACE_S):  # (closing the session cancels whatever is left)
        await client.ask(session.agent.engine, Cancel(), timeout=None)
    tail = await client.ask(session.agent.history, GetTail())
    assert isinstance(tail, Tail)
    recorded = 0
    for record in await session.log.read(since_seq + 1):
        if record.kind == "EntryAppended":
            message = session.converter.load_message(json.loads(record.payload))
            recorded += isinstance(message, EntryAppended) and isinstance(message.entry, ModelInputEntry)
    fed = [text for text in given if text.strip()]  # (blank input is never recorded)
    return Stopped(tail.state, tuple(fed[recorded:]))


def _recordable(spec: str) -> str:
    """The spec as a thread records it: a script's path made absolute, so that the thread
    resumes with it from any folder."""
    kind, sep, rest = spec.partition(":")
    if kind == "scripted" and sep and rest:
        return f"scripted:{os.path.abspath(rest)}"
    return spec


async def _not_an_orphan(store: EventStore, thread_id: str) -> None:
    """Refuse to make a sub-agent's thread (``PARENT/sub/NAME``) its parent never made: it would
    be listed as a sub-agent of a parent that has none (an existing one resumes).

    Raises:
        UsageError: ``thread_id`` is a sub-agent's and the store does not hold it.
    """
    parent = parent_thread_id(thread_id)
    if parent is None or await store.exists(thread_id):
        return
    raise UsageError(f"thread {thread_id} would be a sub-agent of {parent}, which has no such sub-agent: a "
                     f"sub-agent's thread is made by its parent (spawn_subagent); run {parent}, or give a "
                     "thread id without /sub/")


async def recorded_config(store: str | EventStore, thread_id: str) -> ThreadConfigured | None:
    """How an existing thread last ran (model spec, apps, tools, settings), from its log, in
    the store at a URL or an open one; ``None`` for a new thread or one recorded before
    threads said so."""
    if not isinstance(store, str):
        return await _config_in(store, thread_id)
    if store.startswith("memory:"):
        return None  # (a memory store lives and dies with its process: nothing to resume)
    try:
        opened = await open_existing_store(store)  # (finding out creates nothing)
    except StoreMissingError:
        return None
    async with opened:
        return await _config_in(opened, thread_id)


async def _config_in(store: EventStore, thread_id: str) -> ThreadConfigured | None:
    if not await store.exists(thread_id):
        return None
    reader = await store.open_reader(thread_id)
    async with reader:
        state = await load_state(reader, make_converter(), thread_id)
    return state.config


async def thread_exists(store_url: str, thread_id: str) -> bool:
    """Whether the store at ``store_url`` holds ``thread_id`` (finding out creates nothing)."""
    if store_url.startswith("memory:"):
        return False
    try:
        store = await open_existing_store(store_url)
    except StoreMissingError:
        return False
    async with store:
        return await store.exists(thread_id)


def _note(text: str) -> None:
    print(f"livecontext: note: {text}", file=sys.stderr)


async def _feed(rt: Runtime, agent: AgentActors,
                inputs: Sequence[ProvideInput]) -> tuple[EngineState, tuple[str, ...]]:
    """Feed ``inputs``; return the thread's state and what was held back.

    A thread stopped in the middle of a step (a crash, ``--max-steps``) resumes that step
    first; inputs given meanwhile wait their turn, unless the first of them is the input
    the thread recorded last: then the command that stopped is being run again, and feeding
    them would give the agent its input twice (they are held back, and said so)."""
    client = rt.client(f"feed-{agent.thread_id}")
    tail = await client.ask(agent.history, GetTail())
    assert isinstance(tail, Tail)
    if tail.state is not EngineState.WAITING_INPUT and inputs:
        if inputs[0].text == await _last_input(client, agent, tail):
            return tail.state, tuple(given.text for given in inputs)
    for given in inputs:
        await give_input(client, agent.input, given)
    return tail.state, ()


LAST_INPUT_WINDOW = 256
"""How many of the newest entries :func:`_last_input` looks through (a turn is shorter)."""


async def _last_input(client: Context, agent: AgentActors, tail: Tail) -> str | None:
    """The text of the thread's newest input entry among its last :data:`LAST_INPUT_WINDOW`."""
    if isinstance(tail.last, ModelInputEntry):
        return tail.last.text
    got = await client.ask(agent.history, ReadHistory(start=max(tail.entries - LAST_INPUT_WINDOW, 0),
                                                      kinds=("model_input",), include_folded=True))
    assert isinstance(got, HistorySlice)
    texts = [e.text for e in got.entries if isinstance(e, ModelInputEntry) and e.text]
    return texts[-1] if texts else None


@asynccontextmanager
async def _store(given: str | EventStore) -> AsyncIterator[EventStore]:
    """The store named by a URL (closed on exit), or the one given (its owner closes it)."""
    if not isinstance(given, str):
        yield given
        return
    store = await open_store(given)
    async with store:
        yield store


@asynccontextmanager
async def _model(given: ModelClient | None, spec: str, base_url: str | None,
                 api_key: str | None, rng: random.Random) -> AsyncIterator[ModelClient]:
    if given is not None:
        async with given:
            yield given
        return
    async with open_model_client(spec, base_url=base_url, api_key=api_key, rng=rng) as client:
        yield client


class EventsFileError(UsageError):
    """The file given for the engine's events cannot be opened for appending."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        super().__init__(f"--events {path}: cannot write to it ({detail}); give a file in a folder "
                         "that exists and that you can write to")


def open_events_file(path: str) -> TextIO:
    """``path`` opened for appending the engine's events, one JSON object a line; open it
    before the thread, so that a bad path leaves no thread behind.

    Raises:
        EventsFileError: it cannot be opened (a missing folder, no permission, a directory...).
    """
    try:
        return open(path, "a", encoding="utf-8")  # noqa: SIM115  (the caller closes it)
    except OSError as exc:
        raise EventsFileError(path, exc.strerror or str(exc)) from None


async def run_until_idle(session: Session, max_steps: int | None,
                         on_event: Callable[[Message], None] | None = None,
                         events_file: TextIO | None = None) -> Idle:
    """Run the engine until it waits for input with none left (or ``max_steps``); stream events
    to ``on_event``, and as JSON lines to ``events_file`` (see :func:`open_events_file`)."""
    client = session.rt.client("run")

    def handle(event: Message) -> None:
        # synchronous on purpose: a cancelled pump never loses half an event
        if events_file is not None:
            events_file.write(dump_json_line(event_json(session.converter, event)) + "\n")
            events_file.flush()
        if on_event is not None:
            on_event(event)

    async with session.rt.open_subscription(session.agent.events, buffer=1024) as events, \
            session.rt.open_subscription(session.agent.history_events, buffer=1024) as changes, \
            session.rt.open_subscription(recap_topic(session.agent.thread_id), buffer=256) as recap_events:
        async with trio.open_nursery() as nursery:
            async def pump() -> None:
                async for env in events:
                    handle(env.payload)

            async def notes() -> None:
                async for env in changes:
                    if on_event is not None and isinstance(env.payload, (NotificationPosted, HistoryUsage)):
                        on_event(env.payload)

            async def folds() -> None:
                async for env in recap_events:
                    if on_event is not None:
                        on_event(env.payload)

            nursery.start_soon(pump)
            nursery.start_soon(notes)
            nursery.start_soon(folds)
            idle = await client.ask(session.agent.engine, RunUntilIdle(max_steps), timeout=None)
            nursery.cancel_scope.cancel()
        # every event was published before the reply: take what the pump had not yet read
        while True:
            try:
                handle(events.receive_nowait().payload)
            except (trio.WouldBlock, trio.EndOfChannel):
                break
    assert isinstance(idle, Idle)
    return idle



"""Systems of agents: several agents, one thread each, in one store and one runtime.

:func:`open_system` runs a system blueprint (``[[agents]]``): it opens every agent's model,
the store, each agent's thread (``SYSTEM.NAME`` unless the blueprint says otherwise) and one
runtime holding every agent's actors, the system's switchboard (``system/NAME``) and, in each
agent's app host, the messaging app whose tools reach the other agents. The agents reach
each other only through those tools; the user reaches them through :meth:`System.send`.
Every turn of an agent, the user's or another agent's question, is taken from the
switchboard, so an agent answers one at a time.

Every record of the system's threads (its agents' and their sub-agents') carries the
system's next system seq, from one :class:`~livecontext.runtime.persistence.SystemClock`
started, when the system opens, past the largest any of them holds; the system's own log
(``system:NAME``, held open while the system runs: one process runs a system at a time)
records its agents and their threads, and each run of inputs (see :mod:`._system_log`).
Opening a system whose process was killed resumes it as a whole: the next
:meth:`System.run_inputs` resumes the run that was going on, each agent finishing the step it
was stopped in and getting the inputs of that run it had not got, once; a message or question
whose sending call was interrupted is found, by its key, where it got to: delivered once,
asked once (see :mod:`._messaging`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs
import trio
from attrs import field, frozen

from livecontext.protocol.agent import (
    AgentStatus,
    AppEffects,
    GetAppEffects,
    GetStatus,
    GetTail,
    InputMode,
    ProvideInput,
    Tail,
)
from livecontext.protocol.context import HistorySlice, ReadHistory
from livecontext.protocol.history import DecideApproval, EngineState, HistoryEntry, Retention, UsageTotals
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import AppHistory
from livecontext.protocol.system import (
    FindInputs,
    GivenInput,
    InputsDone,
    InputsFound,
    InputsGiven,
    SystemDeclared,
    SystemMember,
)
from livecontext.protocol.wire import make_converter
from livecontext.runtime import Context, Runtime, RuntimeClock, UsageError, WallClock, open_runtime
from livecontext.runtime.models import ModelClient, open_model_client
from livecontext.runtime.persistence import (
    EventStore,
    SystemClock,
    ThreadLockedError,
    ThreadLog,
    default_store_url,
    open_store,
)
from livecontext.runtime.tokens import TokenCounter

from ..agent import AgentActors, decide_approval, give_input, input_mode, live_usage, spawn_agent
from ._messaging import Directory, Messaging, roster_prompt
from ._switchboard import Switchboard, switchboard_id
from ._system_log import (
    SystemFork,
    check_system_name,
    replay_system_log,
    fork_system,
    last_system_seq,
    system_log_id,
    system_threads,
    write_system_log,
)
from ._turns import AgentAddress, held_turn, run_turn
from ..blueprint import AgentBlueprint, SystemBlueprint, load_system_blueprint, open_blueprint_models
from ..spend import SpendLedger, ledger_id
from ..telemetry import open_tracing

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from livecontext.runtime import SteppingScheduler


@frozen
class AgentAnswer:
    """How one turn of an agent ended (:meth:`System.send`)."""

    agent: str
    text: str | None
    """The agent's answer: its last model output, once it waits for input again; ``None`` if
    the turn stopped otherwise (see :attr:`reason`)."""
    state: EngineState
    steps: int
    """Engine steps the turn took."""
    reason: str
    """Why the turn stopped: ``no_input`` (it answered), ``max_steps``, ``failed: ...``,
    ``cancelled``, ``paused`` or ``terminated``; ``silent`` for a silent input (no turn)."""


@frozen
class SystemAgent:
    """One running agent of a system."""

    name: str
    address: AgentAddress
    """Its thread and how a turn runs it."""
    actors: AgentActors
    """Its engine, history store, app host and input source (and recap, analyzers)."""
    apps: tuple[str, ...]
    """Its apps' names (``messaging`` among them)."""
    resumed_state: EngineState
    """Its thread's state when the system opened (``WaitingInput`` for a new thread)."""
    pins: tuple[str, ...] = ()
    """Its blueprint's pinned inputs (fed first by :meth:`System.run_inputs`)."""
    inputs: tuple[str, ...] = ()
    """Its blueprint's inputs."""

    @property
    def thread_id(self) -> str:
        return self.address.thread_id


@frozen
class SystemAgentStatus:
    """What :meth:`System.status` reports of one agent."""

    name: str
    thread_id: str
    state: EngineState
    task: AgentStatus
    """The task lifecycle's status, read off the thread's log: ``active``, ``waiting_internal``
    (waiting on an ``ask_agent`` or a sub-agent), ``waiting_user``, ``completed``, ``abandoned``,
    ``terminated``, ``paused`` or ``failed``, with what goes with it (see :class:`AgentStatus`)."""
    entries: tuple[HistoryEntry, ...]
    app_histories: tuple[AppHistory, ...]
    """What each app with committed effects is rebuilt from (its state and effects)."""
    apps: tuple[str, ...]
    usage: UsageTotals = UsageTotals()
    """Its thread's model calls (its sub-agents' included), summed."""

    @property
    def status(self) -> str:
        """The status's name (``task.status.value``)."""
        return self.task.status.value


@frozen
class SystemStatus:
    """Every agent of a system, in the blueprint's order."""

    name: str
    agents: tuple[SystemAgentStatus, ...]

    @property
    def usage(self) -> UsageTotals:
        """Every agent's model calls (their sub-agents' included), summed."""
        return sum((a.usage for a in self.agents), UsageTotals())


def _answers(value: Mapping[str, AgentAnswer]) -> Mapping[str, AgentAnswer]:
    return MappingProxyType(dict(value))


def _held(value: Mapping[str, tuple[str, ...]]) -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType(dict(value))


@frozen
class InputsRun:
    """What :meth:`System.run_inputs` did."""

    answers: Mapping[str, AgentAnswer] = field(converter=_answers)
    """The turn each agent took, by name (agents with nothing to do took none)."""
    held: Mapping[str, tuple[str, ...]] = field(converter=_held)
    """Inputs given and not fed, by agent: the system's last run was not done (a crash), so
    this run resumed it instead; run again to give them."""
    resumed: bool = False
    """Whether this run resumed the system's last run (not done) instead of starting one."""


def agent_named(agents: Mapping[str, SystemAgent], system: str, name: str) -> SystemAgent:
    """The agent named ``name`` of system ``system``.

    Raises:
        UsageError: there is none; the message names the agents there are.
    """
    found = agents.get(name)
    if found is None:
        raise UsageError(f"no agent named {name!r} in system {system!r}; "
                         f"the agents there are: {', '.join(agents)}")
    return found


class System:
    """A running system of agents (see :func:`open_system`)."""

    def __init__(self, name: str, runtime: Runtime, store: EventStore, agents: Sequence[SystemAgent],
                 clock: SystemClock | None = None, declared: SystemDeclared | None = None,
                 log: ThreadLog | None = None, pending: InputsGiven | None = None) -> None:
        self.name = name
        self.runtime = runtime
        """The runtime every agent's actors run in."""
        self.store = store
        """The store every agent's thread lives in."""
        self.clock = clock if clock is not None else SystemClock()
        """The system's sequence: :attr:`~SystemClock.last` is the system seq of the latest
        record of any of its threads (``livecontext fork --system`` cuts at one)."""
        self.declared = declared if declared is not None else SystemDeclared(
            name, tuple(SystemMember(a.name, a.thread_id) for a in agents))
        """What the system's own log says of it: its agents' threads, and what it was forked
        from."""
        self.agents: Mapping[str, SystemAgent] = MappingProxyType({a.name: a for a in agents})
        """The agents by name, in the blueprint's order."""
        self._switchboard = switchboard_id(name)
        self._client: Context = runtime.client(f"system.{name}")
        self._claims = itertools.count(1)
        self._log = log
        """The system's own log (``system:NAME``), where its runs are recorded."""
        self._pending = pending
        """Its last run of inputs, while not done."""
        self._converter = make_converter()

    def agent(self, name: str) -> SystemAgent:
        """The agent named ``name``.

        Raises:
            UsageError: there is none; the message names the agents there are.
        """
        return agent_named(self.agents, self.name, name)

    async def send(self, name: str, text: str, *, mode: InputMode | str = InputMode.QUEUE) -> AgentAnswer:
        """Give agent ``name`` the input ``text`` and run it until it waits for input again.

        With ``mode`` ``"queue"`` (the default) the turn waits for the agent to be free
        (another agent may be asking it something). The other modes give the input at once
        (docs/input.md): ``"interrupt"`` cuts the agent's model call or tool in flight and is
        its next input, and the answer is that of the run that took it; ``"terminate"`` ends
        its task (``text`` is the reason; the answer's reason is ``terminated`` once the run
        in progress ended); ``"silent"`` is recorded for its next model call and runs
        nothing (the answer's reason is ``silent``).

        Raises:
            UsageError: no agent has that name, or ``mode`` names no mode.
        """
        agent, given = self.agent(name), input_mode(mode)
        if given is InputMode.QUEUE:
            return await self._turn(agent, [ProvideInput(text)])
        await give_input(self._client, agent.actors.input, ProvideInput(text, mode=given))
        if given is InputMode.INTERRUPT:
            return await self._turn(agent, [])
        if given is InputMode.TERMINATE:  # (once the run in progress, if any, ended)
            async with held_turn(self._client, self._switchboard, agent.name, f"user.{next(self._claims)}"):
                tail = await self._client.ask(agent.address.history, GetTail())
        else:
            tail = await self._client.ask(agent.address.history, GetTail())
        assert isinstance(tail, Tail)
        return AgentAnswer(agent.name, None, tail.state, 0, "terminated" if given is InputMode.TERMINATE else "silent")

    async def run_inputs(self, inputs: Mapping[str, Sequence[str]] | None = None) -> InputsRun:
        """Run every agent that has something to do, at once, each in one turn: a *run*.

        Each agent with inputs gets them, in order (its blueprint's ``pins``, then ``inputs``
        by default); an agent stopped in the middle of a step first finishes that work. The
        run is recorded in the system's own log, each input with a key that its entry keeps,
        and marked done once every input is in its agent's history and every turn ended.

        If the system's last run is not done (its process was killed, or the system was
        forked in the middle of it), this one resumes it instead: each agent finishes its
        work and gets the inputs of that run it had not got, once; the inputs given now are
        held (:attr:`InputsRun.held`): run again to give them.

        Args:
            inputs: Inputs by agent name, in place of the blueprint's (``None``); an agent not
                named gets none.

        Raises:
            UsageError: ``inputs`` names an agent the system does not have.
        """
        given = self._given(inputs)
        held: dict[str, tuple[str, ...]] = {}
        run = self._pending
        resumed = run is not None
        if run is not None:
            held = {name: tuple(text for text, _ in feed) for name, feed in given.items() if feed}
        elif any(given.values()):
            run_id = f"run-{self.runtime.clock.token_hex(6)}"
            run = InputsGiven(run_id, tuple(GivenInput(name, text, f"{run_id}:{name}:{k}", retention)
                                            for name, feed in given.items() for k, (text, retention) in enumerate(feed)))
            await self._write(run)
            self._pending = run
        feeds = await self._unfed(run) if run is not None else {}
        answers: dict[str, AgentAnswer] = {}

        async def take(agent: SystemAgent, feed: list[ProvideInput]) -> None:
            answers[agent.name] = await self._turn(agent, feed)

        states = {}
        for agent in self.agents.values():  # every state before any turn starts (and asks others)
            tail = await self._client.ask(agent.address.history, GetTail())
            assert isinstance(tail, Tail)
            states[agent.name] = tail.state
        async with trio.open_nursery() as nursery:
            for agent in self.agents.values():
                feed = feeds.get(agent.name, [])
                if feed or states[agent.name] is not EngineState.WAITING_INPUT:
                    nursery.start_soon(take, agent, feed)
        if run is not None and not any((await self._unfed(run)).values()):
            await self._write(InputsDone(run.run))
            self._pending = None
        ordered = {name: answers[name] for name in self.agents if name in answers}
        return InputsRun(ordered, held, resumed)

    def _given(self, inputs: Mapping[str, Sequence[str]] | None) -> dict[str, list[tuple[str, Retention | None]]]:
        """The inputs (text, retention) to give each agent: ``inputs``, or the blueprint's
        pins and inputs; blank ones are left out (an engine ignores them)."""
        if inputs is None:
            given = {a.name: [*((p, Retention.CRITICAL) for p in a.pins), *((t, None) for t in a.inputs)]
                     for a in self.agents.values()}
        else:
            for name in inputs:
                self.agent(name)
            given = {name: [(text, None) for text in texts] for name, texts in inputs.items()}
        return {name: [(t, r) for t, r in feed if t.strip()] for name, feed in given.items()}

    async def _unfed(self, run: InputsGiven) -> dict[str, list[ProvideInput]]:
        """The inputs of ``run`` not in their agents' histories yet, by agent."""
        out: dict[str, list[ProvideInput]] = {}
        for name in dict.fromkeys(given.agent for given in run.inputs):
            mine = [given for given in run.inputs if given.agent == name]
            agent = self.agents.get(name)
            if agent is None:  # (an agent the blueprint no longer has: nobody to feed)
                continue
            found = await self._client.ask(agent.address.history, FindInputs(tuple(g.key for g in mine)))
            assert isinstance(found, InputsFound)
            out[name] = [ProvideInput(g.text, g.retention, g.key) for g in mine if g.key not in found.keys]
        return out

    async def _write(self, message: InputsGiven | InputsDone) -> None:
        if self._log is None:
            raise UsageError(f"system {self.name!r} has no log of its own to record its runs in")
        await write_system_log(self._log, self._converter, message, str(self._switchboard), self.runtime.clock)

    def checkpoint(self) -> int:
        """The system seq of the latest record of any of the system's threads: a point to
        fork the whole system at, now or later (:meth:`fork`, ``livecontext fork --system``)."""
        return self.clock.last

    async def fork(self, new_name: str, *, at: int | None = None) -> SystemFork:
        """Fork the whole system into a new system ``new_name``, as it was at system seq
        ``at`` (a :meth:`checkpoint`; ``None``: now). The system runs on meanwhile; run the
        fork with ``open_system(blueprint, name=new_name)``.

        Raises:
            SystemExistsError: system ``new_name``, or a thread it would get, exists.
            SystemSeqPastEndError: ``at`` is past the system's last system seq.
            UsageError: ``new_name`` cannot name a system.
        """
        return await fork_system(self.store, self.name, self.checkpoint() if at is None else at, new_name)

    async def status(self) -> SystemStatus:
        """Each agent's thread, state, status, entries, apps and usage, as now."""
        rows = []
        for agent in self.agents.values():
            ids = agent.address
            entries = await self._client.ask(ids.history, ReadHistory(include_folded=True))
            tail = await self._client.ask(ids.history, GetTail())
            effects = await self._client.ask(ids.history, GetAppEffects())
            status = await self._client.ask(ids.history, GetStatus())
            assert isinstance(entries, HistorySlice) and isinstance(tail, Tail) and isinstance(effects, AppEffects)
            assert isinstance(status, AgentStatus)
            usage = await live_usage(self._client, self.store, self._converter, agent.thread_id, tail.usage,
                                     entries.entries)
            rows.append(SystemAgentStatus(agent.name, agent.thread_id, tail.state, status,
                                          entries.entries, effects.apps, agent.apps, usage))
        return SystemStatus(self.name, tuple(rows))

    async def approve(self, name: str, call_id: str, arguments: str | Mapping[str, Any] | None = None, *,
                      by: str = "user") -> AgentAnswer:
        """Approve agent ``name``'s tool call ``call_id``, which waits for a person's approval
        (its answer's reason says ``waiting_approval: ...``), and run the agent on in a turn of
        its own: it stops again at the next call still undecided (docs/approvals.md).

        Args:
            arguments: Edited arguments (a dict, or a JSON object as text) the call runs with.
            by: Who approves (recorded in the log with the decision).

        Raises:
            UsageError: there is no agent ``name``, no call of it waits for approval with that
                id, it is decided already, or ``arguments`` is not a JSON object.
        """
        text = arguments if arguments is None or isinstance(arguments, str) else json.dumps(dict(arguments))
        return await self._decided(name, DecideApproval(call_id, True, text, "", by))

    async def deny(self, name: str, call_id: str, reason: str = "", *, by: str = "user") -> AgentAnswer:
        """Deny agent ``name``'s tool call ``call_id``: it is never run, its result tells the
        model who denied it and ``reason``; then run the agent on, as :meth:`approve` does.

        Raises:
            UsageError: there is no agent ``name``, no call of it waits for approval with that
                id, or it is decided already.
        """
        return await self._decided(name, DecideApproval(call_id, False, None, reason, by))

    async def _decided(self, name: str, decision: DecideApproval) -> AgentAnswer:
        agent = self.agent(name)
        await decide_approval(self._client, agent.actors.history, decision)
        return await self._turn(agent, ())

    async def _turn(self, agent: SystemAgent, feed: Sequence[ProvideInput]) -> AgentAnswer:
        async with held_turn(self._client, self._switchboard, agent.name, f"user.{next(self._claims)}"):
            outcome = await run_turn(self._client, agent.address, feed)
        idle = outcome.idle
        return AgentAnswer(agent.name, outcome.answer, idle.state, idle.steps, idle.reason_text)


@contextlib.asynccontextmanager
async def open_system(
    blueprint: SystemBlueprint | str | os.PathLike[str], *, store: str | EventStore | None = None,
    models: Mapping[str, ModelClient] | None = None, base_url: str | None = None,
    api_key: str | None = None, name: str | None = None, tracer_provider: TracerProvider | None = None,
    scheduler: SteppingScheduler | None = None,
    clock: RuntimeClock = WallClock(),
) -> AsyncIterator[System]:
    """Run a system of agents for the ``async with`` block; everything is closed on exit.

    Args:
        blueprint: A system blueprint, or the path of its file (docs/blueprints.md,
            ``[[agents]]``).
        store: The store URL (``sqlite:PATH``, ``jsonl:DIR``, ``memory:``), in place of the
            blueprint's; neither: ``$LIVECONTEXT_STORE``, else the default store. Or an open
            :class:`EventStore` (not closed here: the caller owns it; ``livecontext batch``
            runs many systems in one).
        name: Run the blueprint as system ``name`` in place of its own (a fork of it, made by
            ``livecontext fork --system``): each agent's thread is the one that system's log
            names, else ``NAME.AGENT``.
        models: Model clients by agent name, in place of the blueprint's specs (they are not
            closed here: the caller owns them).
        base_url: The OpenAI-compatible server of every ``openai:`` spec.
        api_key: Its API key.
        tracer_provider: Trace the system with this OpenTelemetry provider (by default it is
            traced only if ``OTEL_TRACES_EXPORTER`` asks for it: see README, "OpenTelemetry").
        scheduler: Run the system's runtime under this
            :class:`~livecontext.runtime.SteppingScheduler`: nothing is delivered until
            its ``step()`` does, in the order its seed picks (``livecontext explore``; the
            caller steps it while it uses the system). ``None``: live scheduling.
        clock: Where the system reads the time of day it stamps on its records, and its run
            ids and retry jitter: the machine's clock and the OS's randomness (the default),
            or a :class:`~livecontext.runtime.VirtualClock`, with which a run under
            ``trio.testing.MockClock`` stamps virtual times from a seed (docs/testing.md,
            "Virtual time"). Latency, delays and timeouts follow the Trio run's clock.

    Every model is opened before the store, so that a bad spec writes nothing. A thread
    already in the store is resumed (see :meth:`System.run_inputs`).

    Raises:
        BlueprintError: the blueprint file is missing or wrong.
        UsageError: ``models`` names an agent the system does not have; another writer runs
            the system or one of its threads; ``name`` is not a usable system name.
        SpendLimitsError: the blueprint's ``[spend]`` sets a ``max_cost`` and no price is
            known for an agent's model (nothing is written).
    """
    bp = blueprint if isinstance(blueprint, SystemBlueprint) else load_system_blueprint(blueprint)
    given = dict(models or {})
    for agent_name in given:
        bp.agent(agent_name)
    converter, counter = make_converter(), TokenCounter.from_env()
    async with contextlib.AsyncExitStack() as stack:
        opened: dict[str, ModelClient] = {}
        for a in bp.agents:
            mine = given.get(a.name)
            if mine is None:
                mine = await stack.enter_async_context(
                    open_model_client(a.blueprint.model, base_url=base_url, api_key=api_key,
                                      rng=clock.random(f"retry:{a.name}")))
            opened[a.name] = mine
            if bp.spend is not None:  # (before the store is opened: nothing written)
                bp.spend.check_model(mine.name)
        side = {a.name: await stack.enter_async_context(
            open_blueprint_models(a.blueprint, base_url=base_url, api_key=api_key, clock=clock)) for a in bp.agents}
        event_store = store if isinstance(store, EventStore) else await stack.enter_async_context(
            await open_store(store or bp.store or default_store_url()))
        system_name = check_system_name(name) if name is not None else bp.name
        seqs, system_log = await _open_system_log(stack, event_store, system_name)
        found = replay_system_log(await system_log.read(), converter)
        declared = found.declared if found is not None else None
        bp = _as_system(bp, system_name, declared)
        directory = Directory(bp.name, switchboard_id(bp.name),
                              {a.name: _address(a) for a in bp.agents}, bp.ask_timeout_s)
        members = tuple(SystemMember(a.name, a.blueprint.settings.thread_id) for a in bp.agents)
        now = SystemDeclared(bp.name, members, declared.forked_from if declared else None,
                             declared.forked_at if declared else None)
        for thread in await system_threads(event_store, now):  # the clock goes on past all of them
            async with await event_store.open_reader(thread) as reader:
                seqs.advance_past(await last_system_seq(reader))
        logs = {a.name: await stack.enter_async_context(await _open_thread(event_store, bp, a, seqs))
                for a in bp.agents}
        if now != declared:
            await write_system_log(system_log, converter, now, str(switchboard_id(bp.name)), clock)
        rt = await stack.enter_async_context(open_runtime(scheduler=scheduler, clock=clock))
        await stack.enter_async_context(open_tracing(rt, bp.name, tracer_provider=tracer_provider))
        await rt.spawn(lambda: Switchboard(bp.name, {a.name: directory.agents[a.name].thread_id for a in bp.agents}),
                       directory.switchboard)
        opener = rt.client(f"open.{bp.name}")
        ledger = None
        if bp.spend is not None:  # one ledger for all the agents: the system's limits cover them all
            limits = bp.spend
            ledger = ledger_id(bp.name)
            roots = tuple(a.blueprint.settings.thread_id for a in bp.agents)
            await rt.spawn(lambda: SpendLedger(limits, f"system {bp.name}", event_store, roots), ledger)
        agents = []
        for a in bp.agents:
            apps = [*a.blueprint.make_apps(), Messaging(a.name, directory)]
            settings = attrs.evolve(a.blueprint.settings, system_prompt=_prompt(a, directory))
            actors = await spawn_agent(rt, logs[a.name], opened[a.name], settings, converter=converter,
                                       counter=counter, apps=apps, recap_model=side[a.name].recap,
                                       analyzer_models=side[a.name].analyzers, model_spec=a.blueprint.model,
                                       spend=ledger)
            tail = await opener.ask(actors.history, GetTail())
            assert isinstance(tail, Tail)
            agents.append(SystemAgent(a.name, directory.agents[a.name], actors, tuple(app.name for app in apps),
                                      tail.state, a.blueprint.pins, a.blueprint.inputs))
        yield System(bp.name, rt, event_store, agents, seqs, now, system_log,
                     found.pending if found is not None else None)


def _address(a: AgentBlueprint) -> AgentAddress:
    return AgentAddress(a.name, a.blueprint.settings.thread_id, a.blueprint.max_steps, a.description)


def _prompt(a: AgentBlueprint, directory: Directory) -> str:
    """The agent's system prompt (its own, or one naming it), then what it is told of the others."""
    own = a.blueprint.settings.system_prompt or "You are a helpful agent."
    return f"{own.rstrip()}\n\n{roster_prompt(a.name, directory)}"


def _as_system(bp: SystemBlueprint, name: str, declared: SystemDeclared | None) -> SystemBlueprint:
    """``bp`` run as system ``name``: under its own name, each agent's thread is the
    blueprint's; under another (a fork), the one that system's log names, else ``NAME.AGENT``."""
    if name == bp.name:
        return bp
    known = {m.name: m.thread_id for m in declared.agents} if declared is not None else {}
    agents = tuple(attrs.evolve(a, blueprint=a.blueprint.override(thread=known.get(a.name, f"{name}.{a.name}")))
                   for a in bp.agents)
    return attrs.evolve(bp, name=name, agents=agents)


async def _open_system_log(stack: contextlib.AsyncExitStack, store: EventStore,
                           name: str) -> tuple[SystemClock, ThreadLog]:
    """The system's clock, started past its own log's last system seq, and the log, held
    open (so taken: one process runs a system at a time) for the system's run."""
    clock = SystemClock()
    thread = system_log_id(name)
    try:
        log = await store.open_thread(thread, create=True, owner=f"system/{name}", clock=clock)
    except ThreadLockedError as exc:
        raise UsageError(f"system {name!r} is being run by another writer: {exc.holder}; wait for it to "
                         "finish (or stop it) and run again") from None
    await stack.enter_async_context(log)
    clock.advance_past(await last_system_seq(log))
    return clock, log


async def _open_thread(store: EventStore, bp: SystemBlueprint, a: AgentBlueprint, clock: SystemClock) -> ThreadLog:
    thread = a.blueprint.settings.thread_id
    try:
        return await store.open_thread(thread, create=True, owner=f"history/{thread}", clock=clock)
    except ThreadLockedError as exc:
        raise UsageError(
            f"thread {thread!r} (agent {a.name} of system {bp.name}) is being run by another writer: "
            f"{exc.holder}; wait for it to finish (or stop it) and run again") from None

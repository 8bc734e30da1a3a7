"""Wiring one agent thread: history store, app host, input source and engine."""

from __future__ import annotations

import collections
import functools
import json

import attrs
from collections.abc import Mapping, Sequence

from attrs import frozen

from livecontext.protocol.agent import ProvideInput
from livecontext.protocol.context import Capability
from livecontext.protocol.kernel import ActorId, Topic
from livecontext.protocol.records import (
    AppInfo,
    RecordedAnalyzer,
    RecordedLimits,
    RecordedPrice,
    RecordedRecap,
    RecordedSpend,
    ThreadConfigured,
    ThreadSettings,
)
from livecontext.protocol.wire import ProtocolConverter, make_converter
from livecontext.runtime import ActorRef, Runtime
from livecontext.runtime.models import ModelClient
from livecontext.runtime.persistence import ThreadLog
from livecontext.runtime.tokens import TokenCounter

from ._host import AppHost
from ..mcp import start_mcp_connections
from ._input import InputSource
from ._subagents import give_spawn, give_store
from ._thread_ids import check_thread_id
from ..analyzers import Analyzer, AnalyzerSettings, make_analyzer
from ..apps import App, Notebook, describe_tools
from ..engine import NO_APPROVALS, ApprovalPolicy, Engine, EngineWiring, control_tools, engine_topic
from ..history import BudgetLimits, ContextPolicy, HistoryLimits, HistoryStore, history_topic
from ..recap import RecapMaintainer, RecapSettings
from ..spend import SpendLedger, SpendLimits, ledger_id

ENGINE_CAPABILITIES = frozenset({Capability.APPEND, Capability.READ})
"""The engine appends and reads its history."""
APP_HOST_CAPABILITIES = frozenset({Capability.READ, Capability.NOTIFY, Capability.APP_STATE})
"""Apps read committed effects, save their states and may notify the agent."""
HISTORY_CAPABILITIES = frozenset({Capability.READ})
RECAP_CAPABILITIES = frozenset({Capability.READ, Capability.FOLD})
"""The recap maintainer reads and folds."""
ANALYZER_CAPABILITIES = frozenset({Capability.READ, Capability.NOTIFY})
"""Analyzers read and notify."""
INPUT_CAPABILITIES = frozenset({Capability.NOTIFY})
"""The input source records a ``silent`` input as a notification."""

@frozen
class AgentSettings:
    """How to run one agent thread."""

    thread_id: str = "main"
    system_prompt: str | None = None
    """``None`` keeps a resumed thread's prompt (a new thread gets the default one)."""
    budget: int = 8000
    """Token budget of each rendered context."""
    snapshot_every: int = 1000
    """Write a snapshot of the thread's state every this many log records."""
    limits: HistoryLimits | None = None
    """Limits of the unfolded history. ``None``: derived from the budget when a recap runs
    (see :class:`~livecontext.actors.history.BudgetLimits`), none otherwise; limits that set no
    maximum, with a recap, give their thresholds to the derived ones."""
    pin_task: bool = True
    """The thread's first input (its task) is CRITICAL: never folded, always rendered."""
    lifecycle: bool = True
    """Offer the model the control tools ``task_complete``, ``task_abandon``, ``output`` and
    ``wait_user_response`` (``wait_parent`` in a sub-agent): all but ``output`` end the turn,
    and the engine waits for new input (see ``livecontext.actors.engine._lifecycle``)."""
    recap: RecapSettings | None = None
    """Run a recap maintainer with these settings (``None``: no recap)."""
    analyzers: tuple[AnalyzerSettings, ...] = ()
    """Analyzers to run beside the engine."""
    context: ContextPolicy = ContextPolicy()
    """How each call's context is rendered: ``stable`` (the default: a prefix the provider
    caches, compacted when full) or ``fill`` (see :class:`~livecontext.actors.history.ContextPolicy`)."""
    spend: SpendLimits | None = None
    """Stop before a model call that would pass these limits (``None``: no limits); they
    cover the agent's sub-agents too."""
    approval: ApprovalPolicy = NO_APPROVALS
    """Which tool calls wait for a person's approval before they run, besides those whose
    tool requires it (``@tool(approval=True)``): tools by name, or a function deciding per call."""
    folder: str = ""
    """The folder (absolute) its apps, tools and approval policy are imported from besides the
    current one: its blueprint's (empty: none). The thread records it, so that resuming it
    from another folder (``livecontext run --thread``, ``approve``) imports them again."""

    def history_limits(self) -> HistoryLimits | BudgetLimits:
        """The limits the history store gets: :attr:`limits`, or ones derived from the budget
        when a recap runs and no maximum is given (the recap's own text is kept room for)."""
        given = self.limits
        if self.recap is None:
            return given if given is not None else HistoryLimits()
        if given is not None and (given.max_entries or given.max_tokens or given.max_bytes):
            return given
        reserved = self.recap.max_summary_chars // 3 + RECAP_MESSAGE_TOKENS  # (~3 chars a token, at worst)
        budget = int(self.budget * self.context.recap_share())
        if given is None:
            return BudgetLimits(budget, reserved)
        return BudgetLimits(budget, reserved, given.soft, given.hard, given.truncate)


RECAP_MESSAGE_TOKENS = 12
"""What the recap's message costs besides its text (its heading and a message's overhead)."""


@frozen
class AgentActors:
    """The running actors of one thread."""

    thread_id: str
    engine: ActorRef[Engine]
    history: ActorRef[HistoryStore]
    apps: ActorRef[AppHost]
    input: ActorRef[InputSource]
    recap: ActorRef[RecapMaintainer] | None = None
    analyzers: tuple[ActorRef[Analyzer], ...] = ()
    spend: ActorId | None = None
    """The spend ledger its engine asks before each model call (its own, its system's or its
    parent's; ``None``: no limits)."""

    @property
    def events(self) -> Topic:
        """Where the engine publishes its events."""
        return engine_topic(self.thread_id)

    @property
    def history_events(self) -> Topic:
        """Where the history store publishes its changes."""
        return history_topic(self.thread_id)


async def spawn_agent(
    rt: Runtime, log: ThreadLog, model: ModelClient, settings: AgentSettings, *,
    converter: ProtocolConverter, counter: TokenCounter, inputs: Sequence[str] = (),
    apps: Sequence[App] | None = None, auto: bool = False, recap_model: ModelClient | None = None,
    analyzer_models: Mapping[str, ModelClient] | None = None, model_spec: str = "",
    spend: ActorId | None = None, recap_model_spec: str = "", analyzer_model_specs: Mapping[str, str] | None = None,
) -> AgentActors:
    """Spawn a thread's history store, app host, input source and engine, in that order
    (and first, if ``settings.spend`` sets limits, the spend ledger that keeps them).

    ``model_spec`` is recorded with the thread (``ThreadConfigured.model``) so that it can be
    resumed with the same model; empty when the model was given as a client; so are
    ``recap_model_spec`` and ``analyzer_model_specs`` (by analyzer name), the specs of the
    side models, with the rest of ``settings`` (see ``_resume``). ``spend`` is
    the spend ledger of limits the agent shares (its system's, its parent's), in place of
    one of its own.

    Raises:
        SpendLimitsError: ``settings.spend`` sets a ``max_cost`` and no price is known for
            the model (nothing is spawned).
        AppDefinitionError: an app cannot be made again (:meth:`App.fresh`).
    """
    tid = check_thread_id(settings.thread_id)
    ids = EngineWiring(ActorId("history", tid), ActorId("app", tid), ActorId("input", tid))
    engine_id = ActorId("engine", tid)
    if settings.recap is not None:
        ids = attrs.evolve(ids, recap=ActorId("recap", tid))
    if spend is None and settings.spend is not None:
        limits_given = settings.spend
        limits_given.check_model(model.name)
        spend = ledger_id(tid)
        await rt.spawn(lambda: SpendLedger(limits_given, f"agent {tid}", log.store, (tid,)), spend)
    ids = attrs.evolve(ids, spend=spend)
    app_list: list[App] = list(apps) if apps is not None else [Notebook()]
    # a sub-agent's thread lives in its parent's store (and system), and spends from its limits
    give_store(app_list, log.store, log.clock, spend, model)
    # the host's apps are made here the first time, so an app that cannot be made again is
    # said in one line before anything of the thread runs (and again on each restart)
    await start_mcp_connections(rt, tid, app_list, ids.history)  # (their tools are the thread's)
    first = [_fresh(app_list)]
    config = thread_config(settings.budget, app_list, model_spec, lifecycle=settings.lifecycle,
                           context=settings.context,
                           settings=thread_settings(settings, recap_model=recap_model_spec,
                                                    analyzer_models=analyzer_model_specs))
    limits = settings.history_limits()
    history = await rt.spawn(
        lambda: HistoryStore(tid, log, converter, counter, system_prompt=settings.system_prompt,
                             snapshot_every=settings.snapshot_every, limits=limits, config=config,
                             pin_task=settings.pin_task, policy=settings.context),
        ids.history, capabilities=HISTORY_CAPABILITIES)
    host = await rt.spawn(lambda: AppHost(first.pop() if first else _fresh(app_list), ids.history, counter),
                          ids.apps, capabilities=APP_HOST_CAPABILITIES)
    pending = collections.deque(ProvideInput(text) for text in inputs)  # kept across the source's restarts
    source = await rt.spawn(lambda: InputSource(notify=engine_id, buffer=pending, history=ids.history), ids.input,
                            capabilities=INPUT_CAPABILITIES)
    recap: ActorRef[RecapMaintainer] | None = None
    if settings.recap is not None and ids.recap is not None:
        recap_settings = settings.recap
        recap = await rt.spawn(
            lambda: RecapMaintainer(tid, ids.history, recap_settings, counter, recap_model),
            ids.recap, capabilities=RECAP_CAPABILITIES)
    engine = await rt.spawn(
        lambda: Engine(tid, model, ids, counter, budget=settings.budget, auto=auto,
                       lifecycle=settings.lifecycle, approval=settings.approval), engine_id,
        capabilities=ENGINE_CAPABILITIES)
    analyzers = []
    for a in settings.analyzers:
        caps = frozenset(Capability(c) for c in a.capabilities)
        model_for = (analyzer_models or {}).get(a.name)
        analyzers.append(await rt.spawn(
            functools.partial(make_analyzer, tid, ids.history, a, model_for),
            ActorId("analyzer", f"{tid}.{a.name}"), capabilities=caps))
    return AgentActors(tid, engine, history, host, source, recap, tuple(analyzers), spend)


def thread_config(budget: int, apps: Sequence[App], model_spec: str = "", *,
                  lifecycle: bool = True, context: ContextPolicy = ContextPolicy(),
                  settings: ThreadSettings | None = None) -> ThreadConfigured:
    """What a thread records of how it runs: the budget, the tools it offers (as the model is
    sent them: its apps', then the control tools if ``lifecycle``), the apps (by name, class
    and the options they were made with), the model's spec, the context policy and its other
    ``settings`` (limits, recap, analyzers, spend limits...).

    Raises:
        ToolNameClashError: with ``lifecycle``, an app offers a tool named like a control tool.
    """
    tools = tuple(spec for app in apps for spec in describe_tools(app))
    if lifecycle:
        tools += control_tools(tools)
    return ThreadConfigured(budget, tools, tuple(app_info(app) for app in apps), model_spec, context.recorded(),
                            settings)


def thread_settings(settings: AgentSettings, *, recap_model: str = "",
                    analyzer_models: Mapping[str, str] | None = None) -> ThreadSettings:
    """What a thread records of ``settings`` besides its budget and context policy, with the
    specs of its recap's and analyzers' models (empty: none, or a client given in Python)."""
    specs = analyzer_models or {}
    limits = settings.limits
    recap = settings.recap
    spend = settings.spend
    return ThreadSettings(
        limits=None if limits is None else RecordedLimits(
            limits.max_entries, limits.max_tokens, limits.max_bytes, limits.soft, limits.hard, limits.truncate),
        recap=None if recap is None else RecordedRecap(
            recap.strategy.value, recap.window, recap.batch, recap.max_summary_chars, recap.budget,
            recap.max_retries, recap_model),
        analyzers=tuple(RecordedAnalyzer(a.name, a.kind.value, a.trigger.value, a.period_s, a.prompt, a.threshold,
                                         a.window, tuple(a.capabilities), specs.get(a.name, ""))
                        for a in settings.analyzers),
        spend=None if spend is None else RecordedSpend(
            spend.max_input_tokens, spend.max_output_tokens, spend.max_cost,
            tuple(RecordedPrice(model, p.input, p.cached_input, p.output) for model, p in sorted(spend.prices.items()))),
        pin_task=settings.pin_task, lifecycle=settings.lifecycle,
        approval=tuple(sorted(settings.approval.names)), approval_policy=settings.approval.path,
        folder=settings.folder)


def app_info(app: App) -> AppInfo:
    """How a thread records ``app``: enough to make it again (see ``_thread_apps``)."""
    options = app.options()
    return AppInfo(app.name, f"{type(app).__module__}:{type(app).__qualname__}",
                   json.dumps(options, sort_keys=True) if options else "")


def _fresh(apps: list[App]) -> list[App]:
    """New app instances on every (re)start of the host: an app's state is rebuilt from the log;
    each sub-agents app among them is given the way to spawn its sub-agents."""
    made = [app.fresh() for app in apps]
    give_spawn(made, _spawn_sub_agent)
    return made


async def _spawn_sub_agent(rt: Runtime, log: ThreadLog, model: ModelClient, thread_id: str,
                           spend: ActorId | None) -> AgentActors:
    """Spawn a sub-agent for a :class:`SubAgents` app (given it by :func:`_fresh`): an agent of
    default settings on ``log``, spending from ``spend``."""
    return await spawn_agent(rt, log, model, AgentSettings(thread_id=thread_id), converter=make_converter(),
                             counter=TokenCounter.from_env(), spend=spend)

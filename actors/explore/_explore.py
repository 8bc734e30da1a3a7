"""Run a system blueprint under many seeds, with seeded faults, and check every outcome."""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib
import inspect
import json
import os
import random
import tomllib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import trio
import attrs
from attrs import field, frozen

from livecontext.protocol.history import ModelReply, ModelRequest
from livecontext.runtime import LivecontextError, SteppingScheduler, UsageError
from livecontext.runtime.models import (
    FailureKind,
    ModelClient,
    ModelRequestRejected,
    TextCallback,
    TransientModelError,
    open_model_client,
)
from livecontext.runtime.persistence import EventStore, copy_thread, open_store
from livecontext.runtime.testing import Delivery, run_stepping
from livecontext.runtime.tokens import TokenCounter

from ..apps import App, describe_tools
from ..blueprint import AppUse, SystemBlueprint, load_system_blueprint
from ..system import AgentAnswer, SystemAgentStatus, open_system

FAULTS = ("model", "tool", "kill")
"""The faults :func:`explore_system` can inject, each at a point its seed picks: ``model``, a
model call that fails (a transient or a permanent model error); ``tool``, a tool call of the
blueprint's apps that raises (their method tools; the messaging tools and ``[[tools]]``
functions are left alone); ``kill``, the system's runtime
closed in the middle of a model call, without the turn finishing, and the system opened again
on the same store and run on (it resumes its run)."""

_FAULT_SALT = 0x5EED
"""Mixed into a seed for the faults' own random numbers (apart from the scheduler's)."""


class ExploreError(UsageError):
    """A bad ``--check``, ``--inputs`` or ``--faults`` (the message says what to give)."""


def _readonly(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@frozen
class SystemOutcome:
    """How a system's run ended under one seed: what a check receives."""

    seed: int
    answers: Mapping[str, AgentAnswer] = field(converter=_readonly)
    """The turn each agent took for its inputs, by name (after a kill: the resumed run's)."""
    agents: Mapping[str, SystemAgentStatus] = field(converter=_readonly)
    """Every agent's final state (``.state``, an EngineState), status (``.task``, an
    AgentStatus) and history entries (``.entries``), by name, in the blueprint's order."""
    faults: tuple[str, ...] = ()
    """The faults that fired, in words (``model error at model call 3 (alice)``...)."""
    resumed: bool = False
    """Whether the system was killed and its run resumed."""


@frozen
class SeedOutcome:
    """One seed's run: its deliveries, its outcome, and why it failed (``None``: it passed)."""

    seed: int
    trace: tuple[Delivery, ...]
    outcome: SystemOutcome | None
    failure: str | None
    """The invariant that failed (the check's message), or the error, stall or deadlock."""

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def summary(self) -> str:
        """What the outcomes are grouped by: the failure, or how each agent's turn ended."""
        if self.failure is not None:
            return f"failed: {self.failure}"
        assert self.outcome is not None
        turns = ", ".join(f"{name} {answer.reason}" for name, answer in self.outcome.answers.items())
        faults = " (after a fault)" if self.outcome.faults else ""
        return f"ok: {turns or 'no turns'}{faults}"


@frozen
class SystemExploration:
    """The runs of :func:`explore_system`, one per seed, in order."""

    runs: tuple[SeedOutcome, ...]

    @property
    def failures(self) -> tuple[SeedOutcome, ...]:
        return tuple(r for r in self.runs if not r.ok)

    @property
    def distinct_traces(self) -> int:
        """How many different delivery orders the seeds produced."""
        return len({r.trace for r in self.runs})

    def groups(self) -> list[tuple[str, tuple[int, ...]]]:
        """The distinct outcomes (:attr:`SeedOutcome.summary`) with their seeds, most seeds first."""
        found: dict[str, list[int]] = {}
        for run in self.runs:
            found.setdefault(run.summary, []).append(run.seed)
        return sorted(((k, tuple(v)) for k, v in found.items()), key=lambda kv: (-len(kv[1]), kv[1][0]))


Check = Callable[[SystemOutcome], Any]
"""A check: returns a false value or raises AssertionError (its message: the invariant) to fail."""


class _Shared:
    """What the fault-injecting model clients and tools of one run share.

    Calls are counted per agent: an agent's own model calls (and its tools' calls) come one
    after another in the order the seed's deliveries give them, while calls of two agents may
    run at once, in an order Trio's scheduler picks at random; so a fault is placed at an
    agent's k-th call, the same in every run of the seed."""

    def __init__(self, model_at: tuple[str, int] | None, permanent: bool, kill_at: tuple[str, int] | None,
                 tool_at: tuple[str, int] | None = None) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.model_at = model_at
        self.permanent = permanent
        self.kill_at = kill_at
        self.tool_calls: collections.Counter[str] = collections.Counter()
        self.tool_at = tool_at
        self.kill_scope: trio.CancelScope | None = None
        self.killed = False
        self.fired: list[str] = []
        self.store: EventStore | None = None
        """The store the system runs on."""
        self.survivor: EventStore | None = None
        """Where a kill leaves what the store held at that instant: the system is opened again on it."""


class _FaultyModel(ModelClient):
    """The agent's model, failing (or killing the system) at the run's seeded model call."""

    def __init__(self, inner: ModelClient, agent: str, shared: _Shared) -> None:
        self.name = inner.name
        self._inner = inner
        self._agent = agent
        self._shared = shared

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        shared = self._shared
        shared.calls[self._agent] += 1
        here = (self._agent, n := shared.calls[self._agent])
        if here == shared.kill_at and not shared.killed and shared.kill_scope is not None:
            shared.killed = True
            shared.fired.append(f"killed at model call {n} of {self._agent}")
            # As kill -9 leaves a durable store: what was committed at this instant, nothing
            # after. The copy is taken before anything else runs (no envelope is delivered
            # while this task has work), and the system is reopened on it; what its orderly
            # close writes to the old store afterwards is not seen again.
            assert shared.store is not None and shared.survivor is not None
            for info in await shared.store.threads():
                await copy_thread(shared.store, info, shared.survivor)
            shared.kill_scope.cancel()
            await trio.sleep_forever()
        if here == shared.model_at:
            if shared.permanent:
                shared.fired.append(f"permanent model error at model call {n} of {self._agent}")
                raise ModelRequestRejected(400, "injected by livecontext explore", "a fault explore injected")
            shared.fired.append(f"transient model error at model call {n} of {self._agent}")
            raise TransientModelError(FailureKind.SERVER, "injected by livecontext explore")
        return await self._inner.complete(request, on_text)


class _InjectedToolCrash(LivecontextError, RuntimeError):
    """The crash ``--faults tool`` injects into a tool."""


def _crashing(app: App, agent: str, shared: _Shared) -> App:
    """``app`` whose method tools count their calls and raise at the run's seeded one (so do
    the instances its ``fresh`` makes: a host makes its apps afresh)."""
    for spec in describe_tools(app):
        original = getattr(type(app), spec.name, None)
        if not callable(original):
            continue
        with contextlib.suppress(AttributeError):  # (an app with __slots__: left alone)
            setattr(app, spec.name, _counted(getattr(app, spec.name), spec.name, agent, shared,
                                             inspect.iscoroutinefunction(original)))
    make_fresh = app.fresh
    with contextlib.suppress(AttributeError):
        app.fresh = lambda: _crashing(make_fresh(), agent, shared)  # type: ignore[method-assign]
    return app


def _counted(bound: Callable[..., Any], name: str, agent: str, shared: _Shared, is_async: bool) -> Callable[..., Any]:
    def crash_here() -> None:
        shared.tool_calls[agent] += 1
        if (agent, shared.tool_calls[agent]) == shared.tool_at:
            shared.fired.append(f"tool crash at tool call {shared.tool_calls[agent]} of {agent} ({name})")
            raise _InjectedToolCrash("injected by livecontext explore")

    if is_async:
        @functools.wraps(bound)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            crash_here()
            return await bound(*args, **kwargs)
        return run_async

    @functools.wraps(bound)
    def run(*args: Any, **kwargs: Any) -> Any:
        crash_here()
        return bound(*args, **kwargs)
    return run


@frozen
class _CrashingUse(AppUse):
    """An app of the blueprint, made with its tools counted (see :func:`_crashing`)."""

    agent: str = ""
    shared: Any = field(default=None, eq=False, hash=False, repr=False)

    def make(self) -> App:
        return _crashing(AppUse.make(self), self.agent, self.shared)


def _with_tool_faults(bp: SystemBlueprint, shared: _Shared) -> SystemBlueprint:
    agents = tuple(attrs.evolve(a, blueprint=attrs.evolve(a.blueprint, apps=tuple(
        _CrashingUse(u.use, u.options, a.name, shared) for u in a.blueprint.apps))) for a in bp.agents)
    return attrs.evolve(bp, agents=agents)


def _plan(seed: int, faults: Collection[str], span: _Span) -> _Shared:
    rng = random.Random(seed * 1_000_003 + _FAULT_SALT)
    model_at = _pick(rng, span.model_calls) if "model" in faults else None
    permanent = rng.random() < 0.5
    kill_at = _pick(rng, span.model_calls) if "kill" in faults else None
    tool_at = _pick(rng, span.tool_calls) if "tool" in faults else None
    return _Shared(model_at, permanent, kill_at, tool_at)


def _pick(rng: random.Random, calls: Mapping[str, int]) -> tuple[str, int] | None:
    """One of the calls counted (an agent and its call's number), or ``None`` if none was."""
    every = [(agent, k) for agent in sorted(calls) for k in range(1, calls[agent] + 1)]
    return rng.choice(every) if every else None


@frozen
class _Span:
    """How many model calls and app tool calls each agent makes in a run without faults."""

    model_calls: Mapping[str, int]
    tool_calls: Mapping[str, int]


_NO_SPAN = _Span({}, {})


def _blueprint(blueprint: SystemBlueprint | str | os.PathLike[str]) -> SystemBlueprint:
    return blueprint if isinstance(blueprint, SystemBlueprint) else load_system_blueprint(blueprint)


def _check_faults(faults: Collection[str]) -> None:
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        raise ExploreError(f"unknown fault {unknown[0]!r}: give --faults as a comma-separated list of "
                           f"{', '.join(FAULTS)}")


async def _run(bp: SystemBlueprint, seed: int, inputs: Mapping[str, Sequence[str]] | None,
               check: Check | None, shared: _Shared, stall_timeout: float,
               keep: Path | None) -> SeedOutcome:
    """One seed's run (the model clients and tools fail as ``shared`` says)."""
    bp = _with_tool_faults(bp, shared)

    async with contextlib.AsyncExitStack() as stack:
        models = {}
        for a in bp.agents:
            spec = a.blueprint.model
            inner = spec if isinstance(spec, ModelClient) else await stack.enter_async_context(open_model_client(spec))
            models[a.name] = _FaultyModel(inner, a.name, shared)
        store = shared.store = await stack.enter_async_context(await open_store("memory:"))
        survivor = shared.survivor = await stack.enter_async_context(await open_store("memory:"))

        async def body(scheduler: SteppingScheduler) -> SystemOutcome:
            with trio.CancelScope() as scope:
                shared.kill_scope = scope
                async with open_system(bp, store=store, models=models, scheduler=scheduler) as system:
                    run = await system.run_inputs(inputs)
                    status = await system.status()
            shared.kill_scope = None
            if shared.killed:  # opened again on what the kill left: the run resumes
                async with open_system(bp, store=survivor, models=models, scheduler=scheduler) as system:
                    run = await system.run_inputs(inputs)
                    status = await system.status()
            return SystemOutcome(seed, run.answers, {a.name: a for a in status.agents}, tuple(shared.fired),
                                 shared.killed)

        ran = await run_stepping(body, seed, stall_timeout=stall_timeout)
        if keep is not None:  # (after the stepping run: copying is real I/O, no delivery waits on it)
            await _keep(survivor if shared.killed else store, keep)
    outcome = ran.result
    if ran.error is not None:
        return SeedOutcome(seed, ran.trace, None, f"{type(ran.error).__name__}: {_line(str(ran.error))}")
    assert outcome is not None
    return SeedOutcome(seed, ran.trace, outcome, _checked(check, outcome))


def _checked(check: Check | None, outcome: SystemOutcome) -> str | None:
    if check is None:
        return None
    name = getattr(check, "__name__", "check")
    try:
        verdict = check(outcome)
    except AssertionError as exc:
        return _line(str(exc)) or f"{name} failed"
    except Exception as exc:  # noqa: BLE001  (a broken check fails the seed, named)
        return f"{name} raised {type(exc).__name__}: {_line(str(exc))}"
    if verdict is not None and not verdict:
        return f"{name} returned {verdict!r}"
    return None


async def _keep(store: EventStore, path: Path) -> None:
    """Copy every thread of ``store`` into a new SQLite store at ``path``."""
    async with await open_store(f"sqlite:{path}") as target:
        for info in await store.threads():
            await copy_thread(store, info, target)


def _line(text: str) -> str:
    return " ".join(text.split())


async def _span(bp: SystemBlueprint, seed: int, inputs: Mapping[str, Sequence[str]] | None,
                stall_timeout: float) -> _Span:
    """How many model calls and app tool calls each agent makes in a run without faults
    (where seeded faults are placed)."""
    shared = _Shared(None, False, None)
    await _run(bp, seed, inputs, None, shared, stall_timeout, None)
    return _Span(dict(shared.calls), dict(shared.tool_calls))


async def _warm(bp: SystemBlueprint) -> None:
    """Load, before any seed runs, what a system loads on its first opening in a process (the
    tokenizer's vocabulary, the apps' modules): seconds on a cold machine, which a seed's run
    would otherwise take for a stalled handler."""
    await trio.to_thread.run_sync(TokenCounter.from_env)
    for a in bp.agents:
        a.blueprint.make_apps()


async def run_system_seed(blueprint: SystemBlueprint | str | os.PathLike[str], seed: int, *,
                          inputs: Mapping[str, Sequence[str]] | None = None, check: Check | None = None,
                          faults: Collection[str] = (), stall_timeout: float = 2.0,
                          keep: str | os.PathLike[str] | None = None) -> SeedOutcome:
    """Run ``blueprint`` once under ``seed`` (as :func:`explore_system` runs each seed): the same
    seed, inputs and faults give the same deliveries and the same outcome.

    Args:
        keep: Copy the run's store into a new SQLite store at this path (for ``livecontext
            trace``); ``None``: the store is dropped with the run.
    """
    bp = _blueprint(blueprint)
    _check_faults(faults)
    await _warm(bp)
    span = await _span(bp, 0, inputs, stall_timeout) if faults else _NO_SPAN
    return await _run(bp, seed, inputs, check, _plan(seed, faults, span), stall_timeout,
                      Path(keep) if keep is not None else None)


async def explore_system(blueprint: SystemBlueprint | str | os.PathLike[str], seeds: Iterable[int], *,
                         inputs: Mapping[str, Sequence[str]] | None = None, check: Check | None = None,
                         faults: Collection[str] = (), stall_timeout: float = 2.0,
                         stop_at_first_failure: bool = False,
                         on_run: Callable[[SeedOutcome], None] | None = None) -> SystemExploration:
    """Run ``blueprint`` once per seed, each under a stepping scheduler of that seed, and check
    each outcome.

    Every run opens the system on a fresh memory store and gives it ``inputs`` (agent ->
    texts; ``None``: the blueprint's). A seed fails if the run raises, stalls (nothing to
    deliver for ``stall_timeout`` seconds while the system waits: a deadlock) or ``check``
    fails on its :class:`SystemOutcome` (raises AssertionError, or returns a false value other
    than ``None``).

    ``faults`` (of :data:`FAULTS`) are placed at the call each seed picks among those a run of
    seed 0 without faults makes (so :func:`run_system_seed` of one seed places them alike).

    Raises:
        ExploreError: an unknown fault.
        BlueprintError: the blueprint is missing or wrong.
    """
    bp = _blueprint(blueprint)
    _check_faults(faults)
    seeds = list(seeds)
    await _warm(bp)
    span = await _span(bp, 0, inputs, stall_timeout) if faults else _NO_SPAN
    runs = []
    for seed in seeds:
        run = await _run(bp, seed, inputs, check, _plan(seed, faults, span), stall_timeout, None)
        runs.append(run)
        if on_run is not None:
            on_run(run)
        if stop_at_first_failure and not run.ok:
            break
    return SystemExploration(tuple(runs))


async def write_trace_page(blueprint: SystemBlueprint | str | os.PathLike[str], seed: int,
                           folder: str | os.PathLike[str], *,
                           inputs: Mapping[str, Sequence[str]] | None = None, check: Check | None = None,
                           faults: Collection[str] = (), stall_timeout: float = 2.0) -> tuple[Path, SeedOutcome]:
    """Run ``seed`` again, keep its store as ``FOLDER/seed-SEED.db`` and write its trace page
    (``livecontext trace --system``, the system's first agent with the others as columns) to
    ``FOLDER/seed-SEED.html``; return the page's path and the run (compare its trace with the
    explored run's: the same seed gives the same deliveries)."""
    from ..trace import build_trace, render_page, trace_json

    bp = _blueprint(blueprint)
    out = Path(folder)
    db = out / f"seed-{seed}.db"
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)
    run = await run_system_seed(bp, seed, inputs=inputs, check=check, faults=faults,
                                stall_timeout=stall_timeout, keep=db)
    page = out / f"seed-{seed}.html"
    if run.outcome is None:  # (it failed before the system's answers: nothing recorded to copy)
        return page, run
    data = trace_json(await build_trace(f"sqlite:{db}", None, system=bp.name))
    await trio.Path(page).write_text(render_page(data), encoding="utf-8")
    return page, run


def load_check(path: str) -> Check:
    """The check ``MODULE:FN``, imported (put the current folder on ``sys.path`` first).

    Raises:
        ExploreError: ``path`` is not ``MODULE:FN``, or names nothing callable.
    """
    module_name, colon, fn_name = path.partition(":")
    if not colon or not module_name.strip() or not fn_name.strip():
        raise ExploreError(f"--check {path!r}: give MODULE:FN, e.g. checks:every_question_answered")
    try:
        module = importlib.import_module(module_name.strip())
    except ImportError as exc:
        raise ExploreError(f"--check {path!r}: cannot import {module_name!r} ({exc}); run from the folder "
                           "that holds it, or install it") from None
    fn = getattr(module, fn_name.strip(), None)
    if not callable(fn):
        raise ExploreError(f"--check {path!r}: module {module_name!r} has no function {fn_name!r}")
    return fn  # type: ignore[no-any-return]


def load_inputs(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """The inputs in a JSON or TOML file: an object of agent name -> list of texts.

    Raises:
        ExploreError: the file is missing, unreadable or of another shape.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ExploreError(f"--inputs {p}: cannot read it ({exc.strerror or exc}); give a JSON or TOML file") from None
    try:
        data = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ExploreError(f"--inputs {p}: not valid {'TOML' if p.suffix.lower() == '.toml' else 'JSON'} "
                           f"({_line(str(exc))})") from None
    if not isinstance(data, dict) or not all(
            isinstance(v, list) and all(isinstance(t, str) for t in v) for v in data.values()):
        raise ExploreError(f"--inputs {p}: give an object of agent name -> list of texts, "
                           'e.g. {"alice": ["hello"]}')
    return {str(k): list(v) for k, v in data.items()}

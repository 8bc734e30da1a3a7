"""Batch runs (``livecontext batch``): one agent (or one system of agents) per task of a tasks
file, many at once in one Trio process, each in its own thread(s) of one shared store.

A task's thread id is ``BATCH/TASK_ID`` (an agent's thread id may have one namespace before its
name: see :func:`livecontext.protocol.kernel.thread_id_problem`).

A task is *finished* once its log says so (``completed`` by ``task_complete``, ``answered``:
it answered its last input, or ``waiting`` on a question): a re-run reads the log and skips
it. Any other task is resumed from its log, fed the inputs its log does not hold yet.

**A system blueprint** (``[[agents]]``) runs one system per task, named ``BATCH/TASK_ID``: its
agents' threads are ``BATCH/TASK_ID.AGENT`` (as :func:`~livecontext.actors.open_system` names
them when it runs a blueprint under another name), its own log ``system:BATCH/TASK_ID``. The
task's ``inputs`` go to the system's first agent, or, given as ``{"AGENT": [...], ...}``, to
each agent named, as ``livecontext run SYSTEM.toml --input AGENT=TEXT`` gives them (an agent
not named gets none of the blueprint's inputs; pins stay). Its vars go into every agent's
system prompt, pins and inputs. The *entry agent* (the first agent, or the first in the
blueprint's order that the task names) gives the task its ``status`` and ``result`` and its
``thread``; ``steps``, ``tokens`` and ``usage`` are summed over every thread of the system
(sub-agents' too). The system's own log records whether its inputs were given: a re-run skips
a system whose inputs were all taken and whose entry agent is finished, and otherwise opens it again,
giving no input twice (a run cut short is resumed by :meth:`~livecontext.actors.System.run_inputs`;
agents stopped mid-work finish it).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio
from attrs import frozen

from livecontext.protocol.agent import AgentStatus
from livecontext.protocol.history import (
    EngineState,
    HistoryEntry,
    ModelInputEntry,
    ModelOutputEntry,
    RecapEntry,
    TaskStatus,
    UsageTotals,
)
from livecontext.protocol.kernel import thread_id_problem
from livecontext.protocol.system import SystemDeclared, SystemMember
from livecontext.protocol.wire import ProtocolConverter, make_converter
from livecontext.runtime import UsageError
from livecontext.runtime.persistence import EventStore, open_store

from ._batch_results import ResultsFile
from ..agent import stored_usage, usage_json
from ..front import AgentSpec, open_agent
from ..blueprint import AgentBlueprint, Blueprint, SystemBlueprint
from ..history import HistoryState, load_state
from ..system import check_system_name, open_system, read_system_log, system_threads

TASK_KEYS = frozenset({"id", "inputs", "vars"})
"""The keys a task line may have."""
FINISHED = frozenset({"completed", "abandoned", "terminated", "answered", "waiting"})
"""The statuses a re-run skips (the rest are resumed from the log)."""
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@frozen
class BatchTask:
    """One line of a tasks file."""

    id: str
    inputs: tuple[str, ...]
    """Its inputs (for a system: its first agent's), unless :attr:`addressed` gives them."""
    vars: Mapping[str, str] = attrs.field(factory=dict)
    line: int = 0
    """Its line number in the tasks file (1-based)."""
    addressed: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    """Inputs by agent name (``"inputs": {"AGENT": [...]}``; a system's task only)."""


@frozen
class TaskResult:
    """What one task ended with: one line of RESULTS.jsonl."""

    id: str
    thread: str
    status: str
    """``completed`` (task_complete), ``abandoned`` (task_abandon: the result is its reason),
    ``terminated`` (a terminate input ended it: the result is its reason), ``answered``
    (answered its last input), ``waiting`` (asked a question with wait_user_response),
    ``waiting_approval`` (a tool call waits for a person's approval: the result names the
    calls; decide with ``livecontext approve|deny`` and run the batch again to carry it on),
    ``stopped`` (max_steps) or ``failed``."""
    result: str | None
    steps: int
    """Model calls the thread recorded (over every run of it)."""
    usage: UsageTotals
    """The task's model calls, summed over every run of its thread (of every thread of its
    system) and its sub-agents': what the provider reported, or, for a model that reports
    nothing (echo, scripted), the rendered counts."""
    error: str | None = None
    skipped: bool = False
    """Finished by an earlier run (read from the log, not run now)."""

    @property
    def tokens(self) -> int:
        """Input plus output tokens of :attr:`usage` (the line's ``tokens``, kept for the
        scripts that read it)."""
        return self.usage.input_tokens + self.usage.output_tokens

    def json(self) -> dict[str, Any]:
        """The RESULTS.jsonl object."""
        return {"id": self.id, "thread": self.thread, "status": self.status, "result": self.result,
                "steps": self.steps, "tokens": self.tokens, "usage": usage_json(self.usage), "error": self.error}


def batch_name(tasks_path: str | os.PathLike[str]) -> str:
    """The default batch name: the tasks file's name without its extension."""
    return Path(tasks_path).name.split(".")[0]


def task_thread(batch: str, task_id: str) -> str:
    """The thread id of task ``task_id`` of batch ``batch``.

    Raises:
        UsageError: it is not a valid agent thread id.
    """
    return _agent_thread(f"{batch}/{task_id}", f"task {task_id!r} of batch {batch!r}")


def _agent_thread(thread: str, whose: str) -> str:
    problem = thread_id_problem(thread, agent=True)
    if problem is not None:
        raise UsageError(f"{whose} makes thread id {thread!r}: {problem}; rename the task (or the batch, with --batch)")
    return thread


def read_tasks(path: str | os.PathLike[str]) -> list[BatchTask]:
    """The tasks of a tasks file (JSON lines; blank lines are skipped).

    Raises:
        UsageError: a line is not a task (the message names the file and line), or two
            tasks have the same id (it names both lines).
    """
    name = os.fspath(path)
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read tasks file {name}: {exc}") from None
    tasks: list[BatchTask] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        task = _task(raw, f"{name}:{number}", number)
        if task.id in seen:
            raise UsageError(f"{name}:{number}: task id {task.id!r} is already the id of line {seen[task.id]}; "
                             "give each task its own id")
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise UsageError(f"{name} holds no tasks; write one JSON object per line: "
                         '{"id": ..., "inputs": [...], "vars": {...}}')
    return tasks


def _task(raw: str, where: str, number: int) -> BatchTask:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not JSON ({exc.msg} at column {exc.colno}); write one task object per line") from None
    if not isinstance(obj, dict):
        raise UsageError(f"{where}: a task is a JSON object, not {type(obj).__name__}")
    unknown = sorted(set(obj) - TASK_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; a task has id, inputs, vars")
    task_id = obj.get("id")
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        task_id = str(task_id)
    if not isinstance(task_id, str) or not task_id:
        raise UsageError(f"{where}: \"id\" must be a non-empty string or an integer")
    inputs = obj.get("inputs", [])
    addressed: dict[str, tuple[str, ...]] = {}
    if isinstance(inputs, dict) and inputs:
        for agent, texts in inputs.items():
            if not isinstance(texts, list) or not texts or not all(isinstance(i, str) for i in texts):
                raise UsageError(f"{where}: \"inputs\" of agent {agent!r} must be a non-empty list of strings")
            addressed[agent] = tuple(texts)
        inputs = []
    elif not isinstance(inputs, list) or not inputs or not all(isinstance(i, str) for i in inputs):
        raise UsageError(f"{where}: \"inputs\" must be a non-empty list of strings "
                         "(or, for a system, an object of AGENT: [strings])")
    given_vars = obj.get("vars", {})
    if not isinstance(given_vars, dict):
        raise UsageError(f"{where}: \"vars\" must be an object of NAME: value")
    values: dict[str, str] = {}
    for key, value in given_vars.items():
        if not _VAR_NAME.fullmatch(key):
            raise UsageError(f"{where}: var name {key!r} is not a name (letters, digits and _, not starting with a digit)")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise UsageError(f"{where}: var {key!r} must be a string or a number")
        values[key] = str(value)
    return BatchTask(task_id, tuple(inputs), values, number, addressed)


def substitute(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{NAME}`` of ``values`` replaced by its value.

    Only the names given are replaced; any other brace (JSON in a prompt, a placeholder no
    task sets) is left as it is, so a prompt needs no escaping.
    """
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``{NAME}`` a task's vars may fill (a JSON brace, with its quotes, is none)."""


def unset_placeholders(bp: Blueprint | SystemBlueprint, tasks: Sequence[BatchTask]) -> list[str]:
    """One line for each ``{NAME}`` of the blueprint's prompts and pins, or of a task's
    inputs, that some task gives no var for: it stays as written in what the agent reads
    (:func:`substitute` replaces the names given alone). Said, not refused: the braces may
    be meant."""
    agents = [bp] if isinstance(bp, Blueprint) else [a.blueprint for a in bp.agents]
    shared = [text for b in agents for text in (b.settings.system_prompt or "", *b.pins)]
    missing: dict[str, list[str]] = {}
    for task in tasks:
        texts = [*shared, *task.inputs, *(text for given in task.addressed.values() for text in given)]
        for name in dict.fromkeys(m for text in texts for m in PLACEHOLDER.findall(text)):
            if name not in task.vars:
                missing.setdefault(name, []).append(task.id)
    lines = []
    for name, ids in missing.items():
        named = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
        lines.append(f"{{{name}}} is given by no var of {len(ids)} task(s) ({named}): it stays as written in "
                     f"what their agents read; give \"{name}\" in their \"vars\" (or ignore this if the braces "
                     "are meant)")
    return lines


def task_spec(bp: Blueprint, task: BatchTask, thread: str) -> AgentSpec:
    """The agent one task runs: the blueprint's, on its thread, its vars in the system prompt
    and inputs."""
    return AgentSpec.from_blueprint(_with_vars(bp, task.vars, task.inputs).override(thread=thread))


def task_system(bp: SystemBlueprint, task: BatchTask) -> SystemBlueprint:
    """The system one task runs: its inputs to its agents (see the module docstring), its
    vars in every agent's system prompt, pins and inputs.

    Raises:
        UsageError: the task gives inputs to an agent the system does not have.
    """
    given = dict(task.addressed) if task.addressed else {bp.agents[0].name: task.inputs}
    for name in given:
        bp.agent(name)
    agents = tuple(attrs.evolve(a, blueprint=_with_vars(a.blueprint, task.vars, given.get(a.name, ())))
                   for a in bp.agents)
    return attrs.evolve(bp, agents=agents)


def entry_agent(bp: SystemBlueprint, task: BatchTask) -> AgentBlueprint:
    """The agent whose status and result are a system task's: the first the task gives inputs
    to, in the blueprint's order (the first agent, if the task does not name any)."""
    return next((a for a in bp.agents if a.name in task.addressed), bp.agents[0])


def _with_vars(bp: Blueprint, values: Mapping[str, str], inputs: Sequence[str]) -> Blueprint:
    prompt = bp.settings.system_prompt
    return bp.override(
        system_prompt=substitute(prompt, values) if prompt is not None else None,
        inputs=[substitute(text, values) for text in inputs],
        pins=[substitute(text, values) for text in bp.pins])


def check_tasks(bp: Blueprint | SystemBlueprint, tasks: Sequence[BatchTask], batch: str) -> list[str]:
    """Each task's thread id (:func:`task_thread`), once every task is checked to be one that
    ``bp`` can run.

    Raises:
        UsageError: a task's thread id (a system's: its name, or an agent's thread) is not
            valid; a task gives inputs by agent to a one-agent blueprint, or names an agent
            a system does not have.
    """
    threads = [task_thread(batch, task.id) for task in tasks]
    for task, thread in zip(tasks, threads):
        where = f"task {task.id!r} (line {task.line})"
        if not isinstance(bp, SystemBlueprint):
            if task.addressed:
                raise UsageError(f"{where} gives inputs by agent, but {bp.path} is one agent; give a list of inputs")
            continue
        try:
            check_system_name(thread)
            task_system(bp, task)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        for a in bp.agents:
            _agent_thread(f"{thread}.{a.name}", f"{where}, for agent {a.name},")
    return threads


def _status(state: HistoryState, expected_inputs: int) -> tuple[str, str | None, str | None]:
    """``(status, result, error)`` of a thread, from its replayed log."""
    return _status_of(state.state, state.status, state.entries, expected_inputs)


def _status_of(engine: EngineState, status: AgentStatus, entries: Sequence[HistoryEntry],
               expected_inputs: int) -> tuple[str, str | None, str | None]:
    """``(status, result, error)`` of a thread whose engine is in ``engine``, its task at
    ``status``, with these entries (every one, folded included)."""
    if status.status is TaskStatus.COMPLETED:
        return "completed", status.result, None
    if status.status is TaskStatus.ABANDONED:
        return "abandoned", status.reason, None
    if status.status is TaskStatus.TERMINATED:
        return "terminated", status.reason, None
    if status.status is TaskStatus.FAILED:
        return "failed", None, status.error
    if status.status is TaskStatus.WAITING_APPROVAL:  # (not finished: a run after the decision carries it on)
        return "waiting_approval", status.waiting_on, None
    if engine is EngineState.WAITING_INPUT and _inputs(entries) >= expected_inputs:
        if status.question is not None:  # (wait_user_response: no one is there to answer)
            return "waiting", status.question, None
        last = next((e for e in reversed(entries) if not isinstance(e, RecapEntry)), None)
        if isinstance(last, ModelOutputEntry):
            return "answered", last.content.live.text, None
    return "stopped", None, None


def _inputs(entries: Sequence[HistoryEntry]) -> int:
    return sum(1 for e in entries if isinstance(e, ModelInputEntry))


async def _read_thread(store: EventStore, thread: str, converter: ProtocolConverter) -> HistoryState | None:
    if not await store.exists(thread):
        return None
    reader = await store.open_reader(thread)
    async with reader:
        return await load_state(reader, converter, thread)


OnEvent = Callable[[str, TaskResult | None], Awaitable[None] | None]
"""Told ``("start", None)`` as a task starts and ``("done", result)`` as it ends."""


async def run_task(bp: Blueprint | SystemBlueprint, task: BatchTask, thread: str, store: EventStore, *,
                   base_url: str | None = None, api_key: str | None = None,
                   converter: ProtocolConverter | None = None) -> TaskResult:
    """Run one task to its end (or read it, if its log says it is finished); a failure of the
    task (its model, its tools, its thread) is its result, never raised.

    ``converter`` reads its logs: give the tasks of a batch one (a new converter builds its
    structuring code again, ~10 ms, which was 40% of a batch's CPU when each read made one).

    For a system blueprint, ``thread`` (:func:`task_thread`) is the system's name, and the
    result's thread its entry agent's (see the module docstring).
    """
    converter = converter or make_converter()
    if isinstance(bp, SystemBlueprint):
        return await _run_system_task(bp, task, thread, store, base_url=base_url, api_key=api_key,
                                      converter=converter)
    try:
        made = task_spec(bp, task, thread)
        expected = len(made.pins) + len(made.inputs)
        before = await _read_thread(store, thread, converter)
        if before is not None:
            status, result, error = _status(before, expected)
            if status in FINISHED:
                usage = await stored_usage(store, converter, before)
                return TaskResult(task.id, thread, status, result, before.model_outputs, usage, error, skipped=True)
            fed = _inputs(before.entries)  # (a resumed thread gets only the inputs its log lacks)
            pins_left = made.pins[fed:]
            made = attrs.evolve(made, pins=pins_left, inputs=made.inputs[max(0, fed - len(made.pins)):])
        async with open_agent(spec=made, store=store, base_url=base_url, api_key=api_key) as agent:
            reply = await agent.run()
            # (read from the agent's history store: what its log holds, without replaying it)
            after, entries = await agent.state(), await agent.history()
        status, result, error = _status_of(after.state, after.status, entries, expected)
        if reply.reason.startswith("failed"):
            status, error = "failed", reply.reason.removeprefix("failed: ")
        elif reply.reason == "max_steps":
            status = "stopped"
        return TaskResult(task.id, thread, status, result, after.model_outputs, after.usage, error)
    except Exception as exc:  # noqa: BLE001 -- one task's failure is its result, not the batch's
        return TaskResult(task.id, thread, "failed", None, 0, UsageTotals(), f"{type(exc).__name__}: {exc}")


async def serve_tasks(bp: Blueprint | SystemBlueprint, incoming: trio.MemoryReceiveChannel[tuple[BatchTask, str]],
                      store: EventStore, *, concurrency: int, on_event: OnEvent | None = None,
                      base_url: str | None = None, api_key: str | None = None) -> None:
    """Run each ``(task, thread)`` received on ``incoming``, ``concurrency`` at once, until the
    channel is closed and every task has ended; tell ``on_event`` as each starts and ends.

    ``concurrency`` runners pull from the one channel (a runner takes its next task as its
    last one ends), so a slow task holds up one runner, never the others. The in-process batch
    and each Ray worker run their tasks through this one loop.
    """
    async def tell(kind: str, result: TaskResult | None) -> None:
        if on_event is not None:
            said = on_event(kind, result)
            if said is not None:
                await said

    converter = make_converter()  # (one for every task's reads: see run_task)

    async def runner() -> None:
        async for task, thread in incoming:
            await tell("start", None)
            result = await run_task(bp, task, thread, store, base_url=base_url, api_key=api_key,
                                    converter=converter)
            await tell("done", result)

    async with incoming, trio.open_nursery() as nursery:
        for _ in range(max(1, concurrency)):
            nursery.start_soon(runner)


async def _run_system_task(bp: SystemBlueprint, task: BatchTask, name: str, store: EventStore, *,
                           base_url: str | None, api_key: str | None, converter: ProtocolConverter) -> TaskResult:
    """:func:`run_task` for a system: system ``name`` made from ``bp`` runs the task."""
    entry = entry_agent(bp, task)
    thread = f"{name}.{entry.name}"
    try:
        made = task_system(bp, task)
        expected = sum(1 for text in (*made.agent(entry.name).blueprint.pins,
                                      *made.agent(entry.name).blueprint.inputs) if text.strip())
        before = await read_system_log(store, converter, name)
        given = before is not None and before.runs > 0  # (its inputs are in its log: never give them again)
        if before is not None and given and before.pending is None:
            thread = _member_thread(before.declared.agents, entry.name, thread)
            state = await _read_thread(store, thread, converter)
            if state is not None:
                status, result, error = _status(state, expected)
                if status in FINISHED:
                    steps, usage = await _system_usage(store, before.declared, converter)
                    return TaskResult(task.id, thread, status, result, steps, usage, error, skipped=True)
        async with open_system(made, store=store, name=name, base_url=base_url, api_key=api_key) as system:
            ran = await system.run_inputs({} if given else None)
            thread = system.agent(entry.name).thread_id
            declared = system.declared
        steps, usage = await _system_usage(store, declared, converter)
        after = await _read_thread(store, thread, converter)
        assert after is not None  # (opening the system made it)
        status, result, error = _status(after, expected)
        answer = ran.answers.get(entry.name)
        if answer is not None and answer.reason.startswith("failed"):
            status, error = "failed", answer.reason.removeprefix("failed: ")
        elif answer is not None and answer.reason == "max_steps":
            status = "stopped"
        return TaskResult(task.id, thread, status, result, steps, usage, error)
    except Exception as exc:  # noqa: BLE001 -- one task's failure is its result, not the batch's
        return TaskResult(task.id, thread, "failed", None, 0, UsageTotals(), f"{type(exc).__name__}: {exc}")


def _member_thread(members: Sequence[SystemMember], agent: str, default: str) -> str:
    return next((m.thread_id for m in members if m.name == agent), default)


async def _system_usage(store: EventStore, declared: SystemDeclared,
                        converter: ProtocolConverter) -> tuple[int, UsageTotals]:
    """Model calls and usage over every thread of a system (its sub-agents' too)."""
    steps, usage = 0, UsageTotals()
    for thread in await system_threads(store, declared):
        state = await _read_thread(store, thread, converter)
        if state is not None:
            steps, usage = steps + state.model_outputs, usage + state.usage
    return steps, usage


async def run_batch(bp: Blueprint | SystemBlueprint, tasks: Sequence[BatchTask], store_url: str, *, batch: str,
                    concurrency: int = 16, out: ResultsFile | None = None, on_event: OnEvent | None = None,
                    base_url: str | None = None, api_key: str | None = None) -> list[TaskResult]:
    """Run every task of ``tasks`` (at most ``concurrency`` at once) in this Trio run, all in
    the store at ``store_url``; write each result to ``out`` as it ends.

    Raises:
        UsageError: a task cannot run (see :func:`check_tasks`; before anything runs).
    """
    threads = check_tasks(bp, tasks, batch)
    results: list[TaskResult] = []

    async def noted(kind: str, result: TaskResult | None) -> None:
        if result is not None:
            results.append(result)
            if out is not None:
                out.write(result)
        if on_event is not None:
            said = on_event(kind, result)
            if said is not None:
                await said

    send, receive = trio.open_memory_channel[tuple[BatchTask, str]](len(tasks))
    async with send:
        for pair in zip(tasks, threads):
            send.send_nowait(pair)
    async with await open_store(store_url) as store:
        await serve_tasks(bp, receive, store, concurrency=concurrency, on_event=noted,
                          base_url=base_url, api_key=api_key)
    order = {task.id: i for i, task in enumerate(tasks)}
    return sorted(results, key=lambda r: order[r.id])


def ray_environment(address: str | None) -> None:
    """Set what Ray reads from the environment when it is imported, before it is: a local
    cluster stays on this machine (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``), and a cluster at
    ``address`` started by ``ray start`` (token authentication on) gets the token whenever one
    is at hand (``RAY_AUTH_MODE=token``, as Ray's docs say: ``ray.init`` sends it only then).
    What the environment already says is kept.
    """
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if address is not None and "RAY_AUTH_MODE" not in os.environ and _ray_token_at_hand():
        os.environ["RAY_AUTH_MODE"] = "token"


def _ray_token_at_hand() -> bool:
    if os.environ.get("RAY_AUTH_TOKEN"):
        return True
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.join(os.path.expanduser("~"), ".ray", "auth_token")
    return os.path.isfile(path)

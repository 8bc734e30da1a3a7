"""``livecontext run SYSTEM.toml``: run a system of agents (``[[agents]]``) until each waits."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

import click
import trio
from rich.console import Console
from rich.markup import escape

from livecontext.protocol.kernel import Topic
from livecontext.runtime import UsageError
from livecontext.runtime.persistence import default_store_url

from ..system import System, SystemStatus, open_system
from ..blueprint import SystemBlueprint
from ..agent import apps_json, entry_json, status_json, usage_json
from ._interrupt import DEADLINE_S, Interrupt
from ._live import open_live_view
from ._live_gauge import Watched
from ._main import folder_note, print_json, run_async
from ._transcript import Transcript

ONE_AGENT_FLAGS = {
    "model_spec": "--model", "thread_id": "--thread", "system_prompt": "--system", "budget": "--budget",
    "pins": "--pin", "no_pin_task": "--no-pin-task", "max_steps": "--max-steps",
    "snapshot_every": "--snapshot-every", "events_path": "--events", "tools": "--tool", "app_paths": "--app",
}
"""The flags of ``run`` (by parameter) that describe one agent: a system sets them per agent."""


def system_inputs(bp: SystemBlueprint, given: tuple[str, ...]) -> dict[str, list[str]]:
    """``--input NAME=TEXT`` flags, in order, by agent.

    Raises:
        UsageError: a flag is not ``NAME=TEXT``, or NAME is no agent of the system.
    """
    inputs: dict[str, list[str]] = {}
    for item in given:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--input {item!r}: a system's inputs are NAME=TEXT, NAME one of its agents: "
                             f"{', '.join(bp.names)}")
        bp.agent(name.strip())
        inputs.setdefault(name.strip(), []).append(text)
    return inputs


def run_system(bp: SystemBlueprint, given: Mapping[str, Any], *, base_url: str | None, api_key: str | None,
               as_json: bool, live: bool = False) -> None:
    """Run ``bp`` with the flags ``given`` on the command line; print what each agent did
    (``live``: follow the run with a panel per agent).

    Raises:
        UsageError: a flag that describes one agent was given, or an ``--input`` is wrong.
    """
    for param, flag in ONE_AGENT_FLAGS.items():
        if param in given:
            raise UsageError(f"{flag} describes one agent; {bp.path} is a system of agents: set it in "
                             "each [[agents]] table")
    if "input_mode" in given:
        raise UsageError(f"--input-mode applies to one agent's inputs; {bp.path} is a system of agents: give "
                         "an agent an input with a mode from Python (System.send(name, text, mode=...))")
    inputs = system_inputs(bp, given["inputs"]) if "inputs" in given else None
    bp = bp.override(store=given.get("store_url"), inputs=inputs)
    store_url = bp.store or default_store_url()
    console = Console(stderr=as_json)
    made_folder = folder_note(store_url)
    resume = f"livecontext run {bp.path}" + (f" --store {store_url}" if "store_url" in given else "")
    interrupt = Interrupt()
    interrupt.hard_message = (f"interrupted; the system did not stop within {DEADLINE_S:g} s and was stopped at "
                              f"once (its logs are whole); `{resume}` resumes it")
    interrupt.again_message = f"interrupted again; the system was stopped at once (its logs are whole); `{resume}` resumes it"

    async def go() -> None:
        async with open_system(bp, store=store_url, base_url=base_url, api_key=api_key,
                               name=given.get("as_system")) as system:
            if made_folder:
                click.echo(f"livecontext: note: {made_folder}", err=True)
            if live:
                async with open_live_view(system.runtime, _watched(system, bp), console) as view:
                    with interrupt.region():
                        ran = await system.run_inputs()
                    if not interrupt.caught:
                        for name, answer in ran.answers.items():
                            view.stopped(name, answer.reason)
            else:
                async with _watching(system, None if as_json else console):
                    with interrupt.region():
                        ran = await system.run_inputs()
            status = await system.status()
        if interrupt.caught:  # (the agents stopped as the system closed: each log records where)
            where = ", ".join(f"{a.name} at {a.state.value}" for a in status.agents)
            click.echo(f"livecontext: interrupted; system {status.name}: {where}; `{resume}` resumes it", err=True)
            sys.exit(130)
        if ran.resumed:
            click.echo(f"livecontext: note: system {status.name}'s last run was interrupted; this run resumed it "
                       "(each agent finished its work and got the inputs of that run it had not got)", err=True)
        for name, texts in ran.held.items():
            click.echo(f"livecontext: note: agent {name}'s {len(texts)} input(s) given now were not fed (the "
                       "interrupted run was resumed instead); run again to give them", err=True)
        if as_json:
            print_json(system_json(status))
        else:
            for agent in status.agents:
                why = f" ({escape(agent.task.reason)})" if agent.task.reason else ""
                console.print(f"[dim]{agent.name} (thread {agent.thread_id}) is {agent.status}{why}: "
                              f"{len(agent.entries)} entries[/dim]")
            console.print(f"[dim]system {status.name}; store {store_url}[/dim]")
        failed = [a for a in ran.answers.values() if a.reason.startswith("failed")]
        if failed:
            click.echo(f"livecontext: error: agent {failed[0].agent} {failed[0].reason}", err=True)
            sys.exit(1)

    run_async(go, interrupt)


def system_json(status: SystemStatus) -> dict[str, Any]:
    """``run SYSTEM.toml --json``: the system's name, each agent's thread, state, status,
    entries, apps and usage, and the usage of them all."""
    return {"system": status.name, "agents": [
        {"name": a.name, "thread": a.thread_id, "state": a.state.value, **status_json(a.task),
         "entries": [entry_json(e) for e in a.entries], "apps": apps_json(a.app_histories, a.apps),
         "usage": usage_json(a.usage)}
        for a in status.agents], "usage": usage_json(status.usage)}


def _watched(system: System, bp: SystemBlueprint) -> list[Watched]:
    """Each agent of ``system`` for a live view: its budget, its turns' ``max_steps`` and the
    inputs this run gives it (from ``bp``)."""
    budgets = {a.name: a.blueprint.settings.budget for a in bp.agents}
    return [Watched(agent.name, agent.actors, budgets[agent.name], agent.address.max_steps,
                    sum(1 for text in (*agent.pins, *agent.inputs) if text.strip()))
            for agent in system.agents.values()]


@contextlib.asynccontextmanager
async def _watching(system: System, console: Console | None) -> AsyncIterator[None]:
    """Print each agent's engine events and notifications as a transcript while the block runs."""
    if console is None:
        yield
        return
    async with trio.open_nursery() as nursery:
        for agent in system.agents.values():
            view = _AgentTranscript(console, agent.thread_id, show_transitions=False)
            await nursery.start(_pump, system, agent.actors.events, view)
            await nursery.start(_pump, system, agent.actors.history_events, view)
        yield
        nursery.cancel_scope.cancel()


async def _pump(system: System, topic: Topic, view: Transcript,
                task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    async with system.runtime.open_subscription(topic, buffer=1024) as events:
        task_status.started()
        try:
            async for env in events:
                view(env.payload)
        finally:  # cancelled once the run is over: what is still buffered was published before
            while True:
                try:
                    view(events.receive_nowait().payload)
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break


class _AgentTranscript(Transcript):
    """A transcript line per event, its model named after its thread (several agents talk)."""

    def _line(self, actor: str, text: str) -> None:
        super()._line(f"model/{self.thread_id}" if actor == "model" else actor, text)

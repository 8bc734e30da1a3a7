"""``livecontext run``, ``demo`` and ``chat``."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs
import click
import trio
from rich.console import Console
from rich.markup import escape

from livecontext.protocol.agent import IdleReason, InputMode, ProvideInput, Resume, RunUntilIdle

from livecontext.runtime import Runtime, UsageError
from livecontext.runtime.persistence import default_store_url

from ..mcp import McpServerError, mcp_servers, parse_mcp_flag
from ..agent import check_thread_id
from ..agent import Session, Stopped, open_events_file, run_until_idle, stop_interrupted
from ..agent import AppRebuildError, ToolImportError
from ..blueprint import AppUse, Blueprint, SystemBlueprint, load_any_blueprint
from ..front import AgentSpec, OpenedAgent, open_agent_from
from ..spend import SpendLimits, override_limits
from ._chat import chat as run_chat
from ._demo import run_demo
from ._live import LiveView, open_live_view
from ._live_gauge import Watched
from ._interrupt import interrupting, resume_command, say_interrupted
from ._resumed import given_flags
from ._main import folder_note, import_from_cwd, main, print_json, run_async, store_option
from ._system_run import run_system
from ._transcript import Transcript


def model_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose a model: ``--model``, ``--base-url``, ``--api-key``."""
    fn = click.option("--api-key", default=None, help="API key (default: $OPENAI_API_KEY).")(fn)
    fn = click.option("--base-url", default=None, help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL).")(fn)
    fn = click.option("--model", "model_spec", default="echo", show_default=True, metavar="SPEC",
                      help="echo, scripted:PATH or openai:MODEL.")(fn)
    return fn


@main.command()
@model_options
@store_option
@click.option("--thread", "thread_id", default="main", show_default=True, help="Thread id (resumed if it exists).")
@click.option("--input", "inputs", multiple=True, metavar="TEXT",
              help="Input, fed each time the engine waits for input (repeatable); NAME=TEXT feeds agent NAME of a system.")
@click.option("--pin", "pins", multiple=True, metavar="TEXT",
              help="A pinned input: never folded, always in the context (repeatable; fed before --input).")
@click.option("--input-mode", "input_mode", type=click.Choice(["queue", "interrupt", "terminate", "silent"]),
              default="queue", show_default=True,
              help="What the --input texts do to a thread stopped in the middle of its work: wait their turn "
                   "(queue), be taken before that work ends (interrupt), end the task with the text as reason "
                   "(terminate), or be recorded for the model's next call and take no step (silent).")
@click.option("--no-pin-task", "no_pin_task", is_flag=True,
              help="Do not pin the thread's first input (by default the task stays in every context).")
@click.option("--cut-oversized", "cut_oversized", is_flag=True,
              help="Take a pinned input (--pin, the task) larger than the budget leaves for it and send it "
                   "cut to its head and tail (by default it is refused).")
@click.option("--no-lifecycle", "no_lifecycle", is_flag=True,
              help="Do not offer the model the control tools (task_complete, task_abandon, output, wait_user_response).")
@click.option("--system", "system_prompt", default=None, help="System prompt.")
@click.option("--tool", "tools", multiple=True, metavar="MODULE:FUNCTION",
              help="A function offered as a tool (repeatable; the current folder is importable).")
@click.option("--app", "app_paths", multiple=True, metavar="MODULE:CLASS",
              help="An app, by import path, `notebook` or `subagents` (repeatable; replaces the default notebook).")
@click.option("--mcp", "mcp_flags", multiple=True, metavar="NAME=CMD",
              help="An MCP server whose tools are offered: NAME=COMMAND (stdio; split as a shell would) or "
                   "NAME=URL (streamable HTTP) (repeatable; a resumed thread keeps its own).")
@click.option("--budget", default=8000, show_default=True, type=click.IntRange(min=1), help="Token budget per model call.")
@click.option("--max-steps", default=None, type=click.IntRange(min=1), help="Stop after this many steps.")
@click.option("--max-input-tokens", default=None, type=click.IntRange(min=1), metavar="N",
              help="Spend limit: stop before a model call that would take the input tokens sent past N.")
@click.option("--max-output-tokens", default=None, type=click.IntRange(min=1), metavar="N",
              help="Spend limit: make no model call once N output tokens were received.")
@click.option("--max-cost", default=None, type=click.FloatRange(min=0, min_open=True), metavar="X",
              help="Spend limit: stop before a model call that would take the cost past X (priced per model; "
                   "[spend.prices] in a blueprint).")
@click.option("--snapshot-every", default=1000, show_default=True, type=click.IntRange(min=0), metavar="N",
              help="Snapshot the thread's state every N log records (0: never); opening replays at most N.")
@click.option("--events", "events_path", default=None, type=click.Path(dir_okay=False, writable=True), help="Append each engine event as a JSON line to PATH.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: thread, state, entries, apps.")
@click.option("--live", is_flag=True,
              help="Show a panel per agent that follows the run (plain lines when not on a terminal).")
@click.option("--as", "as_system", default=None, metavar="NAME",
              help="Run a system blueprint as system NAME (a fork made by `fork --system`).")
@click.argument("blueprint_path", metavar="[BLUEPRINT.toml]", required=False)
@click.pass_context
def run(ctx: click.Context, blueprint_path: str | None, model_spec: str, base_url: str | None,
        api_key: str | None, store_url: str, thread_id: str,
        inputs: tuple[str, ...], pins: tuple[str, ...], input_mode: str, no_pin_task: bool, cut_oversized: bool,
        no_lifecycle: bool,
        system_prompt: str | None, tools: tuple[str, ...], app_paths: tuple[str, ...], mcp_flags: tuple[str, ...],
        budget: int, max_steps: int | None, max_input_tokens: int | None, max_output_tokens: int | None,
        max_cost: float | None, snapshot_every: int, events_path: str | None,
        as_json: bool, live: bool, as_system: str | None) -> None:
    """Run an agent until it waits for input and none is left (or --max-steps).

    BLUEPRINT.toml (optional; docs/blueprints.md) describes the agent; flags given on the
    command line override its values (--input replaces its inputs). A blueprint with
    [[agents]] describes a system of agents: every agent with inputs runs, and
    --input NAME=TEXT feeds agent NAME (docs/systems.md).

    --max-input-tokens, --max-output-tokens and --max-cost (or [spend]) stop the agent, paused,
    before the model call that would pass them; run again with a higher limit to go on.

    A tool call that needs a person's approval stops the run (exit 0, status waiting_approval):
    the command to decide each call is printed (`livecontext approve` / `deny`).
    """
    spend_override = _spend_override(max_input_tokens, max_output_tokens, max_cost)
    try:
        if blueprint_path is None:
            _no_system_name(as_system, "an agent without a blueprint")
        typed = {name for name in ctx.params
                 if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
        bp = None
        if blueprint_path is not None:
            loaded = load_any_blueprint(blueprint_path)
            if isinstance(loaded, SystemBlueprint):
                loaded = loaded.override(spend=override_limits(
                    loaded.spend, max_input_tokens=max_input_tokens, max_output_tokens=max_output_tokens,
                    max_cost=max_cost))
                run_system(loaded, {name: ctx.params[name] for name in typed}, base_url=base_url, api_key=api_key,
                           as_json=as_json, live=live)
                return
            _no_system_name(as_system, blueprint_path)
            bp = loaded
        spec = cli_spec(ctx, bp, thread=thread_id, model=model_spec, store=store_url, system_prompt=system_prompt,
                        budget=budget, no_pin_task=no_pin_task, no_lifecycle=no_lifecycle,
                        spend_override=spend_override)
        flags: dict[str, Any] = {"inputs": inputs, "pins": pins, "max_steps": max_steps,
                                 "snapshot_every": snapshot_every}  # (a blueprint's, unless typed)
        if mcp_flags:
            flags["mcp"] = mcp_servers([*spec.mcp, *(parse_mcp_flag(m) for m in mcp_flags)])
        spec = attrs.evolve(spec, **_flag_apps(app_paths, tools, spec), cut_oversized=cut_oversized,
                            **{name: value for name, value in flags.items()
                               if bp is None or name in typed or name == "mcp"})
    except UsageError as exc:
        click.echo(f"livecontext: error: {exc}", err=True)
        sys.exit(1)
    run_agent(spec, base_url=base_url, api_key=api_key, events_path=events_path, as_json=as_json, live=live,
              input_mode=InputMode(input_mode))


def run_agent(spec: AgentSpec, *, base_url: str | None = None, api_key: str | None = None,
              events_path: str | None = None, as_json: bool = False, live: bool = False,
              before: Callable[[Session], Awaitable[None]] | None = None,
              input_mode: InputMode = InputMode.QUEUE) -> None:
    """What ``run`` does with one agent's ``spec``: open it, run it until it waits (with a
    transcript, ``--json``'s summary or a live view), say where it stopped, exit 1 if its
    last step failed. ``before`` is called once the thread is open, before the run (what
    ``approve`` and ``deny`` record first); the spec's inputs are given with ``input_mode``."""
    console = Console(stderr=as_json)
    thread_id, max_steps, store_url = spec.thread, spec.max_steps, str(spec.store)
    made_folder = folder_note(store_url)
    resume = resume_command("run", thread_id, store_url)
    interrupt = interrupting(thread_id, store_url, resume)

    async def go() -> None:
        import_from_cwd()  # --tool/--app and recorded apps import from here too
        made_events = events_path is not None and not os.path.exists(events_path)
        events_file = open_events_file(events_path) if events_path else None  # (before the thread)
        stopped: Stopped | None = None
        opened_thread = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                opened = await _open(stack, spec, base_url, api_key, input_mode)
                opened_thread = True
                session = opened.session
                for note in ([made_folder] if made_folder else []) + [*opened.notes, *opened.changed]:
                    click.echo(f"livecontext: note: {note}", err=True)  # (once the thread is ours)
                if before is not None:
                    await before(session)
                since = await session.log.last_seq()  # (what is fed is taken by the run below)
                fed = () if session.held_inputs else (*spec.pins, *spec.inputs)
                watched = Watched(thread_id, session.agent, opened.settings.budget, max_steps,
                                  sum(1 for text in fed if text.strip()))
                async with _watching(live, session.rt, watched, console) as view:
                    with interrupt.region():
                        idle = await run_until_idle(
                            session, max_steps, None if as_json or live else Transcript(console, thread_id), events_file)
                    if interrupt.caught:
                        stopped = await stop_interrupted(session, fed, since)
                    elif view is not None:
                        view.stopped(thread_id, idle.reason_text)
                if not interrupt.caught:
                    summary = await session.summary()
        finally:
            if events_file is not None:
                events_file.close()
                if made_events and not opened_thread:  # (a bad --app, a store refused: leave no file)
                    assert events_path is not None
                    os.unlink(events_path)
        if stopped is not None:
            say_interrupted(thread_id, stopped, resume)
        if as_json:
            print_json({**summary, "cut": [cut.note for cut in idle.cut]})
        else:
            console.print(f"[dim]thread {thread_id} is {idle.state.value} after {idle.steps} steps ({escape(idle.reason_text)}); "
                          f"store {store_url}[/dim]")
            for cut in idle.cut:  # (what was not sent whole is said, once the run is over)
                console.print(f"[yellow]{escape(cut.note)}[/yellow]", highlight=False, soft_wrap=True)
            for line in approval_lines(thread_id, store_url, summary.get("approvals", ())):
                console.print(escape(line), highlight=False, soft_wrap=True)
        if idle.reason is IdleReason.FAILED:
            click.echo(f"livecontext: error: {idle.reason_text}", err=True)
            sys.exit(1)

    run_async(go, interrupt)


def approval_lines(thread_id: str, store_url: str, approvals: Sequence[Mapping[str, str]]) -> list[str]:
    """One line per call waiting for approval (``state --json``'s ``approvals``), with the
    commands that decide it."""
    store = "" if store_url == default_store_url() else f" --store {store_url}"
    return [f"{a['name']}({a['arguments']}) call {a['id']} waits for approval: "
            f"livecontext approve --thread {thread_id}{store} {a['id']}  (or: livecontext deny --thread "
            f"{thread_id}{store} {a['id']} --reason TEXT)" for a in approvals]


def cli_spec(ctx: click.Context, bp: Blueprint | None, *, thread: str, model: str, store: str,
             system_prompt: str | None, budget: int, no_pin_task: bool, no_lifecycle: bool,
             spend_override: SpendLimits | None = None) -> AgentSpec:
    """The agent ``run`` and ``chat`` build: ``bp``'s (every setting given by it), else one
    whose settings not typed are a resumed thread's recorded ones; the flags typed on the
    command line in place of its values, each change said with its flag (``--budget``).

    Raises:
        UsageError: a value is not usable (the message names it).
    """
    typed = {name for name in ctx.params if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
    spec = AgentSpec.from_blueprint(bp) if bp is not None else AgentSpec(thread=thread, store=store)
    values: dict[str, Any] = {"thread": thread, "model": model, "system_prompt": system_prompt, "budget": budget,
                              "store": store}
    given: dict[str, Any] = {name: values[name] for name, param in _PARAMS.items() if param in typed}
    if no_pin_task:
        given["pin_task"] = False
    if no_lifecycle:
        given["lifecycle"] = False
    made = spec.given(**given)
    return attrs.evolve(made, spend_override=spend_override, store=made.store if made.store is not None else store,
                        given_by={**made.given_by, **given_flags(ctx)})


_PARAMS = {"thread": "thread_id", "model": "model_spec", "system_prompt": "system_prompt", "budget": "budget",
           "store": "store_url"}
"""The spec's fields ``run`` and ``chat`` have a flag for (beside the flags of switches), by parameter."""


def _spend_override(max_input_tokens: int | None, max_output_tokens: int | None,
                    max_cost: float | None) -> SpendLimits | None:
    """The spend flags' limits (``None``: none typed)."""
    if max_input_tokens is None and max_output_tokens is None and max_cost is None:
        return None
    return SpendLimits(max_input_tokens, max_output_tokens, max_cost)


async def _open(stack: contextlib.AsyncExitStack, spec: AgentSpec, base_url: str | None,
                api_key: str | None, input_mode: InputMode = InputMode.QUEUE) -> OpenedAgent:
    """The agent ``spec`` describes, opened on ``stack``; a recorded app that cannot be made
    again is one error line (and exit 1)."""
    try:
        return await stack.enter_async_context(open_agent_from(spec, base_url=base_url, api_key=api_key,
                                                               input_mode=input_mode))
    except ToolImportError as exc:
        click.echo(f"livecontext: error: {exc}", err=True)
        sys.exit(1)
    except AppRebuildError as exc:
        click.echo(f"livecontext: error: {exc}; or give its apps with --app/--tool", err=True)
        sys.exit(1)
    except McpServerError as exc:
        click.echo(f"livecontext: error: {exc}", err=True)
        sys.exit(1)


def _watching(live: bool, rt: Runtime, watched: Watched,
              console: Console) -> contextlib.AbstractAsyncContextManager[LiveView | None]:
    """A live view of the agent while the block runs, if ``--live`` (else nothing)."""
    return open_live_view(rt, [watched], console) if live else contextlib.nullcontext()


def _thread_id(thread_id: str) -> str:
    """``thread_id`` if it is valid, else one error line and exit 1."""
    try:
        return check_thread_id(thread_id)
    except UsageError as exc:
        click.echo(f"livecontext: error: {exc}", err=True)
        sys.exit(1)


def _no_system_name(as_system: str | None, what: str) -> None:
    if as_system is not None:
        raise UsageError(f"--as names the system a system blueprint ([[agents]]) runs as; {what} describes one agent")


def _flag_apps(app_paths: tuple[str, ...], tools: tuple[str, ...], spec: AgentSpec) -> dict[str, Any]:
    """What ``--app`` and ``--tool`` change of ``spec``: ``--app`` replaces its apps (and the
    tools that come with them), ``--tool`` adds to its tools."""
    if app_paths:
        return {"apps": tuple(AppUse(p) for p in app_paths), "tools": tools}
    return {"tools": (*spec.tools, *tools)} if tools else {}


@main.command()
@store_option
@click.option("--thread", "thread_id", default=None, help="Thread id (default: demo-<time>).")
def demo(store_url: str, thread_id: str | None) -> None:
    """Run the offline demo: a scripted agent, its notebook, an analyzer's notification."""
    tid = _thread_id(thread_id or dt.datetime.now().strftime("demo-%Y%m%d-%H%M%S"))
    made_folder = folder_note(store_url)

    async def go() -> None:
        def opened() -> None:
            if made_folder:
                click.echo(f"livecontext: note: {made_folder}", err=True)
        idle = await run_demo(store_url, tid, Console(), opened)
        if idle.reason is IdleReason.FAILED:
            click.echo(f"livecontext: error: {idle.reason_text}", err=True)
            sys.exit(1)

    run_async(go)


@main.command()
@model_options
@store_option
@click.option("--thread", "thread_id", default="chat", show_default=True, help="Thread id (resumed if it exists).")
@click.option("--system", "system_prompt", default=None, help="System prompt.")
@click.option("--budget", default=8000, show_default=True, type=click.IntRange(min=1),
              help="Token budget per model call.")
@click.option("--no-pin-task", "no_pin_task", is_flag=True,
              help="Do not pin the thread's first input (by default the task stays in every context).")
@click.option("--no-lifecycle", "no_lifecycle", is_flag=True,
              help="Do not offer the model the control tools (task_complete, task_abandon, output, wait_user_response).")
@click.option("--cut-oversized", "cut_oversized", is_flag=True,
              help="Take a task larger than the budget leaves for it and send it cut to its head and tail "
                   "(by default it is refused).")
@click.option("--live", is_flag=True,
              help="Follow each turn with a live panel (answers shown whole; plain lines when not on a terminal).")
@click.pass_context
def chat(ctx: click.Context, model_spec: str, base_url: str | None, api_key: str | None, store_url: str, thread_id: str,
         system_prompt: str | None, budget: int, no_pin_task: bool, no_lifecycle: bool, cut_oversized: bool,
         live: bool) -> None:
    """Chat with an agent in the terminal (a real model with --model openai:MODEL).

    A line typed at the prompt starts a turn. While the agent works, Enter interrupts it with
    your line (the model call or tool in flight is cut, and your line is its next input); a
    line that starts with + is queued, for when the agent waits again. Lines piped in before
    a turn began are answered one by one. A thread resumes with the model it ran with, unless
    --model says otherwise.
    """
    try:
        spec = attrs.evolve(cli_spec(ctx, None, thread=thread_id, model=model_spec, store=store_url,
                                     system_prompt=system_prompt, budget=budget, no_pin_task=no_pin_task,
                                     no_lifecycle=no_lifecycle), cut_oversized=cut_oversized)
    except UsageError as exc:
        click.echo(f"livecontext: error: {exc}", err=True)
        sys.exit(1)
    made_folder = folder_note(store_url)
    resume = resume_command("chat", thread_id, store_url)
    interrupt = interrupting(thread_id, store_url, resume)

    def opened() -> None:
        if made_folder:
            click.echo(f"livecontext: note: {made_folder}", err=True)

    code = run_async(lambda: run_chat(spec, base_url=base_url, api_key=api_key, interrupt=interrupt, resume=resume,
                                      on_open=opened, live=live), interrupt)
    sys.exit(code)

"""``livecontext run``, ``demo`` and ``chat``."""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
from collections.abc import Callable
from typing import Any

import attrs
import click
import trio
from rich.console import Console
from rich.markup import escape

from livecontext.protocol.agent import IdleReason, ProvideInput, Resume, RunUntilIdle

from livecontext.runtime import Runtime, UsageError

from livecontext.protocol.records import ThreadConfigured

from ..agent import AgentSettings
from ..agent import SETTINGS, changed_settings, resumed_settings
from ..agent import check_thread_id
from ..agent import Stopped, open_events_file, open_session, recorded_config, run_until_idle, stop_interrupted
from ..agent import AppRebuildError, ToolImportError, make_recorded_app
from ..apps import App, AppDefinitionError, FunctionTools, Notebook, ToolDefinitionError
from ..blueprint import AppUse, Blueprint, SystemBlueprint, load_any_blueprint, open_blueprint_models
from ..spend import SpendLimits, override_limits
from ._chat import chat as run_chat
from ._demo import run_demo
from ._live import LiveView, open_live_view
from ._live_gauge import Watched
from ._interrupt import interrupting, resume_command, say_interrupted
from ._resumed import given_flags, recorded_side_models, side_specs
from ._main import folder_note, import_from_cwd, main, print_json, run_async, store_option
from ._system_run import run_system
from ._transcript import ChatView, Transcript


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
@click.option("--no-pin-task", "no_pin_task", is_flag=True,
              help="Do not pin the thread's first input (by default the task stays in every context).")
@click.option("--cut-oversized", "cut_oversized", is_flag=True,
              help="Take a pinned input (--pin, the task) larger than the budget leaves for it and send it "
                   "cut to its head and tail (by default it is refused).")
@click.option("--no-lifecycle", "no_lifecycle", is_flag=True,
              help="Do not offer the model the control tools task_complete and wait_user_response.")
@click.option("--system", "system_prompt", default=None, help="System prompt.")
@click.option("--tool", "tools", multiple=True, metavar="MODULE:FUNCTION",
              help="A function offered as a tool (repeatable; the current folder is importable).")
@click.option("--app", "app_paths", multiple=True, metavar="MODULE:CLASS",
              help="An app, by import path, `notebook` or `subagents` (repeatable; replaces the default notebook).")
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
        inputs: tuple[str, ...], pins: tuple[str, ...], no_pin_task: bool, cut_oversized: bool, no_lifecycle: bool,
        system_prompt: str | None, tools: tuple[str, ...], app_paths: tuple[str, ...],
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
    """
    bp: Blueprint | None = None
    try:
        if blueprint_path is None:
            _no_system_name(as_system, "an agent without a blueprint")

        def limited(given: SpendLimits | None) -> SpendLimits | None:
            """``given`` with the spend flags' limits in place of its own."""
            return override_limits(given, max_input_tokens=max_input_tokens, max_output_tokens=max_output_tokens,
                                   max_cost=max_cost)

        settings = AgentSettings(thread_id=check_thread_id(thread_id), budget=budget, system_prompt=system_prompt,
                                 snapshot_every=snapshot_every, pin_task=not no_pin_task,
                                 lifecycle=not no_lifecycle, spend=limited(None))
        if blueprint_path is not None:
            given = {name: value for name, value in ctx.params.items()
                     if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
            loaded = load_any_blueprint(blueprint_path)
            if isinstance(loaded, SystemBlueprint):
                loaded = loaded.override(spend=limited(loaded.spend))
                run_system(loaded, given, base_url=base_url, api_key=api_key, as_json=as_json, live=live)
                return
            _no_system_name(as_system, blueprint_path)
            bp = loaded.override(
                model=given.get("model_spec"), store=given.get("store_url"), thread=given.get("thread_id"),
                inputs=given.get("inputs"), system_prompt=given.get("system_prompt"),
                budget=given.get("budget"), max_steps=given.get("max_steps"), pins=given.get("pins"),
                pin_task=False if no_pin_task else None, lifecycle=False if no_lifecycle else None)
            settings, model_spec, thread_id = bp.settings, bp.model, bp.settings.thread_id
            settings = attrs.evolve(settings, spend=limited(settings.spend))
            inputs, pins, max_steps, store_url = bp.inputs, bp.pins, bp.max_steps, bp.store or store_url
            if "snapshot_every" in given:
                settings = attrs.evolve(settings, snapshot_every=snapshot_every)
    except UsageError as exc:
        click.echo(f"livecontext: error: {exc}", err=True)
        sys.exit(1)
    console = Console(stderr=as_json)
    model_given = ctx.get_parameter_source("model_spec") is click.core.ParameterSource.COMMANDLINE
    made_folder = folder_note(store_url)
    resume = resume_command("run", thread_id, store_url)
    interrupt = interrupting(thread_id, store_url, resume)

    async def go() -> None:
        nonlocal model_spec, settings
        import_from_cwd()  # --tool/--app and recorded apps import from here too
        try:
            apps = _flag_apps(app_paths, tools, bp)
            recorded = await recorded_config(store_url, thread_id)
        except (UsageError, AppDefinitionError, ToolDefinitionError) as exc:
            click.echo(f"livecontext: error: {exc}", err=True)
            sys.exit(1)
        events_file = open_events_file(events_path) if events_path else None  # (before the thread)
        notes = [made_folder] if made_folder else []
        side_models = bp
        if recorded is not None:  # a thread resumes as it was, unless told otherwise
            model_spec, apps = _resume_as_recorded(recorded, thread_id, model_spec if model_given or bp else None,
                                                   apps, notes)
            try:
                settings, side_models = _resume_settings(ctx, recorded, settings, bp, limited, notes)
            except UsageError as exc:
                click.echo(f"livecontext: error: {exc}", err=True)
                sys.exit(1)
        stopped: Stopped | None = None
        try:
            async with open_blueprint_models(side_models, base_url=base_url, api_key=api_key) as side, \
                    open_session(store_url, settings, model_spec, inputs=inputs, pins=pins, base_url=base_url,
                                 api_key=api_key, apps=apps, cut_oversized=cut_oversized,
                                 recap_model=side.recap, analyzer_models=side.analyzers,
                                 side_specs=side_specs(side_models)) as session:
                for note in notes:  # (once the thread is ours: a busy thread says only that)
                    click.echo(f"livecontext: note: {note}", err=True)
                since = await session.log.last_seq()  # (what is fed is taken by the run below)
                fed = () if session.held_inputs else (*pins, *inputs)
                watched = Watched(thread_id, session.agent, settings.budget, max_steps,
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
        if stopped is not None:
            say_interrupted(thread_id, stopped, resume)
        if as_json:
            print_json({**summary, "cut": [cut.note for cut in idle.cut]})
        else:
            console.print(f"[dim]thread {thread_id} is {idle.state.value} after {idle.steps} steps ({escape(idle.reason_text)}); "
                          f"store {store_url}[/dim]")
            for cut in idle.cut:  # (what was not sent whole is said, once the run is over)
                console.print(f"[yellow]{escape(cut.note)}[/yellow]", highlight=False, soft_wrap=True)
        if idle.reason is IdleReason.FAILED:
            click.echo(f"livecontext: error: {idle.reason_text}", err=True)
            sys.exit(1)

    run_async(go, interrupt)


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


def _flag_apps(app_paths: tuple[str, ...], tools: tuple[str, ...], bp: Blueprint | None) -> list[App] | None:
    """The apps ``--app`` and ``--tool`` name (``None``: none given, the default apps)."""
    if not app_paths and not tools:
        return None if bp is None else bp.make_apps()
    apps: list[App] = [AppUse(p).make() for p in app_paths] if app_paths else (
        [Notebook()] if bp is None else bp.make_apps())
    if tools:
        apps.append(FunctionTools(tools))
    return apps


def _resume_settings(ctx: click.Context, recorded: ThreadConfigured, settings: AgentSettings,
                     bp: Blueprint | None, limited: Callable[[SpendLimits | None], SpendLimits | None],
                     notes: list[str]) -> tuple[AgentSettings, Blueprint | None]:
    """The settings a resumed thread runs with: those typed and the blueprint's, else the
    recorded ones (spend flags change the recorded limits they name); each change is added to
    ``notes``. Also what to open the side models from: the blueprint, else the recorded specs.

    Raises:
        UsageError: a recorded setting is not usable.
    """
    flags = given_flags(ctx)
    given = {name: f"blueprint {bp.path}" for name in SETTINGS} if bp is not None else {}
    given.update(flags)
    settings = resumed_settings(recorded, settings, {name for name in given if name != "spend" or bp is not None})
    if bp is None and "spend" in flags:
        settings = attrs.evolve(settings, spend=limited(settings.spend))
    notes.extend(changed_settings(recorded, settings, given))
    return settings, bp if bp is not None else recorded_side_models(recorded, settings)


def _resume_as_recorded(recorded: ThreadConfigured, thread_id: str, model_spec: str | None,
                        apps: list[App] | None, notes: list[str]) -> tuple[str, list[App] | None]:
    """The model spec and apps a resumed thread runs with: what it recorded, for what the
    command line does not give; a change is added to ``notes`` (said once the run starts)."""
    spec = model_spec if model_spec is not None else (recorded.model or "echo")
    if recorded.model and spec != recorded.model:
        notes.append(f"thread {thread_id} ran with model {recorded.model}; it now runs with {spec}")
    if apps is None and recorded.apps:
        try:
            apps = [make_recorded_app(thread_id, info) for info in recorded.apps]
        except ToolImportError as exc:
            click.echo(f"livecontext: error: {exc}", err=True)
            sys.exit(1)
        except AppRebuildError as exc:
            click.echo(f"livecontext: error: {exc}; or give its apps with --app/--tool", err=True)
            sys.exit(1)
    elif apps is not None and recorded.apps:
        was = [info.name for info in recorded.apps]
        now = [app.name for app in apps]
        if was != now:
            notes.append(f"thread {thread_id} had apps {', '.join(was)}; it now has {', '.join(now)}")
    return spec, apps


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
              help="Do not offer the model the control tools task_complete and wait_user_response.")
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

    Each line is answered before the next is read. A thread resumes with the model it ran
    with, unless --model says otherwise.
    """
    settings = AgentSettings(thread_id=_thread_id(thread_id), budget=budget, system_prompt=system_prompt,
                             pin_task=not no_pin_task, lifecycle=not no_lifecycle)
    made_folder = folder_note(store_url)
    resume = resume_command("chat", thread_id, store_url)
    interrupt = interrupting(thread_id, store_url, resume)

    def opened() -> None:
        if made_folder:
            click.echo(f"livecontext: note: {made_folder}", err=True)

    given = ctx.get_parameter_source("model_spec") is click.core.ParameterSource.COMMANDLINE
    code = run_async(lambda: run_chat(store_url, settings, model_spec if given else None, base_url=base_url, api_key=api_key,
                                      interrupt=interrupt, resume=resume, on_open=opened, live=live,
                                      cut_oversized=cut_oversized, given=given_flags(ctx)), interrupt)
    sys.exit(code)

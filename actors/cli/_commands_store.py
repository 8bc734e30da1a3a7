"""Looking into a store: ``threads``, ``history``, ``state``, ``audit``, ``render``, ``fork``.

None of them needs the user's code: ``threads``, ``history`` and ``audit`` import nothing and
list an app's effects this process cannot decode as stored (under ``undecoded``, with what to
import to decode them). ``render`` and ``state`` import from the current folder, as ``run``
does: each app whose class can be imported is made again and rebuilt from its effects; one
that cannot is shown as its thread recorded its window and state (``AppWindowsRecorded``,
and ``AppWindowsChanged`` after it), with a note. ``render`` fails, in one line, only for an app that cannot be made here and
whose window was never recorded (no model call saw it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from livecontext.protocol.agent import NotificationPosted
from livecontext.protocol.context import AccessDenied, EntriesFolded, HistoryEdited
from livecontext.protocol.kernel import Message
from livecontext.protocol.mcp import McpServerRestarted
from livecontext.protocol.records import (
    ApprovalDecided,
    ApprovalRequested,
    AppEffect,
    AppWindowsChanged,
    AppWindowsRecorded,
    ContextCompacted,
    EnginePaused,
    StepInterrupted,
    TaskTerminated,
    EntryAppended,
    StepFailed,
    SystemPromptSet,
    ThreadConfigured,
    ToolResultRecorded,
    ToolResultsAppended,
    ToolStarted,
    UndecodedEffect,
    app_effect_of,
)
from livecontext.protocol.system import SystemDeclared
from livecontext.protocol.wire import ProtocolConverter, ProtocolError, UnsupportedSchemaVersionError, make_converter
from livecontext.runtime import UsageError
from livecontext.runtime.persistence import (
    CorruptRecordError,
    Damage,
    EventStore,
    StoreCorruptError,
    StoreCheck,
    ThreadNotFoundError,
    ThreadReader,
    open_store,
    read_past_damage,
    verify_store,
)
from livecontext.runtime.tokens import TokenCounter

from livecontext.protocol.history import ModelOutputEntry, Shown, id_number

from ..agent import parent_thread_id
from ..system import SYSTEM_LOG_PREFIX, check_system_name, fork_system
from ..history import (
    ContextPolicy,
    HistoryState,
    StableRenderer,
    load_state,
    render_state,
    replay_app_effects,
    restore_frame,
)
from ..agent import apps_json, chat_json, entry_json, status_json, tool_json, undecoded_json, usage_json
from ..agent import StoreMissingError, open_existing_store
from ._main import import_from_cwd, main, print_json, run_async, store_option

if TYPE_CHECKING:
    from ..agent import ShownApps
    from ..apps import App


class SeqPastEndError(UsageError):
    """``--at`` names a seq the thread has not reached."""


class ThreadMissingError(UsageError):
    """An inspection command named a thread the store does not hold (nothing is created)."""

    def __init__(self, thread_id: str, store_url: str) -> None:
        self.thread_id = thread_id
        self.store_url = store_url
        super().__init__(
            f"thread {thread_id!r} does not exist in {store_url}; "
            f"`livecontext threads --store {store_url}` lists its threads"
        )


async def _open_reader(store: EventStore, thread_id: str) -> ThreadReader:
    try:
        return await store.open_reader(thread_id)
    except ThreadNotFoundError:
        raise ThreadMissingError(thread_id, store.url) from None


@asynccontextmanager
async def _reader(store_url: str, thread_id: str) -> AsyncIterator[ThreadReader]:
    store = await open_existing_store(store_url)
    async with store:
        reader = await _open_reader(store, thread_id)
        async with reader:
            yield reader


async def _state_at(reader: ThreadReader, converter: ProtocolConverter, thread_id: str,
                    at: int | None) -> HistoryState:
    last = await reader.last_seq()
    if at is not None and at > last:
        raise SeqPastEndError(f"--at {at} is past the end of thread {thread_id}: its last seq is {last}")
    return await load_state(reader, converter, thread_id, at)


def _summary(state: HistoryState, shown: ShownApps | None) -> dict[str, Any]:
    from ..agent import thread_apps  # (the apps' modules, pydantic: only where apps are named)

    apps = apps_json(state.app_histories(), tuple(a.name for a in thread_apps(state)))
    if shown is not None:  # (a user app's state, as its code or its recorded window gives it)
        apps.update((name, text) for name, text in shown.states.items() if text is not None)
    return {
        "state": state.state.value,
        **status_json(state.status),
        "entries": len(state.entries),
        "pending_tool_results": len(state.recorded),
        "apps": apps,
        "seq": state.seq,
        **_undecoded(state, shown.rebuilt if shown is not None else frozenset()),
    }


def _undecoded(state: HistoryState, decoded: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``{"undecoded": [...]}`` if the thread holds effects this process cannot decode (of
    apps other than those ``decoded``: made here, their effects decoded by their code)."""
    undecoded = [u for u in undecoded_json(state.app_histories()) if u["app"] not in decoded]
    return {"undecoded": undecoded} if undecoded else {}


async def _shown_or_none(reader: ThreadReader, converter: ProtocolConverter, state: HistoryState) -> ShownApps | None:
    """The apps as :func:`shown_apps` gives them, or ``None`` where they cannot be shown
    (``state`` then says what it can without them)."""
    from ..agent import AppRebuildError, shown_apps  # (the apps' modules: only where apps are shown)

    async def replay(app: str) -> tuple[AppEffect, ...]:
        return await replay_app_effects(reader, converter, app, state.seq)
    try:
        return await shown_apps(state, converter, replay)
    except AppRebuildError:
        return None


thread_option = click.option("--thread", "thread_id", required=True, help="Thread id.")
at_option = click.option("--at", type=click.IntRange(min=0), default=None, help="As of this seq (default: the end).")
json_option = click.option("--json", "as_json", is_flag=True, help="JSON output (the default for this command).")
readable_json_option = click.option("--json", "as_json", is_flag=True,
                                    help="JSON for scripts (default: readable text; plain, without colour, in a pipe).")


@main.command()
@store_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per thread, one per line.")
def threads(store_url: str, as_json: bool) -> None:
    """List threads with entry count, state, status and last activity.

    A damaged thread is listed too, with a note naming the damage and the command that shows
    it (``"damaged"`` in the JSON); the others are listed as usual, and the command exits 1
    once the whole listing is printed (as ``verify`` does: the output is complete, the status
    says something needs attention).
    """
    async def go() -> tuple[list[dict[str, Any]], int]:
        converter = make_converter()
        store = await open_existing_store(store_url)
        rows, damaged = [], 0
        async with store:
            for info in await store.threads():
                system = info.thread_id.removeprefix(SYSTEM_LOG_PREFIX)
                row: dict[str, Any] = {"thread": info.thread_id}
                try:
                    reader = await store.open_reader(info.thread_id)
                    async with reader:
                        state = await load_state(reader, converter, info.thread_id)
                except READ_DAMAGE as exc:
                    damaged += 1
                    row |= {"seq": info.last_seq, "damaged": _damage_json(exc, store_url, info.thread_id)}
                else:
                    row |= {"entries": len(state.entries), "state": state.state.value,
                            "status": state.status.status.value, "seq": info.last_seq}
                row |= {"last_activity": info.last_activity.isoformat() if info.last_activity else None,
                        "forked_from": info.forked_from, "forked_at": info.forked_at,
                        "parent": parent_thread_id(info.thread_id),
                        **(_undecoded(state) if "damaged" not in row else {}),
                        **({"system": system} if system != info.thread_id else {})}
                rows.append(row)
        return rows, damaged

    rows, damaged = run_async(go)
    for row in rows:
        if as_json:
            print_json(row)
            continue
        if "damaged" in row:
            note = row["damaged"]
            click.echo(f"{row['thread']:<32} damaged: {note['what']}; `{note['shows']}` shows it")
            continue
        if "system" in row:
            click.echo(f"{row['thread']:<32} the log of system {row['system']} (its agents and origin)")
            continue
        parent = f"  (sub-agent of {row['parent']})" if row["parent"] else ""
        click.echo(f"{row['thread']:<32} {row['entries']:>6} entries  {row['state']:<20} "
                   f"{row['status']:<13} {row['last_activity']}{parent}")
        for u in row.get("undecoded", ()):
            click.echo(f"  effects {u['type']} of app {u['app']} are not decoded here ({u['decode']}); "
                       f"the latest: {_clip(json.dumps(u['latest'], ensure_ascii=False))}")
    if not rows and not as_json:
        click.echo(f"no threads in {store_url}")
    if damaged:
        click.echo(f"livecontext: error: {damaged} of {len(rows)} thread(s) cannot be read whole (listed with "
                   f"what is damaged); `livecontext verify --store {store_url}` lists every problem and what to do",
                   err=True)
        raise SystemExit(1)


READ_DAMAGE = (CorruptRecordError, UnsupportedSchemaVersionError, StoreCorruptError)
"""What reading a damaged thread raises: a record's damage, or the store file's below it."""


def _damage_json(exc: Exception, store_url: str, thread_id: str) -> dict[str, Any]:
    """A damaged thread's note: the seq (if known), what is wrong, and the command that shows it."""
    seq = getattr(exc, "seq", None)
    if isinstance(exc, CorruptRecordError):
        what = f"the {exc.what} at seq {exc.seq} is corrupt ({' '.join(exc.detail.split())})"
    elif isinstance(exc, StoreCorruptError):
        what = f"the store's file is damaged where it is kept ({' '.join(exc.detail.split())})"
    elif seq is not None:
        what = f"the record at seq {seq} has unsupported schema version {exc.version!r}"  # type: ignore[attr-defined]
    else:
        what = " ".join(str(exc).split())
    return {"seq": seq if isinstance(seq, int) and seq >= 1 else None, "what": what,
            "shows": f"livecontext verify --store {store_url} --thread {thread_id}"}


@main.command()
@store_option
@thread_option
@at_option
@click.option("--full", is_flag=True, help="Show long texts whole (default: shortened, saying how much was left out).")
@readable_json_option
def history(store_url: str, thread_id: str, at: int | None, full: bool, as_json: bool) -> None:
    """Print a thread's entries as a transcript: each entry's id and the seq that added it
    (for --at), kind, author and text (tool calls with their arguments, results with their
    status), folded ones marked.

    --json prints {"thread": ID, "seq": SEQ, "entries": [...]} on one line, texts whole.
    """
    from ._readable import print_history, readable_console  # (rich: only where it is drawn)

    async def go() -> None:
        converter = make_converter()
        async with _reader(store_url, thread_id) as reader:
            state = await _state_at(reader, converter, thread_id, at)
            seqs = {} if as_json else await _entry_seqs(reader, converter, state.seq)
        undecoded = _undecoded(state)
        if not as_json:
            print_history(readable_console(), thread_id, state.seq, state.entries, undecoded.get("undecoded", ()),
                          full=full, seqs=seqs)
            return
        print_json({"thread": thread_id, "seq": state.seq, "entries": [entry_json(e) for e in state.entries],
                    **undecoded})
    run_async(go)


_APPENDS = frozenset({"EntryAppended", "ToolResultsAppended", "EntriesFolded"})
"""The kinds of record that add an entry (a fold adds its recap)."""


async def _entry_seqs(reader: ThreadReader, converter: ProtocolConverter, upto: int) -> dict[str, int]:
    """The seq of the record that added each entry, up to seq ``upto`` (for the readable
    history: ``history --at SEQ`` and ``fork --at SEQ`` take them). The state may come from
    a snapshot, so the records are read for this alone; a damaged record costs the seqs, not
    the listing, and is said in one line."""
    try:
        records = await reader.read(1, upto) if upto else []
    except CorruptRecordError as exc:
        click.echo(f"livecontext: warning: entries shown without their seqs: {str(exc).splitlines()[0]}", err=True)
        return {}
    seqs: dict[str, int] = {}
    for rec in records:
        if rec.kind not in _APPENDS:
            continue
        try:
            message = converter.load_message(json.loads(rec.payload))
        except (ProtocolError, ValueError, RecursionError):
            continue
        if isinstance(message, (EntryAppended, ToolResultsAppended)):
            seqs[message.entry.id] = rec.seq
        elif isinstance(message, EntriesFolded):
            seqs[message.recap.id] = rec.seq
    return seqs


@main.command()
@store_option
@thread_option
@at_option
@readable_json_option
def state(store_url: str, thread_id: str, at: int | None, as_json: bool) -> None:
    """Print a thread's state, status (with its result, question or error, or the tool calls
    waiting for approval and the command that decides each), entry count,
    pending tool results, apps, last seq, budget, usage (its sub-agents' included) and the
    sub-agents it spawned."""
    from ..agent import spawned_threads, stored_usage  # (it knows the sub-agents app: the agent's models)
    from ._readable import print_state, readable_console  # (rich: only where it is drawn)

    async def go() -> None:
        converter = make_converter()
        store = await open_existing_store(store_url)
        async with store:
            reader = await _open_reader(store, thread_id)
            async with reader:
                st = await _state_at(reader, converter, thread_id, at)
                shown = await _shown_or_none(reader, converter, st)
                # (as of --at, sub-agents count what they had recorded by then)
                sent_by = (await reader.read(st.seq, st.seq))[0].sent_at if at is not None and st.seq else None
            usage = await stored_usage(store, converter, st, sent_by)
        data = {**_summary(st, shown), "usage": usage_json(usage),
                "budget": st.config.budget if st.config is not None else None,
                "sub_agents": spawned_threads(thread_id, st.entries)}
        if as_json:
            print_json(data)
        else:
            print_state(readable_console(), thread_id, data)
    import_from_cwd()
    run_async(go)


@main.command()
@store_option
@thread_option
@readable_json_option
def audit(store_url: str, thread_id: str, as_json: bool) -> None:
    """Print one line per log record: seq (and, in a system's thread, its system seq), time,
    sender, kind and a summary (a sub-agent's thread names its parent).

    --json prints one JSON object per record: seq (system_seq), sender, sent_at, kind,
    summary (parent), the summary whole.

    Records are printed as they are read. A damaged record (or a stretch of them a damaged
    SQLite page hides) is not skipped silently: one ``livecontext: error:`` line on stderr
    names it where it lies (thread, seq, what, what to do), the readable records after it are
    printed too, and the command exits 1 at the end.
    """
    from ._readable import audit_printer, readable_console  # (rich: only where it is drawn)

    show = print_json if as_json else audit_printer(readable_console())

    async def go() -> int:
        converter = make_converter()
        parent = parent_thread_id(thread_id)  # a sub-agent's lines name the thread that spawned it
        damaged = 0
        async with _reader(store_url, thread_id) as reader, \
                aclosing(read_past_damage(reader, chunk=AUDIT_CHUNK)) as items:
            async for item in items:
                if isinstance(item, Damage):
                    damaged += 1
                    click.echo(f"livecontext: error: {item.text}", err=True)
                    continue
                for rec in item:
                    line = {"seq": rec.seq, **({"system_seq": rec.system_seq} if rec.system_seq is not None else {}),
                            "sender": rec.sender, "sent_at": rec.sent_at.isoformat(),
                            "kind": rec.kind, "summary": _record_summary(converter, rec.kind, rec.payload)}
                    show(line if parent is None else {**line, "parent": parent})
        return damaged

    if run_async(go):
        raise SystemExit(1)


AUDIT_CHUNK = 200
"""Records ``audit`` reads at a time (each chunk printed before the next is read)."""


def _record_summary(converter: ProtocolConverter, kind: str, payload: str) -> str:
    """A short summary of a record; its kind alone when the payload cannot be read."""
    try:
        message = converter.load_message(json.loads(payload))
    except (ProtocolError, ValueError, RecursionError):
        return kind
    return _summarize(message) or kind


def _summarize(message: Message) -> str:
    if isinstance(message, EntryAppended):
        entry = message.entry
        return f"{type(entry).__name__} {entry.id}: {entry.content.gist.text}"
    if isinstance(message, ToolResultsAppended):
        notes = len(message.entry.notifications)
        return (f"{type(message.entry).__name__} {message.entry.id}: the results recorded"
                + (f" + {notes} notifications" if notes else ""))
    if isinstance(message, ToolResultRecorded):
        result = message.result
        effect = app_effect_of(message.effect) if message.effect is not None else None
        if effect is not None:
            said = f" + {_effect_summary(effect)}"
        else:  # none, or the engine's own (the task lifecycle's)
            said = f" + effect {type(message.effect).__name__}" if message.effect is not None else ""
        return f"{result.name} {result.call_id} {result.status.value}: {result.content.gist.text}{said}"
    if isinstance(message, ToolStarted):
        return f"{message.name} {message.call_id} started"
    if isinstance(message, NotificationPosted):
        n = message.notification
        return f"{n.id} from {n.sender}: {n.text[:80]}"
    if isinstance(message, SystemPromptSet):
        return f"system prompt: {message.text[:80]}"
    if isinstance(message, AppWindowsRecorded):
        return f"windows recorded: {', '.join(w.app for w in message.windows)}"
    if isinstance(message, AppWindowsChanged):
        return f"windows changed: {', '.join(c.app for c in message.changes)}"
    if isinstance(message, ThreadConfigured):
        tools = ", ".join(t.name for t in message.tools) or "none"
        apps = ", ".join(a.name for a in message.apps) or "none"
        return f"budget {message.budget}; tools {tools}; apps {apps}"
    if isinstance(message, HistoryEdited):
        edited = ", ".join(f"{e.id} r{e.revision}" for e in message.entries)
        removed = ", ".join(message.removed)
        return "; ".join(p for p in (f"edited {edited}" if edited else "",
                                     f"removed {removed}" if removed else "") if p)
    if isinstance(message, EntriesFolded):
        return f"folded {', '.join(message.folded)} into {message.recap.id}"
    if isinstance(message, AccessDenied):
        return f"denied {message.action} to {message.sender} (needs {message.capability.value})"
    if isinstance(message, StepFailed):
        return f"step failed: {message.error}"
    if isinstance(message, McpServerRestarted):
        return f"MCP server {message.server} restarted: {message.reason}"
    if isinstance(message, ApprovalRequested):
        return "approval requested: " + ", ".join(f"{c.name} {c.id} {_clip(c.arguments, 80)}" for c in message.calls)
    if isinstance(message, ApprovalDecided):
        if message.approved:
            edited = f" with arguments {_clip(message.arguments, 120)}" if message.arguments is not None else ""
            return f"{message.call_id} approved by {message.by}{edited}"
        return f"{message.call_id} denied by {message.by}: {_clip(message.reason, 200)}"
    if isinstance(message, EnginePaused):
        return "paused with work left" + (f": {message.reason}" if message.reason else "")
    if isinstance(message, StepInterrupted):
        return f"{message.what} interrupted by {message.by}"
    if isinstance(message, TaskTerminated):
        return f"task terminated by {message.by}: {message.reason}"
    if isinstance(message, SystemDeclared):
        agents = ", ".join(f"{m.name} ({m.thread_id})" for m in message.agents)
        origin = f"; forked from system {message.forked_from} at system seq {message.forked_at}" \
            if message.forked_from is not None else ""
        return f"system {message.name}: agents {agents}{origin}"
    return ""


def _effect_summary(effect: AppEffect) -> str:
    inner = effect.effect
    if not isinstance(inner, UndecodedEffect):
        return f"effect {type(inner).__name__}"
    return f"effect {inner.tag} of app {effect.app}, not decoded here ({effect.import_hint()}): {_clip(inner.data)}"


def _clip(text: str, limit: int = 300) -> str:
    """``text``, or its first ``limit`` characters and how many more there are (one line of
    a listing stays readable; the JSON forms give it whole)."""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more chars]"


@main.command("render")
@store_option
@thread_option
@at_option
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Token budget (default: the thread's own, else 8000).")
@json_option
def render_cmd(store_url: str, thread_id: str, at: int | None, budget: int | None, as_json: bool) -> None:
    """Print what the model is sent (or was sent, --at SEQ): messages, tokens, tools, levels.

    The thread is rendered as its agent renders it: its system prompt, its tools, its pinned
    entries, and its own apps' windows, rebuilt from the log as of that seq.
    """
    from ..agent import shown_apps  # (the apps' modules: only where apps are shown)

    async def go() -> None:
        converter = make_converter()
        async with _reader(store_url, thread_id) as reader:
            st = await _state_at(reader, converter, thread_id, at)

            async def replay(app: str) -> tuple[AppEffect, ...]:
                return await replay_app_effects(reader, converter, app, st.seq)
            apps = await shown_apps(st, converter, replay)
            frame = None
            if st.compacted is not None:  # the stable policy: the calls since start with that compaction
                at_seq, record = st.compacted
                frame = (record, await load_state(reader, converter, thread_id, at_seq))
        for note in apps.notes:
            click.echo(f"livecontext: note: {note}", err=True)
        print_json({**render_json(st, budget, TokenCounter.from_env(), apps.windows, frame),
                    **({"notes": list(apps.notes)} if apps.notes else {})})
    import_from_cwd()
    run_async(go)


def render_json(state: HistoryState, budget: int | None, counter: TokenCounter, windows: str,
                frame: tuple[ContextCompacted, HistoryState] | None = None) -> dict[str, Any]:
    """``render --json``: the messages, their tokens (the tools' included), the budget, the
    tools sent, and how each entry of the thread was shown (``live``, ``recent``, ``gist``,
    ``recap``: folded into a recap, or a recap shown; ``omitted``); ``windows``: the apps'
    windows as of ``state`` (:func:`shown_apps`). Also the thread's render ``policy`` and, for each model call
    it recorded, the tokens it was sent and those it shared with the call before (``calls``).

    Under the ``stable`` policy the messages are those of the thread's last compaction
    (``frame``: its record and the thread as of it) and the entries after it, as the next call
    sends them, or a new compaction if they no longer fit; a thread that never compacted is
    rendered as its first call would be."""
    config = state.config
    if budget is None:
        budget = config.budget if config is not None else DEFAULT_BUDGET
    policy = ContextPolicy.of(config.context if config is not None else None)
    stable = StableRenderer(policy) if policy.policy == "stable" else None
    if stable is not None and frame is not None:
        restore_frame(stable, frame[0], frame[1], counter)
    result = render_state(state, budget, counter, windows=windows, stable=stable)
    return {
        "messages": [chat_json(m) for m in result.messages],
        "tokens": result.tokens,
        "budget": budget,
        "tools": [tool_json(spec) for spec in config.tools] if config is not None else [],
        "entries": [{"id": e.id, "level": level} for e, level in _levels(state, result.spans)],
        "policy": {"name": policy.policy, "low_water": policy.low_water, "high_water": policy.high_water},
        "calls": [{"entry": e.id, "sent_tokens": e.sent_tokens, "shared_tokens": e.shared_tokens}
                  for e in state.entries if isinstance(e, ModelOutputEntry)],
    }


DEFAULT_BUDGET = 8000
"""The budget ``render`` uses for a thread that never recorded its own."""


def _levels(state: HistoryState, spans: Any) -> list[tuple[Any, str]]:
    """Each entry of the thread and how it was shown: its span's level, ``recap`` if folded."""
    bounds = [(id_number(s.first), id_number(s.last), s.shown) for s in spans]
    out = []
    k = 0
    for entry in state.entries:  # (ids increase, and so do the spans)
        if entry.folded:
            out.append((entry, Shown.RECAP.value))
            continue
        n = id_number(entry.id)
        while k < len(bounds) and bounds[k][1] < n:
            k += 1
        shown = bounds[k][2] if k < len(bounds) and bounds[k][0] <= n else Shown.OMITTED
        out.append((entry, shown.value))
    return out


@main.command()
@store_option
@click.option("--thread", "thread_id", default=None, help="The thread to fork.")
@click.option("--system", "system", default=None, metavar="NAME",
              help="The system to fork: every thread of it, at a consistent cut.")
@click.option("--at", type=click.IntRange(min=0), required=True,
              help="--thread: copy records 1..SEQ (0: an empty thread that remembers its origin); "
                   "--system: cut at this system seq (audit lines show each record's system_seq).")
@click.option("--new-thread", "new_thread", default=None, help="The new thread's id.")
@click.option("--new-system", "new_system", default=None, metavar="NAME2", help="The new system's name.")
@json_option
def fork(store_url: str, thread_id: str | None, system: str | None, at: int, new_thread: str | None,
         new_system: str | None, as_json: bool) -> None:
    """Make a new thread from records 1..SEQ of another, or a new system from another cut at
    a system seq (``--system NAME --at SYSTEM_SEQ --new-system NAME2``; run it with
    ``livecontext run SYSTEM.toml --as NAME2``)."""
    from ..agent import check_thread_id

    async def go() -> None:
        if system is not None or new_system is not None:
            if thread_id is not None or new_thread is not None:
                raise UsageError("fork either a thread (--thread T --new-thread T2) or a system "
                                 "(--system NAME --new-system NAME2), not both")
            if system is None or new_system is None:
                raise UsageError("a system fork needs --system NAME and --new-system NAME2")
            await _fork_system(store_url, system, at, check_system_name(new_system))
            return
        if thread_id is None or new_thread is None:
            raise UsageError("fork needs --thread T and --new-thread T2 (or --system NAME and --new-system NAME2)")
        check_thread_id(new_thread)
        store = await open_existing_store(store_url)
        async with store:
            try:
                info = await store.fork(thread_id, at, new_thread)
            except ThreadNotFoundError:
                raise ThreadMissingError(thread_id, store.url) from None
        print_json({"thread": info.thread_id, "forked_from": thread_id, "at": at, "seq": info.last_seq})
    run_async(go)


async def _fork_system(store_url: str, system: str, at: int, new_system: str) -> None:
    store = await open_existing_store(store_url)
    async with store:
        made = await fork_system(store, system, at, new_system)
    print_json({"system": made.name, "forked_from": made.forked_from, "at": made.at,
                "threads": [{"thread": t.thread_id, "forked_from": t.source, "seq": t.cut} for t in made.threads]})


@main.command()
@store_option
@click.option("--thread", "thread_ids", multiple=True, metavar="ID",
              help="Check only this thread (repeat for more; default: every thread and the store's file).")
def verify(store_url: str, thread_ids: tuple[str, ...]) -> None:
    """Read and check every record and snapshot of the store (and, for SQLite, the file's
    pages): one line per problem, exit 1 if there is any. Nothing is written.

    What to do about a damaged record: restore the store from a backup, or fork the thread
    before it (`livecontext fork --thread T --at SEQ-1 --new-thread NEW`). A damaged snapshot costs
    nothing: the state is rebuilt from the records (the thread's next run drops it). A damaged
    SQLite file: restore it from a backup, or copy what can be read into a new store
    (`livecontext copy --store URL --to NEW_URL`).
    """
    async def go() -> StoreCheck:
        store = await open_existing_store(store_url)
        async with store:
            for thread_id in thread_ids:
                if not await store.exists(thread_id):
                    raise ThreadMissingError(thread_id, store_url)
            return await verify_store(store, thread_ids or None)

    check = run_async(go)
    for note in check.notes:
        click.echo(f"note: {note}")
    for problem in check.problems:
        click.echo(problem.text)
    what = f"{check.threads} thread(s), {check.records} record(s), {check.snapshots} snapshot(s) in {store_url}"
    if check.ok:
        click.echo(f"ok: {what}; nothing is damaged")
        return
    click.echo(f"{len(check.problems)} problem(s) found; checked {what}", err=True)
    raise SystemExit(1)

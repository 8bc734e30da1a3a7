"""A thread's usage with its sub-agents': what ``Agent.state()``, ``Reply``, ``run --json``,
``state --json``, a system's status and ``batch`` result lines report.

A thread's own usage is one running total its history state folds over its log
(:attr:`HistoryState.usage`, :attr:`Tail.usage`). A sub-agent's calls are recorded in its own
thread (``PARENT/sub/NAME``, in the parent's store: see :mod:`._subagents`), so the parent's
total adds theirs. The sub-agents of a thread are found from its own history, each by the
``spawn_subagent`` call that named it, never by listing the store (which costs a query per
thread of the store: a batch of thousands of tasks would pay it at every task's end). A
sub-agent that is running is asked for its totals (its history store holds what its log
holds); one that is not is read from its log. Sub-agents of sub-agents count too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from livecontext.protocol.agent import GetTail, Tail
from livecontext.protocol.context import HistorySlice, ReadHistory
from livecontext.protocol.history import ENTRY_KINDS, HistoryEntry, ModelOutputEntry, UsageTotals
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.wire import ProtocolConverter
from livecontext.runtime import ActorStoppedError, Context, UnknownActorError, UsageError
from livecontext.runtime.persistence import EventStore, ThreadReader

from ._thread_ids import sub_thread_id
from ._subagents import SubAgents, subagent_name
from ..history import HistoryState, load_state

SPAWN_TOOL = SubAgents.spawn_subagent.__name__
"""The tool whose calls each name a sub-agent thread."""

OUTPUTS = ReadHistory(kinds=(ENTRY_KINDS[ModelOutputEntry],), include_folded=True)
"""Where a thread's ``spawn_subagent`` calls are: its model outputs, folded ones included."""

_SEARCH_CHUNK = 512
"""Records read at a time when looking for the last one sent by a moment (``state --at``)."""


def spawned_threads(thread_id: str, entries: Iterable[HistoryEntry]) -> list[str]:
    """The sub-agent threads that ``spawn_subagent`` calls of thread ``thread_id`` named, in
    the order of the calls, each once (a call run again after a crash resumes the same one).
    A call whose thread id would be too long is left out: it failed without making one."""
    found: dict[str, None] = {}
    for entry in entries:
        if isinstance(entry, ModelOutputEntry):
            for call in entry.tool_calls:
                if call.name == SPAWN_TOOL:
                    try:
                        found[sub_thread_id(thread_id, subagent_name(call.id))] = None
                    except UsageError:
                        continue
    return list(found)


async def live_usage(ctx: Context, store: EventStore, converter: ProtocolConverter, thread_id: str,
                     own: UsageTotals, entries: Iterable[HistoryEntry]) -> UsageTotals:
    """``own`` (a running thread's totals) plus its sub-agents': asked of those running in
    ``ctx``'s runtime, read from the log of the others."""
    total = own
    for sub in spawned_threads(thread_id, entries):
        total += await _sub_usage(ctx, store, converter, sub)
    return total


async def _sub_usage(ctx: Context, store: EventStore, converter: ProtocolConverter, thread_id: str) -> UsageTotals:
    history = ActorId("history", thread_id)
    if ctx.runtime.is_running(history):
        try:
            tail = await ctx.ask(history, GetTail())
            held = await ctx.ask(history, OUTPUTS)
        except (ActorStoppedError, UnknownActorError):
            pass  # it stopped meanwhile: its log holds it all
        else:
            assert isinstance(tail, Tail) and isinstance(held, HistorySlice)
            return await live_usage(ctx, store, converter, thread_id, tail.usage, held.entries)
    return await _stored_sub_usage(store, converter, thread_id)


async def stored_usage(store: EventStore, converter: ProtocolConverter, state: HistoryState,
                       sent_by: dt.datetime | None = None) -> UsageTotals:
    """The usage of thread ``state`` (read from its log) plus its sub-agents', read from
    theirs: of each sub-agent, its records sent by ``sent_by`` (``None``: all of them), so that
    a thread read as of a seq counts its sub-agents as they were then."""
    total = state.usage
    for sub in spawned_threads(state.thread_id, state.entries):
        total += await _stored_sub_usage(store, converter, sub, sent_by)
    return total


async def _stored_sub_usage(store: EventStore, converter: ProtocolConverter, thread_id: str,
                            sent_by: dt.datetime | None = None) -> UsageTotals:
    """:func:`stored_usage` of a sub-agent thread, nothing if it does not exist (its spawning
    call failed before it was made)."""
    if not await store.exists(thread_id):
        return UsageTotals()
    reader = await store.open_reader(thread_id)
    async with reader:
        at = None if sent_by is None else await _last_sent_by(reader, sent_by)
        if at == 0:
            return UsageTotals()
        state = await load_state(reader, converter, thread_id, at)
    return await stored_usage(store, converter, state, sent_by)


async def _last_sent_by(reader: ThreadReader, moment: dt.datetime) -> int:
    """The seq of the thread's last record sent at or before ``moment`` (0: none was)."""
    end = await reader.last_seq()
    while end > 0:
        start = max(1, end - _SEARCH_CHUNK + 1)
        for record in reversed(await reader.read(start, end)):
            if record.sent_at <= moment:
                return record.seq
        end = start - 1
    return 0

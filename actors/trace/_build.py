"""Building a trace from a store: read the thread's records once, replay them in order, and
draw each one (see :mod:`._thread`); for a system, merge in what the system's other threads
and its own log say passed between its agents (see :mod:`._system_timeline`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from livecontext.protocol import AppEffect, Message, ProtocolConverter, load_json, make_converter
from livecontext.runtime.persistence import EventStore, StoredRecord
from livecontext.runtime.tokens import TokenCounter

from ..agent import open_existing_store
from ..history import replay_app_effects
from ._diagram import Diagram
from ._model import Trace
from ._reading import SeqPastEndError, TraceError, open_thread
from ._system_timeline import SystemTimeline, read_system
from ._thread import Record, ThreadTracer
from ._windows import AppWindows


async def build_trace(store_url: str, thread_id: str | None, *, system: str | None = None,
                      at: int | None = None, counter: TokenCounter | None = None) -> Trace:
    """Trace thread ``thread_id`` of the store at ``store_url`` up to seq ``at`` (``None``: its end).

    With ``system``, the thread is traced as one agent of that system: the system's other
    agents are columns too, the messages between agents are drawn from their threads and the
    system's log, and every seq (``at`` too) is a system seq (what ``audit`` shows as
    ``system_seq``). ``thread_id`` may then be ``None``: the system's first agent.

    Nothing is written to the store.

    Raises:
        ThreadMissingError: the store (or the system) has no thread ``thread_id``.
        SeqPastEndError: ``at`` is past the thread's (the system's) last seq.
        TraceError: the thread has no records to trace.
        StoreMissingError: there is no store at ``store_url``.
        SystemNotFoundError: the store has no system ``system``.
    """
    converter = make_converter()
    counter = counter if counter is not None else TokenCounter.from_env()
    store = await open_existing_store(store_url)
    async with store:
        if system is not None:
            timeline = await read_system(store, converter, system, thread_id, at)
            return await _trace(store, converter, counter, timeline.thread, timeline, at)
        if thread_id is None:
            raise TraceError("trace needs --thread T (or --system S); "
                             f"`livecontext threads --store {store.url}` lists the threads")
        return await _trace(store, converter, counter, thread_id, None, at)


async def _trace(store: EventStore, converter: ProtocolConverter, counter: TokenCounter, thread_id: str,
                 system: SystemTimeline | None, at: int | None) -> Trace:
    reader = await open_thread(store, thread_id)
    async with reader:
        if system is None:
            last = await reader.last_seq()
            if at is not None and at > last:
                raise SeqPastEndError(f"--at {at} is past the end of thread {thread_id}: its last seq is {last}")
            stored = await reader.read(1, at)
        else:
            stored = system.own
        if not stored:
            raise TraceError(f"thread {thread_id} has no records yet: there is nothing to trace")
        records = [(rec, converter.load_message(load_json(rec.payload))) for rec in stored]

        async def replay(app: str) -> tuple[AppEffect, ...]:
            return await replay_app_effects(reader, converter, app, stored[-1].seq)

        return await _draw(thread_id, records, system, at, counter, AppWindows(converter, replay))


async def _draw(thread_id: str, records: list[tuple[StoredRecord, Message]], system: SystemTimeline | None,
                at: int | None, counter: TokenCounter, windows: AppWindows) -> Trace:
    diagram = Diagram()
    agents = system.agents if system is not None else {}
    tracer = ThreadTracer(thread_id, diagram, agents, windows, counter, _subscribers(thread_id, records),
                          asked=system.asked if system is not None else {})
    timeline = system.merged(records) if system is not None else [
        (rec.seq, rec, payload, True) for rec, payload in records]
    start = min(item[1].sent_at for item in timeline)
    end = max(item[1].sent_at for item in timeline)
    for seq, rec, payload, own in timeline:
        t = _seconds(rec.sent_at - start)
        if own:
            await tracer.feed(Record(seq, t, rec.sender, payload), rec.seq)
        else:
            assert system is not None
            system.draw(diagram, thread_id, Record(seq, t, rec.sender, payload), rec)
    messages, marks = diagram.finish()
    return Trace(
        thread=thread_id, system=system.name if system is not None else None, at=at,
        last_seq=max(item[0] for item in timeline), started_at=start, duration=_seconds(end - start),
        budget=tracer.budget, records=len(timeline), actors=diagram.actors(), messages=messages,
        states=tracer.finish(), model_calls=tuple(tracer.calls), texts=diagram.texts, marks=marks)


def _subscribers(thread_id: str, records: Sequence[tuple[StoredRecord, Message]]) -> list[str]:
    """The recap maintainer and analyzers of the thread that the log shows: they subscribe to
    its history's changes (an analyzer that never wrote is not known)."""
    found: list[str] = []
    for rec, payload in records:
        for actor in (rec.sender, str(getattr(payload, "sender", ""))):
            kind, _, name = actor.partition("/")
            own = (kind == "recap" and name == thread_id) or (kind == "analyzer" and name.startswith(thread_id + "."))
            if own and actor not in found:
                found.append(actor)
    return found


def _seconds(delta: dt.timedelta) -> float:
    return round(delta.total_seconds(), 6)

"""A thread traced as one agent of a system: what passed between the system's agents.

The agents of a system reach each other only through notifications posted to the receiver's
history (``send_message``, ``ask_agent``): each is a record of the receiver's log naming its
sender, stamped with the system seq, as every record of the system's threads is. The system's
own log (``system:NAME``) records its agents and the runs of inputs it fed them. So a system
trace reads every thread of the system once: the traced thread's records in full, and from the
others the records another thread's actor wrote, merged on the one system seq.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import define, field

from livecontext.protocol import (
    InputsDone,
    InputsGiven,
    Message,
    NotificationPosted,
    ProtocolConverter,
    SystemDeclared,
    load_json,
)
from livecontext.runtime.persistence import EventStore, StoredRecord

from ..system import SystemNotFoundError, system_log_id, system_threads
from ._diagram import Diagram, agent_column, column_of
from ._model import MessageMode
from ._reading import SeqPastEndError, ThreadMissingError, open_thread
from ._thread import Record

Timeline = list[tuple[int, StoredRecord, Message, bool]]
"""``(system seq, record, payload, whether it is the traced thread's)``, in system seq order."""


@define
class SystemTimeline:
    """What a system's threads and log hold for a trace of one of its threads."""

    name: str
    thread: str
    """The traced thread."""
    agents: dict[str, str]
    """Each agent's thread id -> its name."""
    own: list[StoredRecord]
    """The traced thread's records, up to the cut."""
    others: list[tuple[int, StoredRecord, Message]]
    """From the other threads, the records another thread's actor wrote; and the system log's."""
    asked: dict[str, tuple[int, str]] = field(factory=dict)
    """For each keyed message drawn (a question, a note): the index of its arrow and the
    column it went to, so that an answer can be drawn as its reply."""

    def merged(self, own: Sequence[tuple[StoredRecord, Message]]) -> Timeline:
        """The traced thread's decoded records and :attr:`others`, on one system seq."""
        items: Timeline = [(seq, rec, payload, True) for seq, (rec, payload) in zip(_stamps(self.own), own)]
        items += [(seq, rec, payload, False) for seq, rec, payload in self.others]
        items.sort(key=lambda item: item[0])  # (stable: a thread's records keep their order)
        return items

    def draw(self, diagram: Diagram, thread: str, record: Record, stored: StoredRecord) -> None:
        """Draw a record of another thread (or of the system's log)."""
        payload = record.payload
        sender = diagram.add_column(column_of(record.sender, thread, self.agents))
        if isinstance(payload, SystemDeclared):
            agents = ", ".join(f"{m.name} ({m.thread_id})" for m in payload.agents)
            diagram.send(record.seq, record.t, sender, sender, "SystemDeclared", MessageMode.TELL, f"agents {agents}")
            return
        if isinstance(payload, InputsGiven):
            for given in payload.inputs:
                to = self._input_of(diagram, thread, given.agent)
                diagram.send(record.seq, record.t, sender, to, "ProvideInput", MessageMode.TELL,
                             f"{given.agent}: {given.text}")
            return
        if isinstance(payload, InputsDone):
            diagram.send(record.seq, record.t, sender, sender, "InputsDone", MessageMode.TELL,
                         f"run {payload.run}: every input in, every turn ended")
            return
        receiver = diagram.add_column(agent_column(stored.thread_id, self.agents.get(stored.thread_id)))
        if isinstance(payload, NotificationPosted):
            note = payload.notification
            i = diagram.ask(record.seq, record.t, sender, receiver, "PostNotification", note.text,
                            "NotificationPosted", f"{note.id} posted to {stored.thread_id}")
            if note.key is not None:
                self.asked[note.key] = (i, receiver)
            return
        diagram.send(record.seq, record.t, sender, receiver, type(payload).__name__, MessageMode.TELL,
                     type(payload).__name__)

    def _input_of(self, diagram: Diagram, thread: str, agent: str) -> str:
        for thread_id, name in self.agents.items():
            if name == agent:
                if thread_id == thread:
                    return diagram.add_column(column_of(f"input/{thread}", thread, self.agents))
                return diagram.add_column(agent_column(thread_id, name))
        return diagram.add_column(agent_column(agent, agent))


async def read_system(store: EventStore, converter: ProtocolConverter, name: str, thread: str | None,
                      at: int | None) -> SystemTimeline:
    """Read system ``name``'s threads and log for a trace of ``thread`` (``None``: its first
    agent's) up to system seq ``at``.

    Raises:
        SystemNotFoundError: the store has no system ``name``.
        ThreadMissingError: ``thread`` is not one of the system's.
        SeqPastEndError: ``at`` is past the system's last system seq.
    """
    log_id = system_log_id(name)
    if not await store.exists(log_id):
        raise SystemNotFoundError(f"no system named {name!r} in {store.url} (its log would be thread {log_id}); "
                                  f"`livecontext threads --store {store.url}` lists its threads")
    system_records = await _records(store, log_id)
    declared = None
    for rec in system_records:
        if rec.kind == SystemDeclared.__name__:
            message = converter.load_message(load_json(rec.payload))
            if isinstance(message, SystemDeclared):
                declared = message
    if declared is None:
        raise SystemNotFoundError(f"the log of system {name!r} ({log_id}) declares no agents: "
                                  "there is nothing to trace")
    threads = await system_threads(store, declared)
    agents = {m.thread_id: m.name for m in declared.agents}
    if thread is None:
        thread = declared.agents[0].thread_id
    if thread not in threads:
        raise ThreadMissingError(f"thread {thread!r} is not one of system {name}'s: its threads are "
                                 f"{', '.join(threads) or 'none yet'}")
    by_thread = {t: await _records(store, t) for t in threads}
    end = max((s for recs in (system_records, *by_thread.values()) for s in _stamps(recs)), default=0)
    if at is not None and at > end:
        raise SeqPastEndError(f"--at {at} is past the end of system {name}: its last system seq is {end} "
                              "(with --system, --at is a system seq: `livecontext audit` shows each record's)")
    own = _cut(by_thread[thread], at)
    others: list[tuple[int, StoredRecord, Message]] = []
    for thread_id, records in [(log_id, system_records), *by_thread.items()]:
        if thread_id == thread:
            continue
        kept = _cut(records, at)
        for seq, rec in zip(_stamps(kept), kept):
            if thread_id == log_id or not _own_actor(rec.sender, thread_id):
                others.append((seq, rec, converter.load_message(load_json(rec.payload))))
    return SystemTimeline(name, thread, agents, own, others)


async def _records(store: EventStore, thread_id: str) -> list[StoredRecord]:
    reader = await open_thread(store, thread_id)
    async with reader:
        return await reader.read(1)


def _stamps(records: Sequence[StoredRecord]) -> list[int]:
    """Each record's system seq; one written outside the system goes with the record before it."""
    stamps, last = [], 0
    for rec in records:
        if rec.system_seq is not None:
            last = rec.system_seq
        stamps.append(last)
    return stamps


def _cut(records: list[StoredRecord], at: int | None) -> list[StoredRecord]:
    """The records at or before system seq ``at``: those before the first stamped past it."""
    if at is None:
        return records
    for k, rec in enumerate(records):
        if rec.system_seq is not None and rec.system_seq > at:
            return records[:k]
    return records


def _own_actor(sender: str, thread_id: str) -> bool:
    """Whether ``sender`` is one of the actors of ``thread_id``'s own agent."""
    kind, _, name = sender.partition("/")
    return name == thread_id or (kind == "analyzer" and name.startswith(thread_id + "."))

"""A system's own log, where its threads stand at a system seq, and forking the whole system.

Every record of a system's threads carries a system seq (see
:mod:`livecontext.runtime.persistence._clock`): one counter for the system, taken when the
record is appended, that increases along each thread and along every cause and effect between
threads (a message's receipt comes after the tool call that sent it; a question's answer after
the question). The system's own log, thread ``system:NAME``, records its agents and their
threads, and where it was forked from (:class:`~livecontext.protocol.system.SystemDeclared`).

**A cut at system seq S** keeps, of each of the system's threads (its agents' and their
sub-agents'), the records before the first one stamped past S. It is consistent: nothing in it
was received without having been sent in it. A message (or question) is received as a
notification in the receiver's log; it was sent by a tool call recorded in the sender's log
before the tool ran, so stamped lower: if the receipt is at or before S, so is the call. The
call's *result* may lie past S (the cut fell while the tool ran), exactly as after a crash at
that moment: a forked system, or a system opened again after ``kill -9``, runs that call again,
and the call, keyed by sender and call id, finds its message delivered (or its question
asked, read, answered) and does not do it twice (see :mod:`._messaging`).

**Forking** (:func:`fork_system`, ``livecontext fork --system NAME --at S --new-system
NAME2``) copies each thread up to its cut into the new system's threads (``NAME2.AGENT``,
and ``NAME2.AGENT/sub/X`` for sub-agents), then writes the new system's log, saying what it
was forked from. Everything is checked before anything is written. Run the fork with
``livecontext run SYSTEM.toml --as NAME2`` (or ``open_system(..., name="NAME2")``): its agents
resume where the cut left them.

**Runs of inputs** (:meth:`System.run_inputs <livecontext.actors.System.run_inputs>`, what
``livecontext run SYSTEM.toml`` does) are recorded in the system's log too: the inputs each agent
is given, each with a key its agent's entry keeps (:class:`~livecontext.protocol.system.InputsGiven`),
then, once every input is in and every turn ended, that the run is done
(:class:`~livecontext.protocol.system.InputsDone`). A run not done was interrupted (a crash, a cut):
the system's next run resumes it, feeding only the inputs no entry holds yet, and holds the
inputs it was given itself (run again to give them). A fork copies the run going on at its cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from attrs import frozen

from livecontext.protocol.kernel import SUB_MARK
from livecontext.protocol.system import InputsDone, InputsGiven, SystemDeclared, SystemMember
from livecontext.protocol.wire import ProtocolConverter, load_json, make_converter
from livecontext.runtime import RuntimeClock, UsageError, WallClock
from livecontext.runtime.persistence import (
    EventStore,
    NewRecord,
    StoredRecord,
    SystemClock,
    ThreadLog,
    ThreadReader,
)

from ..agent import check_thread_id

_SYSTEM_NAME = re.compile(r"^(?:(?!sub/)[A-Za-z0-9_.-]{1,64}/)?[A-Za-z0-9_.-]{1,64}$")
"""One optional namespace (``BATCH/TASK_ID``: a batch task's system), as an agent's thread
id takes one, so that the agents' threads ``NS/NAME.AGENT`` are agent thread ids."""
SYSTEM_LOG_PREFIX = "system:"
"""What a system's own log's thread id starts with: ``system:NAME``."""
_READ_CHUNK = 512


def check_system_name(name: str) -> str:
    """``name`` if it can name a system, else :class:`UsageError` saying what can."""
    if not _SYSTEM_NAME.match(name):
        raise UsageError(f"invalid system name {name!r}: use 1-64 letters, digits and _ . -, optionally after "
                         "one NAMESPACE/ of the same (not sub/)")
    return name


def system_log_id(name: str) -> str:
    """The thread id of system ``name``'s own log."""
    return f"{SYSTEM_LOG_PREFIX}{name}"


class SystemNotFoundError(UsageError):
    """The store holds no system of that name (no ``system:NAME`` log)."""


class SystemExistsError(UsageError):
    """A fork's new system, or one of its threads, exists already."""


class SystemSeqPastEndError(UsageError):
    """``--at`` names a system seq the system has not reached."""


@frozen
class ForkedThread:
    """One thread of a system fork: where it came from and how much of it was copied."""

    source: str
    thread_id: str
    cut: int
    """Its source's records ``1..cut`` were copied (the cut at the fork's system seq)."""


@frozen
class SystemFork:
    """What :func:`fork_system` made."""

    name: str
    forked_from: str
    at: int
    """The system seq of ``forked_from`` the fork was cut at."""
    threads: tuple[ForkedThread, ...]
    """Each agent's thread, then its sub-agents', in the source system's order."""


@frozen
class SystemLog:
    """What a system's own log says: its latest declaration, and its run of inputs not done."""

    declared: SystemDeclared
    pending: InputsGiven | None = None
    """The latest run of inputs with no :class:`~livecontext.protocol.system.InputsDone`: a run that
    was interrupted (or is going on), which the system's next run resumes."""
    runs: int = 0
    """How many runs of inputs the log records, done or not."""


async def read_system_log(store: EventStore, converter: ProtocolConverter, name: str,
                          at: int | None = None) -> SystemLog | None:
    """System ``name``'s own log in ``store``, as of system seq ``at`` (``None``: now), or
    ``None`` if there is no such system (then)."""
    log_id = system_log_id(name)
    if not await store.exists(log_id):
        return None
    async with await store.open_reader(log_id) as reader:
        return replay_system_log(await reader.read(), converter, at)


def replay_system_log(records: Sequence[StoredRecord], converter: ProtocolConverter,
                    at: int | None = None) -> SystemLog | None:
    """What a system's own log's ``records`` say, as of system seq ``at`` (``None``: all of
    them); ``None`` if they declare no system."""
    declared, pending, runs = None, None, 0
    for record in records:
        if at is not None and record.system_seq is not None and record.system_seq > at:
            break
        if record.kind not in _SYSTEM_LOG_KINDS:
            continue
        message = converter.load_message(load_json(record.payload))
        if isinstance(message, SystemDeclared):
            declared = message
        elif isinstance(message, InputsGiven):
            pending, runs = message, runs + 1
        elif isinstance(message, InputsDone) and pending is not None and message.run == pending.run:
            pending = None
    return SystemLog(declared, pending, runs) if declared is not None else None


_SYSTEM_LOG_KINDS = frozenset({SystemDeclared.__name__, InputsGiven.__name__, InputsDone.__name__})


async def read_declaration(store: EventStore, converter: ProtocolConverter, name: str) -> SystemDeclared | None:
    """System ``name``'s latest declaration in ``store`` (``None``: there is no such system)."""
    found = await read_system_log(store, converter, name)
    return found.declared if found is not None else None


async def write_system_log(log: ThreadLog, converter: ProtocolConverter,
                           message: SystemDeclared | InputsGiven | InputsDone, sender: str,
                           clock: RuntimeClock = WallClock()) -> None:
    """Append ``message`` to a system's own log, stamped by ``clock`` (the system's runtime's)."""
    record = NewRecord.encoding(sender, clock.now(), clock.monotonic_ns(),
                                type(message).__name__, converter.dump_message(message))
    await log.append([record])


async def system_threads(store: EventStore, declared: SystemDeclared) -> list[str]:
    """The threads of a system that exist in ``store``: each agent's, then its sub-agents'."""
    existing = [info.thread_id for info in await store.threads()]
    found: list[str] = []
    for member in declared.agents:
        if member.thread_id in existing:
            found.append(member.thread_id)
        found += sorted(t for t in existing if t.startswith(member.thread_id + SUB_MARK))
    return found


async def last_system_seq(reader: ThreadReader) -> int:
    """The largest system seq of a thread's records (0 if none has one): its last stamped one's."""
    end = await reader.last_seq()
    while end > 0:
        start = max(1, end - _READ_CHUNK + 1)
        for record in reversed(await reader.read(start, end)):
            if record.system_seq is not None:
                return record.system_seq
        end = start - 1
    return 0


async def thread_cut(reader: ThreadReader, at: int) -> int:
    """How many of a thread's records are at or before system seq ``at``: those before its
    first record stamped past ``at`` (a record without a stamp, written outside the system,
    goes with the records before it)."""
    last = await reader.last_seq()
    for start in range(1, last + 1, _READ_CHUNK):
        for record in await reader.read(start, min(last, start + _READ_CHUNK - 1)):
            if record.system_seq is not None and record.system_seq > at:
                return record.seq - 1
    return last


async def system_end(store: EventStore, name: str, threads: Sequence[str]) -> int:
    """The largest system seq of a system's log and ``threads``."""
    end = 0
    for thread in [system_log_id(name), *threads]:
        async with await store.open_reader(thread) as reader:
            end = max(end, await last_system_seq(reader))
    return end


def forked_thread_id(thread: str, declared: SystemDeclared, new_name: str) -> str:
    """The thread of system ``new_name`` that copies ``thread`` of ``declared``'s system."""
    for member in declared.agents:
        if thread == member.thread_id:
            return check_thread_id(f"{new_name}.{member.name}")
        if thread.startswith(member.thread_id + SUB_MARK):
            return check_thread_id(f"{new_name}.{member.name}{thread[len(member.thread_id):]}")
    raise ValueError(f"thread {thread!r} is not one of system {declared.name!r}'s")


async def fork_system(store: EventStore, name: str, at: int, new_name: str) -> SystemFork:
    """Fork system ``name`` of ``store`` at system seq ``at`` into a new system ``new_name``
    (see the module docstring). Nothing is written unless every check passes.

    The system may be running meanwhile (:meth:`System.fork <livecontext.actors.System.fork>`):
    its records stamped past ``at`` are left out.

    Raises:
        SystemNotFoundError: ``store`` holds no system ``name``.
        SystemSeqPastEndError: ``at`` is past the system's last system seq.
        SystemExistsError: system ``new_name``, or one of the threads it would get, exists.
        UsageError: ``at`` is negative, ``new_name`` cannot name a system, or a new thread
            id would be too long.
    """
    if at < 0:
        raise UsageError(f"--at {at}: a system seq is 0 or more")
    converter = make_converter()
    source = await read_system_log(store, converter, name)
    if source is None:
        raise SystemNotFoundError(f"no system named {name!r} in {store.url} (its log would be thread "
                                  f"{system_log_id(name)}); `livecontext threads --store {store.url}` lists its threads")
    check_system_name(new_name)
    declared = source.declared
    threads = await system_threads(store, declared)
    end = await system_end(store, name, threads)
    if at > end:
        raise SystemSeqPastEndError(f"--at {at} is past the end of system {name}: its last system seq is {end} "
                                    f"(`livecontext audit --thread THREAD` shows each record's system_seq)")
    if await store.exists(system_log_id(new_name)):
        raise SystemExistsError(f"system {new_name!r} exists already in {store.url}; fork into a new name")
    plan = []
    for thread in threads:
        target = forked_thread_id(thread, declared, new_name)
        if await store.exists(target):
            raise SystemExistsError(f"thread {target!r}, which system {new_name!r} would get, exists already in "
                                    f"{store.url}; fork into another name")
        async with await store.open_reader(thread) as reader:
            plan.append(ForkedThread(thread, target, await thread_cut(reader, at)))
    for forked in plan:
        await store.fork(forked.source, forked.cut, forked.thread_id)
    members = tuple(SystemMember(m.name, forked_thread_id(m.thread_id, declared, new_name)) for m in declared.agents)
    at_cut = await read_system_log(store, converter, name, at)
    pending = at_cut.pending if at_cut is not None else None
    async with await store.open_thread(system_log_id(new_name), owner=f"system/{new_name}",
                                       clock=SystemClock(at)) as log:
        sender = f"system/{new_name}"
        await write_system_log(log, converter, SystemDeclared(new_name, members, name, at), sender)
        if pending is not None:  # a run going on at the cut: the fork resumes it
            await write_system_log(log, converter, pending, sender)
    return SystemFork(new_name, name, at, tuple(plan))

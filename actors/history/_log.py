"""A thread's state and its event log: loading it (the latest sound snapshot, then replaying
the records after it), writing snapshots, and replaying one app's effects.

Plain functions of a log and a converter: the history store uses them, and so do readers of a
store that run no agent (the CLI, tests).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, cast

import trio
from attrs import frozen

from livecontext.protocol.history import HistoryEntry
from livecontext.protocol.records import AppEffect, HistorySnapshot, ToolResultRecorded, app_effect_of
from livecontext.protocol.wire import ProtocolConverter, dump_json, load_json
from livecontext.runtime.persistence import CorruptRecordError, DamagedSnapshotWarning, Snapshot, ThreadLog

from ._blocks import MalformedPartError, decode_part
from ._state import HistoryState, ReplayError, SnapshotDraft


@frozen
class DumpedSnapshot:
    """A snapshot as the log stores it (see :meth:`ThreadLog.write_snapshot`)."""

    seq: int
    state: str
    """Its head: the :class:`HistorySnapshot` as JSON text, entries aside."""
    parts: tuple[str, ...]
    """The keys of its parts, one per block of entries, in order."""
    new_parts: dict[str, bytes]
    """The parts of the blocks changed since the snapshot before, by key."""


def dump_snapshot(converter: ProtocolConverter, draft: SnapshotDraft) -> DumpedSnapshot:
    """Encode a snapshot (run it in a worker thread: it encodes every entry of the blocks that
    changed)."""
    def encode(entry: HistoryEntry) -> str:
        return dump_json(converter.unstructure(entry))

    head, keys, parts = draft.finish(encode)
    return DumpedSnapshot(draft.seq, dump_json(converter.dump_message(head)), tuple(keys), parts)


async def write_snapshot(log: ThreadLog, converter: ProtocolConverter, state: HistoryState,
                         draft: SnapshotDraft | None = None) -> Snapshot:
    """Snapshot ``state`` (or write ``draft``, taken of it before) to ``log``: its head and the
    parts of the blocks changed since the last snapshot, encoded in a worker thread. The
    history store writes its snapshots so; anything else that writes one should too.

    Raises:
        PersistenceError: the log refused it (the state then still counts its blocks as changed).
    """
    if draft is None:
        draft = state.snapshot()
    try:
        dumped = await trio.to_thread.run_sync(dump_snapshot, converter, draft)
        snapshot = await log.write_snapshot(draft.seq, dumped.state, parts=dumped.parts,
                                            new_parts=dumped.new_parts)
    except BaseException:
        state.snapshot_lost(draft)
        raise
    state.snapshot_stored(draft)
    return snapshot


def entry_decoder(converter: ProtocolConverter) -> Callable[[str | bytes], HistoryEntry]:
    """Decodes one entry of a snapshot (called the first time the entry is used)."""
    def decode(text: str | bytes) -> HistoryEntry:
        return converter.structure(load_json(text), HistoryEntry)  # type: ignore[arg-type]

    return decode


async def replay_app_effects(log: Any, converter: ProtocolConverter, app: str,
                             to_seq: int | None = None) -> tuple[AppEffect, ...]:
    """Every effect ``app`` committed (up to ``to_seq``), read from the log, oldest first: for
    an app whose saved state cannot be loaded (reads and decodes every tool result)."""
    effects = []
    for rec in await log.read(1, to_seq):
        if rec.kind != "ToolResultRecorded":
            continue
        payload = converter.load_message(load_json(rec.payload))
        effect = app_effect_of(payload.effect) if isinstance(payload, ToolResultRecorded) and payload.effect else None
        if effect is not None and effect.app == app:
            effects.append(effect)
    return tuple(effects)


async def usable_snapshot(log: Any, thread_id: str, at_seq: int | None = None) -> Snapshot | None:
    """The latest sound snapshot of ``log`` at or before ``at_seq`` (see :func:`load_state`)."""
    bound = at_seq
    while bound is None or bound >= 1:
        try:
            return cast("Snapshot | None", await log.latest_snapshot(bound))
        except CorruptRecordError as exc:
            if not exc.what.startswith("snapshot"):
                raise
            warnings.warn(DamagedSnapshotWarning(thread_id, exc.seq, exc.detail, dropped=False), stacklevel=3)
            if exc.seq < 1:  # (its seq is unreadable: replay every record)
                return None
            bound = exc.seq - 1 if bound is None or exc.seq <= bound else bound - 1  # (always lower: it ends)
    return None


async def load_state(log: Any, converter: ProtocolConverter, thread_id: str,
                     at_seq: int | None = None) -> HistoryState:
    """Rebuild a thread's state from its latest snapshot (at or before ``at_seq``) and the tail.

    A damaged snapshot (or part of one) is passed over, with a :class:`DamagedSnapshotWarning`,
    for the one before it (or replay from the first record): snapshots only shorten replay.
    Damaged records are errors (:class:`CorruptRecordError`): they hold what happened.
    """
    state = await _from_snapshot(log, converter, thread_id, at_seq)
    if state is None:
        state = HistoryState(thread_id)
    records = await log.read(state.seq + 1, at_seq)
    for rec in records:
        state.apply(rec.seq, converter.load_message(load_json(rec.payload)))
    return state


async def _from_snapshot(log: Any, converter: ProtocolConverter, thread_id: str,
                         at_seq: int | None) -> HistoryState | None:
    """The state of the latest sound snapshot at or before ``at_seq``, if there is one."""
    bound, races = at_seq, 0
    while True:
        snap = await usable_snapshot(log, thread_id, bound)
        if snap is None:
            return None
        try:
            parts = await log.read_snapshot_parts(snap)
            break
        except CorruptRecordError as exc:
            # a reader racing the writer: two snapshots written since this one was found, and
            # the parts only it used dropped with it; the newer one has its parts
            newer = await log.latest_snapshot(bound) if races < 2 else None
            if newer is not None and newer.seq != snap.seq:
                races += 1
                continue
            warnings.warn(DamagedSnapshotWarning(thread_id, snap.seq, exc.detail, dropped=False), stacklevel=3)
            if snap.seq <= 1:
                return None
            bound = snap.seq - 1
    loaded = converter.load_message(load_json(snap.state))
    where = f"the snapshot of thread {thread_id} at seq {snap.seq}"
    if not isinstance(loaded, HistorySnapshot) or loaded.seq != snap.seq:
        raise ReplayError(f"{where} holds {type(loaded).__name__} at seq {getattr(loaded, 'seq', '?')}, "
                        "not that state")
    try:
        blocks = [decode_part(data) for data in parts]
    except MalformedPartError as exc:
        raise ReplayError(f"{where}: a part does not hold a block of entries: {exc}") from None
    state = HistoryState.from_snapshot(loaded, entry_decoder(converter), blocks, snap.parts)
    state.thread_id = thread_id  # a fork's copied snapshot names the thread it came from
    return state

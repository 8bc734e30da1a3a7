"""The recap maintainer: folds the oldest steps into a bounded recap, concurrently with the engine."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio
from attrs import field, frozen

from livecontext.protocol.agent import GetTail, Tail
from livecontext.protocol.context import (
    AccessDenied,
    EditApplied,
    EditConflict,
    EntryRef,
    FoldDone,
    FoldIntoRecap,
    FoldNow,
    HistorySlice,
    HistoryUsage,
    LimitLevel,
    ReadHistory,
)
from livecontext.protocol.history import HistoryEntry, ModelInputEntry, RecapEntry, Retention
from livecontext.protocol.kernel import ActorId, Topic
from livecontext.runtime import Actor, ModelError, UsageError, handler
from livecontext.runtime.models import ModelClient
from livecontext.runtime.tokens import TokenCounter

from ._facts import steps_of
from ._layer import Layer, Recap
from ._strategies import MIN_SUMMARY_CHARS, RecapStrategy, model_summary, simple_extract
from ._structured import structured

if TYPE_CHECKING:
    from livecontext.runtime import PendingReply

log = logging.getLogger("livecontext.recap")


_RANK = [LimitLevel.OK, LimitLevel.SOFT, LimitLevel.HARD, LimitLevel.TRUNCATE]


def recap_topic(thread_id: str) -> Topic:
    """Where a thread's recap maintainer publishes :class:`FoldDone` after each fold."""
    return Topic(f"recap.{thread_id}")


@frozen
class RecapSettings:
    """How the recap maintainer folds (seed note 004)."""

    strategy: RecapStrategy = field(default=RecapStrategy.SIMPLE_EXTRACT, converter=RecapStrategy)
    """How recaps are made (given as a member or its string)."""
    window: int = 4
    """Steps (an input, or a model output with its tool results) always kept in full."""
    batch: int = 4
    """Steps folded at a time."""
    max_summary_chars: int = 2000
    """The recap's longest text, at least :data:`~._strategies.MIN_SUMMARY_CHARS`; past it,
    older steps' lines merge into coarser range lines (every folded step stays represented)."""
    budget: int = 2000
    """Tokens of history the ``model_summary`` strategy may send to its model."""
    max_retries: int = 8
    """Re-reads after an :class:`EditConflict` before giving up on one fold."""

    def __attrs_post_init__(self) -> None:
        for name in ("window", "batch", "budget", "max_retries"):
            if getattr(self, name) < (0 if name == "window" else 1):
                raise UsageError(f"recap.{name} must be >= {0 if name == 'window' else 1}, got {getattr(self, name)}")
        if self.max_summary_chars < MIN_SUMMARY_CHARS:
            raise UsageError(
                f"recap.max_summary_chars must be >= {MIN_SUMMARY_CHARS}, got {self.max_summary_chars}: a shorter "
                "recap could not keep a line for every folded step; raise it")


def pick_batch(entries: Sequence[HistoryEntry], window: int, batch: int) -> list[HistoryEntry]:
    """The oldest foldable run of about ``batch`` steps, outside the last ``window`` steps (at
    least one step always stays).

    A step with a CRITICAL entry is never taken: the batch starts after it, or stops before
    it. A run of consecutive BATCH_COMPRESSIBLE entries is folded as a whole or not at all:
    a batch reaching into one takes it whole, even past ``batch`` steps, and stops before a
    run it cannot take whole (one reaching into the window, or into a CRITICAL step).
    """
    steps = steps_of(entries)
    candidates = steps[: max(0, len(steps) - max(window, 1))]
    runs = batch_runs(entries)
    taken: list[list[HistoryEntry]] = []
    i = 0
    while i < len(candidates) and len(taken) < batch:
        unit, i = _unit(candidates, i, runs)
        if unit is None:
            if taken:
                break
            continue
        taken += unit
    return [e for step in taken for e in step]


def batch_runs(entries: Sequence[HistoryEntry]) -> dict[str, int]:
    """The run each BATCH_COMPRESSIBLE entry of ``entries`` belongs to, by entry id: a run is
    consecutive such entries, recaps and folded entries aside; runs are numbered from 0."""
    runs: dict[str, int] = {}
    run, inside = -1, False
    for e in entries:
        if isinstance(e, RecapEntry) or e.folded:
            continue
        if e.retention is Retention.BATCH_COMPRESSIBLE:
            if not inside:
                run, inside = run + 1, True
            runs[e.id] = run
        else:
            inside = False
    return runs


def _unit(candidates: list[list[HistoryEntry]], i: int,
          runs: dict[str, int]) -> tuple[list[list[HistoryEntry]] | None, int]:
    """The steps from ``candidates[i]`` on that must be folded together (a step, extended over
    the whole BATCH_COMPRESSIBLE runs it touches) and where the next unit starts; ``None``
    when they cannot be (a CRITICAL step, or a run reaching past the candidates)."""
    unit: list[list[HistoryEntry]] = []
    needed: set[int] = set()
    covered: set[str] = set()
    while i < len(candidates):
        step = candidates[i]
        i += 1
        if any(e.retention is Retention.CRITICAL for e in step):
            return None, i
        unit.append(step)
        covered |= {e.id for e in step}
        needed |= {runs[e.id] for e in step if e.id in runs}
        if all(entry_id in covered for entry_id, run in runs.items() if run in needed):
            return unit, i
    return None, i


class RecapMaintainer(Actor):
    """Folds a thread's oldest steps into one recap when its history passes the soft limit.

    It reads through reflection and folds with compare-and-swap edits, so it runs while the
    engine runs: on a conflict it re-reads and tries again. The engine only waits for it at
    the truncate threshold (``FoldNow``).

    Its handlers only note what is due and wake one worker task, which does the folding. So
    its mailbox never backs up while a fold (perhaps a slow model call) runs: a full mailbox
    would block the history store's publishing, and with it the history store's answer to
    the fold itself. Many usage reports during one fold make one more fold, not many.
    """

    def __init__(self, thread_id: str, history: ActorId, settings: RecapSettings,
                 counter: TokenCounter, model: ModelClient | None = None) -> None:
        if settings.strategy is RecapStrategy.MODEL_SUMMARY and model is None:
            raise UsageError("recap strategy model_summary needs a model (recap.model)")
        self.thread_id = thread_id
        self.history = history
        self.settings = settings
        self.counter = counter
        self.model = model
        self.folds = 0
        """Folds this instance made."""
        self.level = LimitLevel.OK
        self._due: LimitLevel | None = None
        """The strongest level reported since the worker last looked (``None``: nothing due)."""
        self._waiting: list[PendingReply] = []
        """``FoldNow`` asks to answer once the history is under its hard limit."""
        self._wake = trio.Event()
        self._last = FoldDone(thread_id, 0, 0, 0)

    async def on_start(self) -> None:
        self.ctx.subscribe(Topic(f"history.{self.thread_id}"))
        self.ctx.nursery.start_soon(self._worker)

    async def on_stop(self) -> None:
        self._answer(self._waiting, self._last)

    @handler(inline=True)
    def on_usage(self, msg: HistoryUsage) -> None:
        self.level = msg.level
        if msg.level is not LimitLevel.OK:
            self._due = msg.level if self._due is None else max(self._due, msg.level, key=_RANK.index)
            self._wake.set()

    @handler(inline=True)
    def on_fold_now(self, msg: FoldNow) -> FoldDone | None:
        reply = self.ctx.defer_reply()
        if reply is not None:
            self._waiting.append(reply)
        self._due = LimitLevel.HARD if self._due is None else max(self._due, LimitLevel.HARD, key=_RANK.index)
        self._wake.set()
        return None

    async def _worker(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            due, self._due = self._due, None
            waiting, self._waiting = self._waiting, []
            try:
                if due in (LimitLevel.HARD, LimitLevel.TRUNCATE):
                    folds = await self.fold_until_below_hard()
                elif due is LimitLevel.SOFT:
                    folds = await self.fold_once()
                else:
                    folds = 0
                if waiting or folds:  # nobody needs the counts of a fold that did not happen
                    self._answer(waiting, await self._done(folds))
            except BaseException:  # failing or cancelled: nobody is left waiting (the engine may be)
                self._answer([*waiting, *self._waiting], self._last)
                raise

    @staticmethod
    def _answer(waiting: list[PendingReply], done: FoldDone) -> None:
        for reply in waiting:
            reply.send(done)  # a second send is ignored

    async def fold_until_below_hard(self) -> int:
        """Fold batch after batch until the history is under its hard limit or nothing is
        foldable; returns how many folds were made."""
        done = 0
        while True:
            folded = await self._fold()
            done += folded
            if not folded or await self._level() in (LimitLevel.OK, LimitLevel.SOFT):
                return done

    async def fold_once(self) -> int:
        """Fold one batch, if one is foldable; returns 1 or 0."""
        return await self._fold()

    async def _done(self, folds: int) -> FoldDone:
        """The history's size after ``folds`` folds (published if there were any)."""
        view = await self._read()
        active = [e for e in view.entries if not isinstance(e, RecapEntry)]
        done = FoldDone(self.thread_id, folds, len(active), view.active_tokens)
        self._last = FoldDone(self.thread_id, 0, done.entries, done.tokens)
        if folds:
            await self.ctx.publish(recap_topic(self.thread_id), done)
        return done

    async def _read(self) -> HistorySlice:
        view = await self.ctx.ask(self.history, ReadHistory())
        if isinstance(view, AccessDenied):
            raise UsageError(f"{self.ctx.self_id} may not read history: grant it Capability.READ")
        assert isinstance(view, HistorySlice)
        return view

    async def _fold(self) -> int:
        """One fold, re-reading and retrying on conflict; returns 1, or 0 if nothing was folded."""
        for _attempt in range(self.settings.max_retries):
            view = await self._read()
            recaps = [e for e in view.entries if isinstance(e, RecapEntry)]
            previous = recaps[-1] if recaps else None
            batch = pick_batch(view.entries, self.settings.window, self.settings.batch)
            if not batch:
                return 0
            pinned = [e.text for e in view.entries
                      if isinstance(e, ModelInputEntry) and e.retention is Retention.CRITICAL]
            recap = await self._summarise(previous, batch, pinned)
            gist = f"recap of the steps up to {batch[-1].id} ({self.settings.strategy.value})"
            reply = await self.ctx.ask(self.history, FoldIntoRecap(
                tuple(EntryRef(e.id, e.revision) for e in batch), recap.text, gist, self.settings.strategy.value,
                EntryRef(previous.id, previous.revision) if previous else None, recap.data))
            if isinstance(reply, EditApplied):
                self.folds += 1
                return 1
            if isinstance(reply, AccessDenied):
                log.error("%s may not fold history of %s: grant it Capability.FOLD", self.ctx.self_id, self.thread_id)
                return 0
            assert isinstance(reply, EditConflict)
            log.info("fold conflict in %s, re-reading: %s", self.thread_id, reply.conflicts)
        log.warning("gave up folding %s after %d conflicts", self.thread_id, self.settings.max_retries)
        return 0

    async def _level(self) -> LimitLevel:
        tail = await self.ctx.ask(self.history, GetTail())
        assert isinstance(tail, Tail)
        self.level = tail.limit
        return tail.limit

    async def _summarise(self, previous: RecapEntry | None, batch: list[HistoryEntry],
                         pinned: list[str]) -> Recap:
        """The new recap of ``previous`` and ``batch`` by the settings' strategy; ``pinned``:
        the texts of the unfolded CRITICAL inputs (``structured``'s task)."""
        s = self.settings
        before = Recap(previous.content.live.text, previous.data) if previous is not None else Recap()
        if s.strategy is RecapStrategy.SIMPLE_EXTRACT:
            return simple_extract(before, batch, s.max_summary_chars)
        if s.strategy is RecapStrategy.STRUCTURED:
            return structured(before, batch, s.max_summary_chars, pinned)
        assert s.strategy is RecapStrategy.MODEL_SUMMARY and self.model is not None
        calls = await self._model_calls(previous)
        try:
            return await model_summary(before, batch, s.max_summary_chars, model=self.model,
                                       counter=self.counter, budget=s.budget, call_index=calls,
                                       thread_id=self.thread_id)
        except ModelError as exc:  # the fold must still happen: the engine may be waiting for it
            log.warning("recap model failed in %s, extracting instead: %s", self.thread_id, exc)
            extracted = simple_extract(before, batch, s.max_summary_chars)
            layer = Layer.load(extracted.data)
            layer.model_calls = calls + 1  # the failed call had its turn: the next fold asks for the next one
            return Recap(extracted.text, layer.dump())

    async def _model_calls(self, previous: RecapEntry | None) -> int:
        """Calls made to the recap model for the thread's recaps so far: the ``call_index`` of
        the next one. Read from the log (the newest recap's data counts them), so a restarted
        maintainer asks for the same turns; a recap from before recaps counted them stands
        for one call each."""
        if previous is None:
            return 0
        counted = Layer.load(previous.data).model_calls
        if counted is not None:
            return counted
        made = await self.ctx.ask(self.history, ReadHistory(kinds=("recap",), include_folded=True))
        assert isinstance(made, HistorySlice)
        return len(made.entries)

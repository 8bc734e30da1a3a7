"""The history store actor: a thread's journal, the only writer of its event log."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

import attrs

from livecontext.protocol.agent import (
    AgentStatus,
    AppEffects,
    AppendInput,
    AppendOutput,
    AppendToolResults,
    GetAppEffects,
    GetStatus,
    GetTail,
    HistoryChanged,
    InputMeasured,
    MeasureInput,
    NotificationPosted,
    PostNotification,
    RecordInterruption,
    RecordPause,
    RecordStepFailure,
    RecordTermination,
    RecordToolResult,
    RecordToolStarted,
    Render,
    Rendered,
    ReplayAppEffects,
    SaveAppState,
    Tail,
)
from livecontext.protocol.context import (
    AccessDenied,
    Capability,
    EditApplied,
    EditConflict,
    EditHistory,
    EntryRef,
    FoldIntoRecap,
    GetFill,
    HistoryEdited,
    HistoryFill,
    HistorySlice,
    HistoryUsage,
    LimitLevel,
    ReadHistory,
)
from livecontext.protocol.history import (
    DENIED_REASON,
    ApprovalRecorded,
    ChatMessage,
    DecideApproval,
    EngineState,
    HistoryEntry,
    ModelInputEntry,
    ModelOutputEntry,
    Notification,
    RecordApprovalRequest,
    Retention,
    ToolCall,
    ToolResultsEntry,
    derive_state,
)
from livecontext.protocol.kernel import ActorId, Message, Topic
from livecontext.protocol.mcp import McpServerRestarted, RecordMcpRestart
from livecontext.protocol.records import (
    AppHistory,
    ApprovalDecided,
    ApprovalRequested,
    ContextCompacted,
    EnginePaused,
    EntryAppended,
    StepFailed,
    StepInterrupted,
    SystemPromptSet,
    TaskTerminated,
    ThreadConfigured,
    ToolResultRecorded,
    ToolResultsAppended,
    ToolStarted,
)
from livecontext.protocol.system import FindInputs, FindMessage, InputsFound, MessageFound
from livecontext.protocol.wire import ProtocolConverter
from livecontext.runtime import Actor, UsageError, handler
from livecontext.runtime.persistence import NewRecord, PersistenceError, StoredRecord, ThreadLog
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS as OVERHEAD
from livecontext.runtime.tokens import TokenCounter

from ._edits import edit_history, fold_into_recap, read_history, unit_conflicts
from ._limits import BudgetLimits, HistoryLimits, truncation
from ._lod import input_content, input_recent_tokens, output_levels, results_content
from ._lod import tools_tokens as count_tools
from ._log import load_state, replay_app_effects, write_snapshot
from ._render import RenderResult, render
from ._stable import ContextPolicy, Planned, StableRenderer, shared_prefix
from ._units import RenderCache
from ._state import HistoryState, SnapshotDraft
from ._windows import windows_records

log = logging.getLogger("livecontext.history")

DEFAULT_SYSTEM_PROMPT = "You are a helpful agent."
"""The system prompt of a new thread when none is given..."""
NOTEBOOK_PROMPT = (
    " Keep what you must remember in your notebook, using its tools; its window shows its "
    "current text."
)
"""...and what it says more when the agent has the Memory Notebook."""


def default_system_prompt(config: ThreadConfigured | None) -> str:
    """The system prompt of a new thread when none is given: it speaks of the notebook only
    to an agent that has one."""
    has_notebook = config is None or any(app.name == "notebook" for app in config.apps)
    return DEFAULT_SYSTEM_PROMPT + (NOTEBOOK_PROMPT if has_notebook else "")


class HistoryConflictError(UsageError):
    """A change that does not fit the thread's state (e.g. an output while waiting for input)."""


def history_topic(thread_id: str) -> Topic:
    """The topic where a thread's history store publishes :class:`HistoryChanged`."""
    return Topic(f"history.{thread_id}")


CAPABILITY_OF: dict[type, Capability] = {
    GetTail: Capability.READ,
    ReadHistory: Capability.READ,
    Render: Capability.READ,
    GetAppEffects: Capability.READ,
    GetStatus: Capability.READ,
    GetFill: Capability.READ,
    ReplayAppEffects: Capability.READ,
    SaveAppState: Capability.APP_STATE,
    AppendInput: Capability.APPEND,
    AppendOutput: Capability.APPEND,
    RecordToolStarted: Capability.APPEND,
    RecordToolResult: Capability.APPEND,
    AppendToolResults: Capability.APPEND,
    RecordPause: Capability.APPEND,
    RecordStepFailure: Capability.APPEND,
    RecordMcpRestart: Capability.NOTIFY,
    RecordApprovalRequest: Capability.APPEND,
    DecideApproval: Capability.DECIDE,
    RecordInterruption: Capability.APPEND,
    RecordTermination: Capability.APPEND,
    PostNotification: Capability.NOTIFY,
    EditHistory: Capability.EDIT,
    FoldIntoRecap: Capability.FOLD,
}
"""What a sender needs for each request to the history store."""


class HistoryStore(Actor):
    """Owns one thread's history: appends, tool results, notifications, rendering, and the
    edits of context management (reflection, compare-and-swap edits, folds, limits).

    Every accepted change is first written to the thread's event log (one transaction per
    request, durable when the log's append returns), then applied to the in-memory state.
    On (re)start the state is rebuilt from the latest snapshot and the log's tail. The rules
    of edits and limits are plain functions of the state (:mod:`._edits`, :mod:`._limits`):
    they return the record to commit, and this actor commits it.
    """

    def __init__(self, thread_id: str, log: ThreadLog, converter: ProtocolConverter,
                 counter: TokenCounter, *, system_prompt: str | None = None,
                 snapshot_every: int = 1000, limits: HistoryLimits | BudgetLimits | None = None,
                 config: ThreadConfigured | None = None, pin_task: bool = True,
                 policy: ContextPolicy | None = None) -> None:
        """
        Args:
            config: The thread's budget, tools and apps, recorded when they differ from the
                log's (``None``: keep what the log says).
            pin_task: The thread's first input is CRITICAL (never folded, always rendered)
                unless its :class:`AppendInput` names another retention class.
            limits: :class:`BudgetLimits` are resolved on start, once the system prompt and
                the tools are known.
            policy: How calls are rendered (``None``: the ``stable`` default, see :mod:`._stable`).
        """
        self.thread_id = thread_id
        self.log = log
        self.converter = converter
        self.counter = counter
        self.wanted_prompt = system_prompt
        self.wanted_config = config
        self.pin_task = pin_task
        self.system_tokens = 0
        self.tools_tokens = 0
        self.snapshot_every = snapshot_every
        self._snapshotting = False
        self._derive_limits = limits if isinstance(limits, BudgetLimits) else None
        self.limits = limits if isinstance(limits, HistoryLimits) else HistoryLimits()
        self.state = HistoryState(thread_id)
        self.topic = history_topic(thread_id)
        self._render_cache = RenderCache()
        self.policy = policy if policy is not None else ContextPolicy()
        self._stable = StableRenderer(self.policy) if self.policy.policy == "stable" else None
        self._last_call: tuple[tuple[ChatMessage, ...], list[int]] = ((), [])
        """The previous call's messages and what each costs (see :meth:`_shared_tokens`)."""
        self._counted_windows: tuple[str, int] = ("", 0)
        self._sender_texts: dict[ActorId, str] = {}
        self._kept_tail: tuple[HistoryState, int, Tail] | None = None
        self.published_level = LimitLevel.OK
        """The level of the last :class:`HistoryUsage` published (a drop to OK is published once)."""

    async def on_start(self) -> None:
        self.state = await load_state(self.log, self.converter, self.thread_id)
        wanted = self.wanted_prompt
        if wanted is None and self.state.seq == 0:
            wanted = default_system_prompt(self.wanted_config)
        changes: list[Message] = []
        if wanted is not None and wanted != self.state.system_prompt:
            changes.append(SystemPromptSet(wanted))
        if self.wanted_config is not None and self.wanted_config != self.state.config:
            changes.append(self.wanted_config)
        if changes:
            await self._commit(changes)
        self.system_tokens = self.counter.count(self.state.system_prompt)
        config = self.state.config
        self.tools_tokens = count_tools(config.tools, self.counter) if config is not None else 0
        if self._derive_limits is not None:
            self.limits = self._derive_limits.resolve(self.system_tokens + self.tools_tokens)
        await self._end_ephemeral()

    async def _end_ephemeral(self) -> None:
        """EPHEMERAL entries are gone when the session that wrote them ends: a new session
        (this start) removes them, as a logged edit, unless that would split a model output
        from its tool results or remove the newest entry (the engine's state stands on it)."""
        newest = self.state.last
        gone = [entry_id for entry_id in self.state.active_with_retention(Retention.EPHEMERAL)
                if newest is None or entry_id != newest.id]
        gone = [i for i in gone if not unit_conflicts(self.state, {i} | set(gone))]
        if gone:
            await self._commit([HistoryEdited((), tuple(gone))])

    # -- reading ------------------------------------------------------------------------------

    def _tail(self) -> Tail:
        """The :class:`Tail` of the state as it is, made once per state: it changes only by a
        commit (which forgets the tail kept) or a new state on start. A step asks for the tail
        its previous write already returned."""
        s = self.state
        kept = self._kept_tail
        if kept is not None and kept[0] is s and kept[1] == s.seq:
            return kept[2]
        tail = self._fresh_tail()
        self._kept_tail = (s, s.seq, tail)
        return tail

    def _fresh_tail(self) -> Tail:
        s = self.state
        last, recorded, started = s.last, s.recorded, s.started
        return Tail(last, tuple(recorded) if recorded else (), tuple(started) if started else (),
                    s.model_outputs, len(s.entries), derive_state(last, len(recorded), s.task.ended is not None,
                                                                 s.task.terminated),
                    self.limits.level_of(s), s.usage, s.task.approvals)

    @handler(inline=True)
    def on_get_tail(self, msg: GetTail) -> Tail:
        return self._tail()

    @handler(inline=True)
    def on_read_history(self, msg: ReadHistory) -> HistorySlice:
        return read_history(self.state, msg)

    @handler(inline=True)
    def on_get_app_effects(self, msg: GetAppEffects) -> AppEffects:
        return AppEffects(self.state.app_histories())

    @handler
    async def on_replay_app_effects(self, msg: ReplayAppEffects) -> AppEffects:
        effects = await replay_app_effects(self.log, self.converter, msg.app, self.state.seq)
        return AppEffects((AppHistory(msg.app, effects=effects),) if effects else ())

    @handler(inline=True)
    def on_save_app_state(self, msg: SaveAppState) -> None:
        # kept in memory for the next snapshot: the effects it stands for stay in the log
        if not self.state.save_app_state(msg.app, msg.effects, msg.state):
            track = self.state.apps.get(msg.app)
            log.warning("thread %s: state of app %r as of effect %d not kept: %s", self.thread_id, msg.app,
                        msg.effects, f"the kept one is as of effect {track.saved} and {track.count} are committed"
                        if track is not None else "it has committed no effect")

    @handler(inline=True)
    def on_get_status(self, msg: GetStatus) -> AgentStatus:
        return self.state.status

    @handler
    async def on_render(self, msg: Render) -> Rendered:
        windows_tokens = self._windows_tokens(msg.windows)
        if self._stable is None:
            result = render_state(self.state, msg.budget, self.counter, windows=msg.windows,
                                  windows_tokens=windows_tokens, system_tokens=self.system_tokens,
                                  tools_tokens=self.tools_tokens, cache=self._render_cache)
        else:
            planned = plan_state(self._stable, self.state, msg.budget, self.counter, windows=msg.windows,
                                 windows_tokens=windows_tokens, system_tokens=self.system_tokens,
                                 tools_tokens=self.tools_tokens, cache=self._render_cache)
            if msg.for_call and planned.compaction is not None:  # recorded, so that the log says what was sent
                record, frame = planned.compaction
                await self._commit([record, *windows_records(self.state, msg.apps)])
                self._stable.keep(frame)
                msg = attrs.evolve(msg, apps=())  # (recorded with it)
            result = planned.result
        if msg.for_call and (changed := windows_records(self.state, msg.apps)):
            await self._commit(changed)
        shared = self._shared_tokens(result.messages) if msg.for_call else 0
        return Rendered(result.messages, result.tokens, result.entries, result.spans, shared)

    def _shared_tokens(self, messages: tuple[ChatMessage, ...]) -> int:
        """The tokens of the leading messages of this call's context that the previous call
        sent too (the tools' schemas first, as providers put them), and remember this call's.

        Each message is counted once while calls keep sending it (the ``stable`` policy sends
        the same objects), so this costs what is new in the call, not the whole context."""
        previous, costs = self._last_call
        same = shared_prefix(previous, messages)
        kept = costs[:same]
        counted = dict(zip(map(id, previous), costs))
        now = kept + [counted.get(id(m)) or message_tokens(m, self.counter) for m in messages[same:]]
        self._last_call = (messages, now)
        return (self.tools_tokens if same else 0) + sum(kept)

    def _windows_tokens(self, windows: str) -> int:
        """The tokens of the apps' windows: counted once while the text stays the same (it
        changes only when an app does, and is asked for at every model call)."""
        if not windows:
            return 0
        if windows != self._counted_windows[0]:
            self._counted_windows = (windows, self.counter.count(windows))
        return self._counted_windows[1]

    # -- writing --------------------------------------------------------------------------------

    def _sender(self) -> ActorId:
        env = self.ctx.current
        return env.sender if env is not None else self.ctx.self_id

    def _now(self) -> dt.datetime:
        env = self.ctx.current
        return env.sent_at if env is not None else self.ctx.runtime.clock.now()

    def _next_id(self) -> str:
        return f"e{self.state.next_entry}"

    def _expect(self, *allowed: Any, what: str) -> None:
        if self.state.state not in allowed:
            raise HistoryConflictError(
                f"cannot {what} in thread {self.thread_id}: its state is "
                f"{self.state.state.value}, expected {' or '.join(a.value for a in allowed)}"
            )

    @handler(inline=True)
    def on_measure_input(self, msg: MeasureInput) -> InputMeasured:
        """What an input would cost and the room it would have, and whether it would be pinned
        (the same rule as :meth:`on_append_input`), before it is given."""
        first = not msg.queued and self.state.next_entry == 1 and not self.state.entries
        pinned = msg.retention is Retention.CRITICAL or (msg.retention is None and first and self.pin_task)
        tokens = self.counter.count(msg.text) + OVERHEAD
        config = self.state.config
        if config is None:
            return InputMeasured(tokens, 0, 0, pinned)
        system = self.system_tokens + OVERHEAD if self.state.system_prompt else 0
        return InputMeasured(tokens, config.budget - system - self.tools_tokens, config.budget, pinned)

    @handler
    async def on_append_input(self, msg: AppendInput) -> Tail:
        if msg.interrupting:  # taken before the next model call (see AppendInput.interrupting)
            self._expect(EngineState.WAITING_INPUT, EngineState.PENDING_INPUT, EngineState.PENDING_TOOL_RESULTS,
                         what="append an interrupting input")
        else:
            self._expect(EngineState.WAITING_INPUT, what="append an input")
        if not msg.text.strip():
            raise HistoryConflictError("blank input is not recorded; send text with something in it")
        if msg.key is not None and msg.key in self.state.input_keys:
            return self._tail()  # fed twice (a run resumed while its first feed was still buffered): once
        notes = tuple(self.state.pending_notifications)
        retention = msg.retention
        if retention is None:  # the thread's first input is its task
            first = self.state.next_entry == 1 and not self.state.entries
            retention = Retention.CRITICAL if first and self.pin_task else Retention.COMPRESSIBLE
        entry = ModelInputEntry(
            id=self._next_id(), revision=1, author=self._sender(), created_at=self._now(),
            retention=retention, content=input_content(msg.text, notes, self.counter, self._input_recent_tokens()),
            text=msg.text, notifications=notes, key=msg.key,
        )
        await self._commit([EntryAppended(entry)])
        return self._tail()

    def _input_recent_tokens(self) -> int:
        """The most an input's RECENT may cost: a quarter of the thread's budget, at most
        :data:`~._lod.INPUT_RECENT_TOKENS` (see :func:`~._lod.input_recent_tokens`)."""
        config = self.state.config
        return input_recent_tokens(config.budget if config is not None else None)

    @handler
    async def on_append_output(self, msg: AppendOutput) -> Tail:
        self._expect(EngineState.PENDING_INPUT, EngineState.PENDING_TOOL_RESULTS, what="append a model output")
        content, recent_arguments, gist_arguments = output_levels(msg.text, msg.tool_calls, self.counter)
        # an output that only calls tools whose results may go, and says nothing, may go with them
        retention = self._calls_retention(msg.tool_calls) if not msg.text.strip() else Retention.COMPRESSIBLE
        entry = ModelOutputEntry(
            id=self._next_id(), revision=1, author=self._sender(), created_at=self._now(),
            retention=retention, content=content, tool_calls=msg.tool_calls,
            model=msg.model, usage=msg.usage, sent_tokens=msg.sent_tokens, shared_tokens=msg.shared_tokens,
            recent_arguments=recent_arguments,
            gist_arguments=gist_arguments,
        )
        await self._commit([EntryAppended(entry)])
        return self._tail()

    @handler
    async def on_tool_started(self, msg: RecordToolStarted) -> None:
        self._expect(EngineState.WAITING_TOOL_RESULTS, what="start a tool")
        await self._commit([ToolStarted(msg.call_id, msg.name)])

    @handler
    async def on_tool_result(self, msg: RecordToolResult) -> Tail:
        self._expect(EngineState.WAITING_TOOL_RESULTS, what="record a tool result")
        last = self.state.last
        assert isinstance(last, ModelOutputEntry)
        expected = last.tool_calls[len(self.state.recorded)].id
        if msg.result.call_id != expected:
            raise HistoryConflictError(
                f"tool result for {msg.result.call_id} out of order: the next call is {expected}"
            )
        await self._commit([ToolResultRecorded(msg.result, msg.effect)])
        return self._tail()

    @handler
    async def on_append_results(self, msg: AppendToolResults) -> Tail:
        self._expect(EngineState.TOOL_RESULTS_READY, what="append the tool results")
        notes = tuple(self.state.pending_notifications)
        last = self.state.last
        calls = last.tool_calls if isinstance(last, ModelOutputEntry) else ()
        # no results: they are the ones recorded (each text is stored once, in its
        # ToolResultRecorded); replaying the entry puts them in
        entry = ToolResultsEntry(
            id=self._next_id(), revision=1, author=self._sender(), created_at=self._now(),
            retention=self._calls_retention(calls), content=results_content(notes, self.counter),
            notifications=notes,
        )
        await self._commit([ToolResultsAppended(entry)])
        return self._tail()

    @handler
    async def on_record_pause(self, msg: RecordPause) -> None:
        """Record that the engine stopped for a pause, if it stopped with work left and the
        log does not say so already (an engine waiting for input has nothing to pause). A
        spend limit's pause is recorded with its reason, unless the log's pause has that
        reason already (run again under the same limit, the engine stops the same way)."""
        s = self.state
        if s.state is EngineState.WAITING_INPUT:
            return
        if not s.task.paused or (msg.reason is not None and msg.reason != s.task.pause_reason):
            await self._commit([EnginePaused(msg.reason)])

    @handler
    async def on_record_interruption(self, msg: RecordInterruption) -> None:
        """Record that an interrupt or a termination cut the step in flight (the state stays)."""
        await self._commit([StepInterrupted(msg.what, msg.by)])

    @handler
    async def on_record_termination(self, msg: RecordTermination) -> None:
        """Record that a ``terminate`` input ended the task, with a notification that says so
        (the model reads it with the next input, which starts a new task). Every call of the
        last output must have its results appended first: a new input after an orphan call
        would make a context the chat APIs refuse."""
        if self.state.state in (EngineState.WAITING_TOOL_RESULTS, EngineState.TOOL_RESULTS_READY):
            raise HistoryConflictError(
                f"cannot terminate the task of thread {self.thread_id} with tool calls not answered "
                f"(state {self.state.state.value}): record their results and append them first")
        note = Notification(f"n{self.state.next_notification}", self._sender(),
                            f"The task was terminated by {msg.by}: {msg.reason}", self._now())
        await self._commit([TaskTerminated(msg.reason, msg.by), NotificationPosted(note)])

    @handler
    async def on_record_failure(self, msg: RecordStepFailure) -> None:
        """Record a failed step, unless the log's latest failure is this one (a step tried
        again and failed the same way changes nothing)."""
        if not msg.error.strip():
            raise HistoryConflictError("a step failure needs its error's text")
        if self.state.task.failure != msg.error:
            await self._commit([StepFailed(msg.error)])

    @handler
    async def on_record_mcp_restart(self, msg: RecordMcpRestart) -> None:
        """Record that an MCP server died and its connection was made again."""
        await self._commit([McpServerRestarted(msg.server, msg.reason)])

    @handler
    async def on_record_approval_request(self, msg: RecordApprovalRequest) -> Tail:
        """Record that ``msg.calls`` (calls of the last output still to run) wait for approval,
        in one record; calls requested already are left out (nothing is written if none is new)."""
        self._expect(EngineState.WAITING_TOOL_RESULTS, what="request an approval")
        last = self.state.last
        assert isinstance(last, ModelOutputEntry)
        to_run = {call.id for call in last.tool_calls[len(self.state.recorded):]}
        strays = [call.id for call in msg.calls if call.id not in to_run]
        if strays:
            raise HistoryConflictError(f"cannot request an approval of {', '.join(strays)} in thread "
                                       f"{self.thread_id}: not a call of its last output still to run")
        known = {a.call.id for a in self.state.task.approvals}
        new = tuple(call for call in msg.calls if call.id not in known)
        if new:
            await self._commit([ApprovalRequested(new)])
        return self._tail()

    @handler
    async def on_decide_approval(self, msg: DecideApproval) -> ApprovalRecorded:
        """Record a person's decision on a call waiting for approval (see :class:`DecideApproval`)."""
        approvals = self.state.task.approvals
        pending = [a.call.id for a in approvals if a.pending]
        waiting = (f"the calls waiting are {', '.join(pending)}" if pending
                   else "no call waits for approval")
        found = next((a for a in approvals if a.call.id == msg.call_id), None)
        if found is None:
            raise HistoryConflictError(f"thread {self.thread_id} has no pending approval for call id "
                                       f"{msg.call_id!r}: {waiting} (see `livecontext state`)")
        if found.decided is not None:
            raise HistoryConflictError(
                f"call {msg.call_id} of thread {self.thread_id} is already "
                f"{'approved' if found.decided.approved else 'denied'} (by {found.decided.by}); "
                f"a decision is final: {waiting}")
        arguments = msg.arguments
        if arguments is not None:
            if not msg.approved:
                raise HistoryConflictError("edited arguments go with an approval, not a deny: approve the call "
                                           "with them, or deny it with a reason")
            arguments = json_object_text(arguments)
        reason = " ".join(msg.reason.split()) if not msg.approved else ""
        decided = ApprovalDecided(msg.call_id, msg.approved, arguments, reason or ("" if msg.approved else DENIED_REASON),
                                  msg.by.strip() or DEFAULT_DECIDER)
        await self._commit([decided])
        return ApprovalRecorded(decided, tuple(a.call.id for a in self.state.task.approvals if a.pending))

    def _calls_retention(self, calls: tuple[ToolCall, ...]) -> Retention:
        """The retention class of results of ``calls``: what their tools declare when every one
        declares DISPOSABLE or EPHEMERAL (the least disposable of those), else COMPRESSIBLE."""
        config = self.state.config
        if not calls or config is None:
            return Retention.COMPRESSIBLE
        declared = {spec.name: spec.retention for spec in config.tools}
        classes = {declared.get(call.name, Retention.COMPRESSIBLE) for call in calls}
        if classes <= {Retention.DISPOSABLE, Retention.EPHEMERAL}:
            return Retention.DISPOSABLE if Retention.DISPOSABLE in classes else Retention.EPHEMERAL
        return Retention.COMPRESSIBLE

    @handler
    async def on_post_notification(self, msg: PostNotification) -> NotificationPosted:
        if not msg.text.strip():
            raise HistoryConflictError("a notification needs text")
        if msg.key is not None:
            known = self.state.keyed.get(msg.key)
            if known is not None:  # posted before (a call run again): once is enough
                return NotificationPosted(known.notification)
        note = Notification(f"n{self.state.next_notification}", self._sender(), msg.text, self._now(), msg.key)
        posted = NotificationPosted(note)
        await self._commit([posted])
        await self.ctx.publish(self.topic, posted)
        return posted

    @handler(inline=True)
    def on_find_inputs(self, msg: FindInputs) -> InputsFound:
        return InputsFound(tuple(k for k in msg.keys if k in self.state.input_keys))

    @handler(inline=True)
    def on_find_message(self, msg: FindMessage) -> MessageFound:
        known = self.state.keyed.get(msg.key)
        if known is None:
            return MessageFound()
        if known.read_in is None:
            return MessageFound(known.notification)
        reply, latest = reply_after(self.state, known.read_in)
        return MessageFound(known.notification, known.read_in, reply, latest)

    # -- permissions ----------------------------------------------------------------------------

    def capability_for(self, message_type: type) -> Capability | None:
        return CAPABILITY_OF.get(message_type)

    async def on_denied(self, message: Message, capability: object) -> Message:
        env = self.ctx.current
        assert env is not None and isinstance(capability, Capability)
        denied = AccessDenied(env.sender, capability, type(message).__name__)
        # the attempt is audited in the log (the denial names who tried); nothing changes.
        # The record is the store's: it decided the denial
        await self._commit([denied], own=True)
        return denied

    # -- edits ------------------------------------------------------------------------------------

    @handler
    async def on_edit_history(self, msg: EditHistory) -> Message:
        edited = edit_history(self.state, msg, self.counter)
        if isinstance(edited, EditConflict):
            return edited
        await self._commit([edited])
        return EditApplied(tuple(EntryRef(e.id, e.revision) for e in edited.entries), None, self.state.seq)

    @handler
    async def on_fold(self, msg: FoldIntoRecap) -> Message:
        env = self.ctx.current
        assert env is not None
        folded = fold_into_recap(self.state, msg, self.counter, author=env.sender, at=env.sent_at)
        if isinstance(folded, EditConflict):
            return folded
        await self._commit([folded])
        new_refs = tuple(EntryRef(i, self.state.entry(i).revision) for i in folded.folded)  # type: ignore[union-attr]
        return EditApplied(new_refs, folded.recap, self.state.seq)

    # -- limits -----------------------------------------------------------------------------------

    @handler(inline=True)
    def on_get_fill(self, msg: GetFill) -> HistoryFill:
        s, lim = self.state, self.limits
        return HistoryFill(self.thread_id, lim.level_of(s), len(s.active), s.active_tokens, s.active_bytes,
                           lim.max_entries, lim.max_tokens, lim.max_bytes, lim.soft, lim.hard, lim.truncate)

    def limits_to_check(self) -> bool:
        """Whether :meth:`check_limits` would do anything now: drop entries or publish a usage."""
        return self.limits.level_of(self.state) is not LimitLevel.OK or self.published_level is not LimitLevel.OK

    async def check_limits(self) -> None:
        """After a change: drop DISPOSABLE entries at the truncate threshold; publish the usage.

        The drop is the store's own decision, though made while it handles another actor's
        append (the engine's, which may only append): its record names the store.
        """
        edit = truncation(self.state, self.limits)
        if edit is not None:
            await self._commit([edit], own=True)
        level = self.limits.level_of(self.state)
        if level is not LimitLevel.OK or level is not self.published_level:
            self.published_level = level
            s = self.state
            await self.ctx.publish(self.topic, HistoryUsage(
                self.thread_id, level, len(s.active), s.active_tokens, s.active_bytes))

    def settle_limits(self) -> None:
        """:meth:`check_limits` for a commit made at once, with nobody subscribed: the same
        drop, and no usage to publish (it would reach no one)."""
        edit = truncation(self.state, self.limits)
        if edit is not None:
            self._commit_now([edit], own=True)
        self.published_level = self.limits.level_of(self.state)

    # -- committing -------------------------------------------------------------------------------

    def _writes_at_once(self) -> bool:
        """Whether a commit now needs no ``await``: the log appends without waiting (a
        ``memory:`` store, nothing else in progress on it) and nobody subscribes to the
        history's topic (so there is nothing to publish)."""
        return not self.log.would_block() and not self.ctx.runtime.has_subscribers(self.topic)

    async def _commit(self, payloads: list[Message], *, own: bool = False) -> None:
        """Write ``payloads`` as one transaction, apply them to the state, publish the change, then check
        the limits.

        Each record names the actor that decided it: the sender of the message being handled,
        unless ``own``: a change the store decides itself (a drop at the truncate threshold, a
        denial), though it makes it while handling another actor's message.
        """
        if self._writes_at_once():
            self._commit_now(payloads, own=own)
            return
        stored = await self.log.append(self._records(payloads, own))
        last = self._applied(stored, payloads)
        if self.ctx.runtime.has_subscribers(self.topic):  # (else nobody would receive it)
            await self.ctx.publish(self.topic, HistoryChanged(
                self.thread_id, last.kind, len(self.state.entries), last.seq, self._appended(payloads[-1])))
        if self._appends_entry(payloads) and self.limits_to_check():  # (else nothing to do)
            await self.check_limits()

    def _commit_now(self, payloads: list[Message], *, own: bool = False) -> None:
        """:meth:`_commit` when :meth:`_writes_at_once`: no ``await``, so no cancel point, and
        nothing to publish (nobody subscribes)."""
        stored = self.log.append_nowait(self._records(payloads, own))
        self._applied(stored, payloads)
        if self._appends_entry(payloads) and self.limits_to_check():
            self.settle_limits()

    def _appended(self, payload: Message) -> HistoryEntry | None:
        """The entry ``payload`` (just folded in) appended, as the state holds it, if any."""
        if isinstance(payload, (EntryAppended, ToolResultsAppended)):
            return self.state.entry(payload.entry.id)
        return None

    @staticmethod
    def _appends_entry(payloads: list[Message]) -> bool:
        for payload in payloads:
            if isinstance(payload, (EntryAppended, ToolResultsAppended)):
                return True
        return False

    def _records(self, payloads: list[Message], own: bool = False) -> list[NewRecord]:
        """The records of ``payloads``, stamped with the sender and times of the message being
        handled; with the store's own id and the time now if ``own`` or if it handles none
        (on start)."""
        self._kept_tail = None  # the state is about to change (even if applying fails midway)
        env = self.ctx.current
        if env is not None and not own:
            sender, sent_at, mono = self._sender_text(env.sender), env.sent_at, env.sent_mono_ns
        else:
            sender, sent_at, mono = self._sender_text(self.ctx.self_id), self.ctx.runtime.clock.now(), 0
        dump = self.converter.dump_message
        return [NewRecord.encoding(sender, sent_at, mono, type(p).__name__, dump(p)) for p in payloads]

    def _applied(self, stored: list[StoredRecord], payloads: list[Message]) -> StoredRecord:
        """Apply the committed records to the state; start a snapshot if one is due.
        Returns the last record."""
        apply = self.state.apply
        for rec, payload in zip(stored, payloads, strict=True):
            apply(rec.seq, payload)
        last = stored[-1]
        if (self.snapshot_every and not self._snapshotting
                and last.seq // self.snapshot_every != (last.seq - len(stored)) // self.snapshot_every):
            # taken now (immutable entries: a cheap copy), serialized and written in the
            # background, so a large snapshot never stalls this actor or the runtime
            self._snapshotting = True
            self.ctx.nursery.start_soon(self._snapshot, self.state.snapshot())
        return last

    def _sender_text(self, sender: ActorId) -> str:
        """``str(sender)``, kept: a thread's records name the same few senders over and over."""
        text = self._sender_texts.get(sender)
        if text is None:
            if len(self._sender_texts) >= 64:  # (a thread with many writers: start afresh)
                self._sender_texts.clear()
            text = self._sender_texts[sender] = str(sender)
        return text

    async def _snapshot(self, snap: SnapshotDraft) -> None:
        """Write a snapshot of the state. The records are committed already: a snapshot only
        shortens replay, so failing to write one is logged, never reported as the request's
        failure (the request succeeded)."""
        try:
            await write_snapshot(self.log, self.converter, self.state, snap)
        except PersistenceError as exc:
            log.warning("thread %s: no snapshot at seq %d: %s", self.thread_id, snap.seq, exc)
        finally:
            self._snapshotting = False


DEFAULT_DECIDER = "user"
"""Who decided an approval when the caller named nobody."""


def json_object_text(text: str) -> str:
    """``text`` if it is a JSON object (edited arguments), written compactly.

    Raises:
        HistoryConflictError: it is not JSON, or not an object.
    """
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise HistoryConflictError(f"edited arguments are not JSON ({exc}): give a JSON object such as "
                                   '\'{"amount": 5}\'') from None
    if not isinstance(value, dict):
        raise HistoryConflictError(f"edited arguments must be a JSON object of the tool's arguments, got "
                                   f"{type(value).__name__} {text.strip()[:60]!r}")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def reply_after(state: HistoryState, entry_id: str) -> tuple[str | None, bool]:
    """The text of the agent's reply to the turn that entry ``entry_id`` belongs to (its first
    model output after it that calls no tool, unless a later input comes first; ``None``: no
    reply yet, or the entry is gone), and whether no input came after the entry."""
    at = state.pos.get(entry_id)
    if at is None:
        return None, False
    reply = None
    for entry in state.entries[at + 1:]:
        if isinstance(entry, ModelInputEntry):
            return reply, False
        if reply is None and isinstance(entry, ModelOutputEntry) and not entry.tool_calls:
            reply = entry.content.live.text
    return reply, True


def render_state(state: HistoryState, budget: int, counter: TokenCounter, *, windows: str = "",
                 windows_tokens: int | None = None, system_tokens: int | None = None,
                 tools_tokens: int | None = None, cache: RenderCache | None = None,
                 stable: StableRenderer | None = None) -> RenderResult:
    """Render a thread's state as its agent does: its system prompt and recorded tools, its
    pinned entries, ``windows`` in the latest observation (counts not given are counted).

    ``stable`` renders the next call under that policy (:func:`plan_state`, its compaction
    not kept); without it, the ``fill`` policy.

    Raises:
        BudgetTooSmallError: the system prompt, the tools and the latest observation do not fit.
    """
    if tools_tokens is None:
        tools_tokens = count_tools(state.config.tools, counter) if state.config is not None else 0
    if system_tokens is None:
        system_tokens = counter.count(state.system_prompt)
    if windows_tokens is None:
        windows_tokens = counter.count(windows)
    if stable is not None:
        return plan_state(stable, state, budget, counter, windows=windows, windows_tokens=windows_tokens,
                          system_tokens=system_tokens, tools_tokens=tools_tokens, cache=cache).result
    pinned = state.pinned_positions() if state.pinned else ()
    return render(
        state.active, state.recaps, budget, system_prompt=state.system_prompt, system_tokens=system_tokens,
        windows=windows, windows_tokens=windows_tokens, tools_tokens=tools_tokens, pinned=pinned,
        cache=cache, count=counter.count)


def plan_state(stable: StableRenderer, state: HistoryState, budget: int, counter: TokenCounter, *, windows: str,
               windows_tokens: int, system_tokens: int, tools_tokens: int, cache: RenderCache | None) -> Planned:
    """The next call's context of a thread under the ``stable`` policy (see :mod:`._stable`)."""
    return stable.plan(state.entries, state.pos, state.active, state.recaps, budget, system_prompt=state.system_prompt,
                       system_tokens=system_tokens, windows=windows, windows_tokens=windows_tokens,
                       tools_tokens=tools_tokens, pinned=state.pinned_positions() if state.pinned else (),
                       cache=cache, count=counter.count)


def restore_frame(stable: StableRenderer, record: ContextCompacted, state: HistoryState, counter: TokenCounter,
                  cache: RenderCache | None = None) -> None:
    """Rebuild the frame of ``record`` from ``state``, the thread as of that record (``render
    --at`` and ``trace``: what the calls after it were sent)."""
    tools_tokens = count_tools(state.config.tools, counter) if state.config is not None else 0
    stable.restore(record, state.active, state.recaps, system_prompt=state.system_prompt,
                   system_tokens=counter.count(state.system_prompt), tools_tokens=tools_tokens,
                   pinned=state.pinned_positions() if state.pinned else (), cache=cache, count=counter.count)


def message_tokens(message: ChatMessage, counter: TokenCounter) -> int:
    """What one chat message costs as the renderer counts it: its text, its tool calls and
    the per-message overhead (an estimate: the renderer's own counts are cached per entry)."""
    tokens = OVERHEAD + (counter.count(message.content) if message.content else 0)
    for call in message.tool_calls:
        tokens += CALL_OVERHEAD_TOKENS + counter.count(call.name) + counter.count(call.arguments)
    return tokens


CALL_OVERHEAD_TOKENS = 3
"""What a tool call costs beyond its name and arguments (its id and the JSON around them)."""

"""One thread's records as messages: each record is the request its sender made of the history
store (an ask, with its reply, or a tell), with what the protocol says came before it (the
model call before an output, the tool call before a result) and the changes the store
published after it.

The thread's state is replayed with the history store's own code (``HistoryState.apply``), so
the engine's state after each record is the one the engine derived, and each model call is
rendered as the store rendered it (see :mod:`._context`).
"""

from __future__ import annotations

from attrs import frozen

from livecontext.protocol.agent import NotificationPosted
from livecontext.protocol.context import AccessDenied, EntriesFolded, HistoryEdited
from livecontext.protocol.history import (
    OUTPUT,
    TASK_ABANDON,
    TASK_COMPLETE,
    WAIT_PARENT,
    WAIT_USER_RESPONSE,
    EngineState,
    ModelInputEntry,
    ModelOutputEntry,
    RecapEntry,
    ToolResultsEntry,
    ToolStatus,
    Usage,
)
from livecontext.protocol.kernel import Message
from livecontext.protocol.mcp import McpServerRestarted
from livecontext.protocol.records import (
    AppEffect,
    ContextCompacted,
    ApprovalDecided,
    ApprovalRequested,
    EnginePaused,
    EntryAppended,
    RenderPolicy,
    StepFailed,
    StepInterrupted,
    SystemPromptSet,
    TaskTerminated,
    ThreadConfigured,
    ToolResultRecorded,
    ToolResultsAppended,
    ToolStarted,
    app_effect_of,
)
from livecontext.runtime.tokens import TokenCounter

from ..mcp import mcp_servers_of
from ..history import (
    BudgetTooSmallError,
    ContextPolicy,
    HistoryState,
    RenderCache,
    StableRenderer,
    render_state,
    restore_frame,
    tools_tokens,
)
from ._context import CallContext, ContextReader
from ._diagram import Diagram, column_of, line
from ._model import (ActorRole, CallUsage, ContextEntry, LevelTokens, MarkType, MessageMode, ModelCall, StateSpan,
                     TraceActor)
from ._windows import AppWindows

DEFAULT_BUDGET = 8000
"""The budget a thread that never recorded its own is rendered with (as ``render`` does)."""

_CONTROL_TOOLS = frozenset({TASK_COMPLETE, TASK_ABANDON, OUTPUT, WAIT_USER_RESPONSE, WAIT_PARENT})
_MODEL_STATES = (EngineState.PENDING_INPUT, EngineState.PENDING_TOOL_RESULTS)


@frozen
class Record:
    """One record of the traced thread, decoded, with where it goes on the timeline."""

    seq: int
    """Its place on the timeline: its seq, or in a system trace its system seq."""
    t: float
    sender: str
    payload: Message


class ThreadTracer:
    """Feeds a thread's records, in order, into a :class:`Diagram`; keeps the engine's states
    and the model calls."""

    def __init__(self, thread: str, diagram: Diagram, agents: dict[str, str], windows: AppWindows,
                 counter: TokenCounter, subscribers: list[str], *, asked: dict[str, tuple[int, str]]) -> None:
        """
        Args:
            agents: In a system trace, each agent's thread id -> its name (else empty).
            subscribers: The actors the history store publishes its changes to.
            asked: In a system trace, the arrows of the keyed messages drawn to other agents
                (see :attr:`SystemTimeline.asked <._system_timeline.SystemTimeline.asked>`), filled as
                the timeline is drawn: an ``ask_agent`` result is drawn as its answer.
        """
        self.thread = thread
        self.diagram = diagram
        self.agents = agents
        self.windows = windows
        self.counter = counter
        self._columns: dict[str, str] = {}
        self._counted: tuple[ThreadConfigured | None, str, int, int] = (None, "", 0, 0)
        """The configuration and system prompt last rendered with, and their tools' and prompt's tokens."""
        self.state = HistoryState(thread)
        self.contexts = ContextReader(counter, RenderCache())
        self._stable: tuple[RenderPolicy | None, StableRenderer | None] = (None, None)
        """The thread's recorded policy and, under ``stable``, its renderer, which replays the
        frames as the calls come (each compaction as the history store made it, but after a
        restart of the agent: its store compacted at its first call, which the log does not say)."""
        self.engine = self._column(f"engine/{thread}")
        self.history = self._column(f"history/{thread}")
        self.subscribers = [self._column(s) for s in subscribers]
        self.states: list[StateSpan] = []
        self.calls: list[ModelCall] = []
        self._entered: tuple[EngineState, float, int] | None = None
        """The state the engine is in, and the ``(t, seq)`` of the record that put it there."""
        self.last: tuple[int, float] | None = None
        """``(seq, t)`` of the record fed last: a model or tool call started after it."""
        self.budget = 0
        self._model: str | None = None
        self.agent_name = agents.get(thread)
        """In a system trace, the traced thread's agent's name (its messages are keyed by it)."""
        self.asked = asked

    def _mcp_server(self, tool: str) -> str | None:
        """The MCP server whose tool ``tool`` is, if it is one (as the thread recorded its apps)."""
        config = self.state.config
        return mcp_servers_of(config.apps).get(tool) if config is not None else None

    def _column(self, actor: str) -> str:
        """The column of actor id ``actor`` (added to the diagram the first time)."""
        known = self._columns.get(actor)
        if known is None:
            known = self._columns[actor] = self.diagram.add_column(column_of(actor, self.thread, self.agents))
        return known

    async def feed(self, rec: Record, thread_seq: int) -> None:
        """Add the messages, marks and model call of one record, then apply it to the state."""
        payload = rec.payload
        sender = self._column(rec.sender)
        started = self.last or (rec.seq, rec.t)
        d = self.diagram
        if isinstance(payload, (EntryAppended, ToolResultsAppended)):
            await self._appended(rec, sender, started)
        elif isinstance(payload, ToolResultRecorded):
            self._result(rec, sender, started, payload)
        elif isinstance(payload, ToolStarted):
            d.ask(rec.seq, rec.t, sender, self.history, "RecordToolStarted", f"{payload.name} {payload.call_id} starts",
                  "Ack")
        elif isinstance(payload, NotificationPosted):
            note = payload.notification
            d.ask(rec.seq, rec.t, sender, self.history, "PostNotification", note.text, "NotificationPosted",
                  f"{note.id} posted")
            d.mark(rec.seq, rec.t, MarkType.NOTIFICATION, str(note.sender), f"{note.id}: {note.text}")
        elif isinstance(payload, HistoryEdited):
            self._edited(rec, sender, payload)
        elif isinstance(payload, EntriesFolded):
            summary = f"folded {_ids(payload.folded)} into {payload.recap.id}: {payload.recap.content.gist.text}"
            d.ask(rec.seq, rec.t, sender, self.history, "FoldIntoRecap", summary, "EditApplied",
                  f"{payload.recap.id} stands for {len(payload.folded)} entries")
            d.mark(rec.seq, rec.t, MarkType.FOLD, rec.sender, summary)
        elif isinstance(payload, AccessDenied):
            who = str(payload.sender)
            tried = self._column(who)
            summary = f"{payload.action} denied to {who}: it needs {payload.capability.value}"
            d.ask(rec.seq, rec.t, tried, self.history, payload.action, f"{payload.action} (as {who})",
                  "AccessDenied", summary)
            d.mark(rec.seq, rec.t, MarkType.DENIAL, who, summary)
        elif isinstance(payload, EnginePaused):
            d.ask(rec.seq, rec.t, sender, self.history, "RecordPause", "paused with work left", "Ack")
            d.mark(rec.seq, rec.t, MarkType.PAUSE, rec.sender, f"paused at {self.state.state.value} with work left")
        elif isinstance(payload, StepFailed):
            self._failed(rec, sender, started, payload)
        elif isinstance(payload, McpServerRestarted):
            said = f"MCP server {payload.server} restarted: {payload.reason}"
            d.ask(rec.seq, rec.t, sender, self.history, "RecordMcpRestart", said, "Ack")
            d.mark(rec.seq, rec.t, MarkType.FAILURE, rec.sender, said)
        elif isinstance(payload, ApprovalRequested):
            d.ask(rec.seq, rec.t, sender, self.history, "RecordApprovalRequest",
                  "approval of " + ", ".join(f"{c.name} {c.id}" for c in payload.calls), "Tail")
        elif isinstance(payload, ApprovalDecided):
            said = (f"{payload.call_id} approved by {payload.by}" + (" (arguments edited)" if payload.arguments else "")
                    if payload.approved else f"{payload.call_id} denied by {payload.by}: {payload.reason}")
            d.ask(rec.seq, rec.t, sender, self.history, "DecideApproval", said, "ApprovalRecorded")
        elif isinstance(payload, StepInterrupted | TaskTerminated):
            said = (f"{payload.what} interrupted by {payload.by}" if isinstance(payload, StepInterrupted)
                    else f"task terminated by {payload.by}: {payload.reason}")
            asked = "RecordInterruption" if isinstance(payload, StepInterrupted) else "RecordTermination"
            d.ask(rec.seq, rec.t, sender, self.history, asked, said, "Ack")
            d.mark(rec.seq, rec.t, MarkType.PAUSE, rec.sender, said)
        elif isinstance(payload, (SystemPromptSet, ThreadConfigured)):
            d.send(rec.seq, rec.t, sender, self.history, type(payload).__name__, MessageMode.TELL, _said(payload))
        elif isinstance(payload, ContextCompacted):
            d.send(rec.seq, rec.t, sender, self.history, "ContextCompacted", MessageMode.TELL,
                   f"the context compacted under {payload.target:,} tokens, up to {payload.upto or 'no entry'}: "
                   "the calls until the next compaction start with it")
        else:
            d.send(rec.seq, rec.t, sender, self.history, type(payload).__name__, MessageMode.TELL,
                   type(payload).__name__)
        if not isinstance(payload, (SystemPromptSet, ThreadConfigured)):  # (written on start: nobody listens yet)
            self._publish(rec, "HistoryChanged", f"{type(payload).__name__} (seq {thread_seq})")
        if isinstance(payload, NotificationPosted):  # (the store publishes the notification itself too)
            note = payload.notification
            self._publish(rec, "NotificationPosted", f"{note.id} from {note.sender}")
        self._apply(rec, thread_seq, payload)

    def _renderer(self) -> StableRenderer | None:
        """The renderer of the thread's recorded policy (``None``: ``fill``), kept while the policy stays."""
        state = self.state
        recorded = state.config.context if state.config is not None else None
        if self._stable[0] != recorded:
            policy = ContextPolicy.of(recorded)
            self._stable = (recorded, StableRenderer(policy) if policy.policy == "stable" else None)
        return self._stable[1]

    def _apply(self, rec: Record, thread_seq: int, payload: Message) -> None:
        self.state.apply(thread_seq, payload)
        if isinstance(payload, ContextCompacted):
            renderer = self._renderer()
            if renderer is not None:  # the calls until the next compaction start with what it rendered
                restore_frame(renderer, payload, self.state, self.counter, self.contexts.cache)
        if isinstance(payload, ThreadConfigured):
            self.budget = payload.budget
            self.windows.configured()
        elif isinstance(payload, ToolResultRecorded) and payload.effect is not None:
            effect = app_effect_of(payload.effect)
            if effect is not None:
                self.windows.committed(effect)
        state, t0, seq0 = self._entered or (EngineState.WAITING_INPUT, rec.t, rec.seq)  # (an empty history waits)
        self._entered = (state, t0, seq0)
        now = self.state.state
        if now is not state:
            self.states.append(StateSpan(state, t0, rec.t, seq0, rec.seq))
            self._entered = (now, rec.t, rec.seq)
        self.last = (rec.seq, rec.t)

    def finish(self) -> tuple[StateSpan, ...]:
        """The engine's states, the last one open until the last record."""
        if self._entered is None or self.last is None:
            return ()
        state, t0, seq0 = self._entered
        seq1, t1 = self.last
        return (*self.states, StateSpan(state, t0, max(t0, t1), seq0, max(seq0, seq1)))

    # -- records ----------------------------------------------------------------------------------

    async def _appended(self, rec: Record, sender: str, started: tuple[int, float]) -> None:
        payload = rec.payload
        assert isinstance(payload, (EntryAppended, ToolResultsAppended))
        entry = payload.entry
        d = self.diagram
        if isinstance(entry, ModelOutputEntry):
            await self._model_call(rec, sender, started, entry)
            return
        if isinstance(entry, ModelInputEntry):
            notes = f" (+{len(entry.notifications)} notifications)" if entry.notifications else ""
            if sender == self.engine:
                source = self._column(f"input/{self.thread}")
                d.ask(rec.seq, rec.t, sender, source, "PullInput", "the next input", "InputText", line(entry.text))
            d.ask(rec.seq, rec.t, sender, self.history, "AppendInput", f"input: {entry.text}{notes}", "Tail",
                  f"{entry.id} appended")
            return
        if isinstance(entry, ToolResultsEntry):
            notes = f" + {len(entry.notifications)} notifications" if entry.notifications else ""
            d.ask(rec.seq, rec.t, sender, self.history, "AppendToolResults", f"the results recorded{notes}", "Tail",
                  f"{entry.id} appended")
            return
        kind = "recap" if isinstance(entry, RecapEntry) else type(entry).__name__
        d.ask(rec.seq, rec.t, sender, self.history, "EntryAppended", f"{kind} {entry.id}", "Tail")

    async def _model_call(self, rec: Record, sender: str, started: tuple[int, float], entry: ModelOutputEntry) -> None:
        """The render, the call and the output's append; the call's context is the render of
        the state as the log has it just before the output (as ``render --at SEQ-1`` shows it)."""
        d = self.diagram
        model = self._model_column(entry.model)
        budget = self.budget or DEFAULT_BUDGET
        context, problem = await self._context(budget)
        seq0, t0 = started
        if sender == self.engine:
            d.ask(seq0, t0, sender, self.history, "Render", f"the context under {budget} tokens", "Rendered",
                  problem or f"{context.tokens} tokens, {len(context.pieces)} pieces, {context.omitted} left out")
            ask = d.send(seq0, t0, sender, model, "ModelRequest", MessageMode.ASK,
                         f"call {len(self.calls)}: {context.tokens} tokens")
            calls = ", ".join(c.name for c in entry.tool_calls)
            d.send(rec.seq, rec.t, model, sender, "ModelReply", MessageMode.REPLY,
                   entry.content.live.text + (f" -> {calls}" if calls else ""), ask)
        d.ask(rec.seq, rec.t, sender, self.history, "AppendOutput", f"output {entry.id}: {entry.content.gist.text}",
              "Tail", f"{entry.id} appended")
        self.calls.append(self._call(rec, t0, entry, model, budget, context))

    def _model_column(self, reported: str) -> str:
        """The model's column: named as the model named itself in its output, else as the
        last output did, else by the thread's model spec."""
        if not reported and self._model is not None:
            return self._model
        config = self.state.config
        name = reported or (short_spec(config.model) if config is not None and config.model else "model")
        self._model = self.diagram.add_column(TraceActor(f"model/{name}", ActorRole.MODEL, f"model {name}"))
        return self._model

    async def _context(self, budget: int) -> tuple[CallContext, str | None]:
        windows = await self.windows.text(self.state)
        state = self.state
        counted = self._counted
        if counted[0] is not state.config or counted[1] != state.system_prompt:  # (counted once per change)
            tools = tools_tokens(state.config.tools, self.counter) if state.config is not None else 0
            counted = self._counted = (state.config, state.system_prompt, tools, self.counter.count(state.system_prompt))
        try:
            result = render_state(state, budget, self.counter, windows=windows, tools_tokens=counted[2],
                                  system_tokens=counted[3], cache=self.contexts.cache, stable=self._renderer())
        except BudgetTooSmallError as exc:
            return CallContext((), 0, 0), str(exc)
        return self.contexts.read(self.state, result, windows), None

    def _call(self, rec: Record, t: float, entry: ModelOutputEntry, model: str, budget: int,
              context: CallContext) -> ModelCall:
        by_level = {"live": 0, "recent": 0, "gist": 0, "recap": 0}
        text = self.diagram.text
        entries = []
        for piece in context.pieces:
            by_level[piece.level] += piece.tokens
            entries.append(ContextEntry(piece.id, piece.level, piece.tokens, text(piece.text)))
        levels = LevelTokens(omitted=context.omitted, **by_level)
        calls = "".join(f"\n-> {c.name}({c.arguments})" for c in entry.tool_calls)
        return ModelCall(len(self.calls), rec.seq, t, model.removeprefix("model/"), context.tokens, budget, levels,
                         tuple(entries), text(entry.content.live.text + calls), *_recorded_cost(entry))

    def _result(self, rec: Record, sender: str, started: tuple[int, float], payload: ToolResultRecorded) -> None:
        d = self.diagram
        result = payload.result
        gist = f"{result.status.value}: {result.content.gist.text}"
        control = result.name in _CONTROL_TOOLS and not isinstance(payload.effect, AppEffect)
        apps = self._column(f"app/{self.thread}")
        if sender == self.engine and not control and result.status is not ToolStatus.INTERRUPTED:
            call = self._call_of(result.call_id)
            ask = d.ask(started[0], started[1], sender, apps, "InvokeTool", call or result.name, None)
            server = self._mcp_server(result.name)
            if server is not None:  # (the app host asks the server's connection)
                d.ask(started[0], started[1], apps, self._column(f"mcp/{self.thread}.{server}"), "CallMcpTool",
                      call or result.name, "McpCallResult", f"{result.name} {gist}", rec.t)
            question = self.asked.get(f"{self.agent_name}:{result.call_id}") if self.agent_name else None
            if question is not None and result.name == "ask_agent":  # the answer, as the question's reply
                d.send(rec.seq, rec.t, question[1], apps, "Answer", MessageMode.REPLY, result.content.live.text,
                       question[0])
            d.send(rec.seq, rec.t, apps, sender, "ToolInvoked", MessageMode.REPLY, f"{result.name} {gist}", ask)
        d.ask(rec.seq, rec.t, sender, self.history, "RecordToolResult", f"{result.name} {result.call_id} {gist}",
              "Tail", f"{result.call_id} recorded")
        effect = app_effect_of(payload.effect) if payload.effect is not None else None
        if effect is not None and sender == self.engine:
            d.ask(rec.seq, rec.t, sender, apps, "ApplyEffect", f"{type(effect.effect).__name__} to {effect.app}", "Windows")

    def _call_of(self, call_id: str) -> str | None:
        last = self.state.last
        if isinstance(last, ModelOutputEntry):
            for call in last.tool_calls:
                if call.id == call_id:
                    return f"{call.name}({call.arguments})"
        return None

    def _edited(self, rec: Record, sender: str, payload: HistoryEdited) -> None:
        d = self.diagram
        edited = ", ".join(f"{e.id} r{e.revision}" for e in payload.entries)
        removed = _ids(payload.removed)
        summary = "; ".join(p for p in (f"edited {edited}" if edited else "",
                                        f"removed {removed}" if removed else "") if p)
        if sender == self.history:  # the store's own decision (a drop at its limit, a session's end)
            d.send(rec.seq, rec.t, sender, sender, "HistoryEdited", MessageMode.TELL, summary)
        else:
            d.ask(rec.seq, rec.t, sender, self.history, "EditHistory", summary, "EditApplied")
        d.mark(rec.seq, rec.t, MarkType.EDIT, rec.sender, summary)

    def _failed(self, rec: Record, sender: str, started: tuple[int, float], payload: StepFailed) -> None:
        d = self.diagram
        if sender == self.engine and self.state.state in _MODEL_STATES:
            model = self._model_column("")
            ask = d.send(started[0], started[1], sender, model, "ModelRequest", MessageMode.ASK, "a model call")
            d.send(rec.seq, rec.t, model, sender, "ModelError", MessageMode.REPLY, payload.error, ask)
        d.ask(rec.seq, rec.t, sender, self.history, "RecordStepFailure", payload.error, "Ack")
        d.mark(rec.seq, rec.t, MarkType.FAILURE, rec.sender, payload.error)

    def _publish(self, rec: Record, kind: str, summary: str) -> None:
        for subscriber in self.subscribers:
            self.diagram.send(rec.seq, rec.t, self.history, subscriber, kind, MessageMode.PUBLISH, summary)


def _recorded_cost(entry: ModelOutputEntry) -> tuple[CallUsage | None, int | None, int | None]:
    """The usage, sent tokens and shared tokens an output recorded; ``None`` for each that an
    older log did not record (all zeros: a call is never sent nothing), so that the page says
    "unknown" rather than 0 or 0%."""
    u = entry.usage
    usage = None if u == Usage() else CallUsage(u.prompt_tokens, u.cached_tokens, u.completion_tokens, u.counted)
    if not entry.sent_tokens:
        return usage, None, None
    return usage, entry.sent_tokens, entry.shared_tokens


def short_spec(spec: str) -> str:
    """A model spec as a label: a script's file name without its folder."""
    kind, sep, rest = spec.partition(":")
    if kind == "scripted" and sep:
        return f"scripted:{rest.replace(chr(92), '/').rsplit('/', 1)[-1]}"
    return spec


def _ids(ids: tuple[str, ...]) -> str:
    return ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")


def _said(payload: SystemPromptSet | ThreadConfigured) -> str:
    if isinstance(payload, SystemPromptSet):
        return f"system prompt: {payload.text}"
    tools = ", ".join(t.name for t in payload.tools) or "none"
    return f"budget {payload.budget}; tools {tools}"

"""The span observer: a runtime audit hook that turns what the actors say to each other into
OpenTelemetry spans, named and dressed per the GenAI semantic conventions.

Why an audit hook rather than a subscription to each engine's events: the audit sees every
actor of the runtime (a sub-agent spawned mid-run, every agent of a system) with nothing to
wire per agent; its envelopes carry the causation ids that parent a sub-agent's turn under
the tool call that ran it; and the engine runs exactly as it would untraced (it publishes its
events, and paces a model's stream, only for listeners).

What makes each span (``T`` is a thread id; every message is one of ``livecontext.protocol``):

=====================  ====================================  ====================================
span                   starts when                           ends when
=====================  ====================================  ====================================
invoke_workflow NAME   the session opens                     the session ends
invoke_agent T         history/T answers engine/T with a     a ``Tail`` in ``WaitingInput`` (the
(one turn)             ``Tail`` not in ``WaitingInput``      answer); engine/T records a failure
                       while no turn of T is open            or a pause; engine/T answers a
                                                             ``RunUntilIdle`` or ``Step`` (its run
                                                             stopped mid-turn); the session ends
chat MODEL             history/T answers engine/T's          history/T answers engine/T's
                       ``Render`` (the model call starts)    ``AppendOutput``; a failure
execute_tool NAME      engine/T asks app/T ``InvokeTool``    engine/T's ``RecordToolResult`` for
                                                             the call
=====================  ====================================  ====================================

A tool call the engine answers itself (a control tool, an interrupted call) gets its span when
its result is recorded. Folds into a recap and other history edits become span events when
the history store answers them (with their author and outcome: applied, conflict, denied), as
do notifications when posted and the engine's state changes (read from the ``Tail`` answers);
each lands on its thread's open turn, or on the session's span.

Parents: a turn is a child of the span of the message that last woke its engine
(``RunUntilIdle``, ``Step``, ``Resume``, ``InputAvailable``), found by causation: a message
caused by an ``InvokeTool``, or by a message so caused, belongs to that tool call's span. A
turn nothing traced woke is a child of the session's span, so one session is one trace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from attrs import define, field, frozen
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from livecontext.protocol.agent import (
    AppendOutput,
    Idle,
    IdleReason,
    InputAvailable,
    InvokeTool,
    PostNotification,
    RecordPause,
    RecordStepFailure,
    RecordToolResult,
    Rendered,
    Resume,
    RunUntilIdle,
    Step,
    StepDone,
    Tail,
)
from livecontext.protocol.context import (
    AccessDenied,
    EditApplied,
    EditConflict,
    EditHistory,
    FoldIntoRecap,
    RemoveEntries,
)
from livecontext.protocol.history import EngineState, ModelOutputEntry, ToolStatus
from livecontext.protocol.kernel import ActorId, Envelope, Message
from livecontext.runtime import AuditEvent, AuditRecord, Runtime

from ._provider import provider_from_env, shut_down

OPERATION = "gen_ai.operation.name"
CONVERSATION = "gen_ai.conversation.id"
_FAILED_TOOL = (ToolStatus.FAILED, ToolStatus.INTERRUPTED)
_EDITS_KEPT = 256
"""Edits waiting for their answer that are remembered (a told edit is never answered)."""

Handler = Callable[[Envelope], None]


@define
class _Turn:
    """An open ``invoke_agent`` span and what is open under it."""

    span: Span
    chat: Span | None = None
    rendered_tokens: int = 0
    """The tokens of the context the open model call was given (our count)."""
    output_request: str | None = None
    """The id of the ``AppendOutput`` whose answer ends the open model call."""
    tools: dict[str, Span] = field(factory=dict)
    """The open tool calls' spans, by call id."""
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    tool_calls: int = 0


@define
class _Cause:
    """A tool call's span and the ids of the messages it caused (forgotten when it ends)."""

    span: Span
    messages: list[str]


@frozen
class _Edit:
    """An edit asked of a history store, waiting for its answer."""

    thread: str
    author: str
    kind: str
    """``FoldIntoRecap`` or ``EditHistory``."""
    entries: int
    edits: tuple[str, ...] = ()
    """The kinds of the edits an ``EditHistory`` holds (``ReplaceContent``...)."""
    strategy: str = ""


def _thread(actor: object, kind: str) -> str | None:
    """The thread of ``actor`` if it is the ``kind`` actor of one (``engine/T`` -> ``T``)."""
    return actor.name if isinstance(actor, ActorId) and actor.kind == kind else None


def _between(env: Envelope, sender: str, recipient: str) -> str | None:
    """The thread whose ``sender`` actor sent ``env`` to its ``recipient`` actor, if so."""
    thread = _thread(env.sender, sender)
    return thread if thread is not None and _thread(env.recipient, recipient) == thread else None


def _edited(msg: Message) -> tuple[int, tuple[str, ...]]:
    """How many entries an edit or fold names, and the kinds of the edits it holds."""
    if isinstance(msg, FoldIntoRecap):
        return len(msg.entries), ()
    assert isinstance(msg, EditHistory)
    entries = sum(len(edit.entries) if isinstance(edit, RemoveEntries) else 1 for edit in msg.edits)
    return entries, tuple(type(edit).__name__ for edit in msg.edits)


class SpanObserver:
    """An audit hook (:meth:`Runtime.add_audit_hook`) that makes spans with ``tracer`` of what
    the actors of one session do; see the module docstring. :meth:`close` ends the spans left
    open and the session's own span."""

    def __init__(self, tracer: Tracer, workflow: str) -> None:
        self._tracer = tracer
        self.root = tracer.start_span(f"invoke_workflow {workflow}", kind=SpanKind.INTERNAL, attributes={
            OPERATION: "invoke_workflow", "gen_ai.workflow.name": workflow})
        """The session's span, parent of every turn nothing traced woke."""
        self._turns: dict[str, _Turn] = {}
        self._states: dict[str, EngineState] = {}
        """Each thread's latest state, from the ``Tail`` answers to its engine."""
        self._models: dict[str, str] = {}
        """Each thread's latest model, to name its next call before it answers."""
        self._wakes: dict[str, Span] = {}
        """The span each thread's next turn is a child of (see the module docstring)."""
        self._causes: dict[str, _Cause] = {}
        """The tool call each message belongs to, by message id (see the module docstring)."""
        self._calls: dict[tuple[str, str], _Cause] = {}
        """Each open tool call's messages, by thread and call id."""
        self._edits: dict[str, _Edit] = {}
        self._delivered: dict[type[Message], Handler] = {
            RunUntilIdle: self._woken, Step: self._woken, Resume: self._woken, InputAvailable: self._woken,
            InvokeTool: self._tool_started, RecordToolResult: self._tool_recorded,
            AppendOutput: self._output_sent, RecordStepFailure: self._step_failed, RecordPause: self._paused,
            PostNotification: self._notified,
            FoldIntoRecap: self._edit_asked, EditHistory: self._edit_asked,
        }
        self._replied: dict[type[Message], Handler] = {
            Tail: self._tail, Rendered: self._rendered, Idle: self._run_over, StepDone: self._run_over,
            EditApplied: self._edit_answered, EditConflict: self._edit_answered, AccessDenied: self._edit_answered,
        }

    def __call__(self, record: AuditRecord) -> None:
        env = record.envelope
        if record.event is AuditEvent.DELIVERED:
            cause = env.causation_id
            if cause is not None and self._causes:
                caused_by = self._causes.get(cause)
                if caused_by is not None:  # a message caused by a tool call's message is the call's too
                    self._causes[env.message_id] = caused_by
                    caused_by.messages.append(env.message_id)
            handle = self._delivered.get(type(env.payload))
        elif record.event is AuditEvent.REPLIED:
            handle = self._replied.get(type(env.payload))
        else:
            return
        if handle is not None:
            handle(env)

    def close(self) -> None:
        """End every span still open (turns stopped by the session's end), then the session's."""
        for thread, turn in list(self._turns.items()):
            self._end_turn(thread, turn, stop="session ended")
        self.root.end()

    # -- turns -----------------------------------------------------------------------------------

    def _woken(self, env: Envelope) -> None:
        thread = _thread(env.recipient, "engine")
        if thread is None:
            return
        cause = self._causes.get(env.message_id)
        if cause is not None:
            self._wakes[thread] = cause.span
        else:
            self._wakes.pop(thread, None)

    def _tail(self, env: Envelope) -> None:
        thread = _between(env, "history", "engine")
        if thread is None:
            return
        tail = env.payload
        assert isinstance(tail, Tail)
        turn = self._turns.get(thread)
        if turn is not None and turn.output_request is not None and turn.output_request == env.correlation_id:
            self._end_chat(thread, turn, tail.last)
        state, before = tail.state, self._states.get(thread)
        self._states[thread] = state
        if turn is None:
            if state is EngineState.WAITING_INPUT:
                return
            turn = self._start_turn(thread, state)
        if before is not None and before is not state:
            turn.span.add_event("livecontext.engine.state", {
                "livecontext.state.from": before.value, "livecontext.state.to": state.value})
        if state is EngineState.WAITING_INPUT:
            self._end_turn(thread, turn)

    def _turn(self, thread: str) -> _Turn:
        """The open turn of ``thread``, started now if none is (as a resumed thread's is)."""
        turn = self._turns.get(thread)
        if turn is None:
            turn = self._start_turn(thread, self._states.get(thread, EngineState.PENDING_INPUT))
        return turn

    def _start_turn(self, thread: str, state: EngineState) -> _Turn:
        parent = self._wakes.get(thread, self.root)
        span = self._tracer.start_span(
            f"invoke_agent {thread}", context=trace.set_span_in_context(parent), kind=SpanKind.INTERNAL,
            attributes={OPERATION: "invoke_agent", "gen_ai.agent.name": thread, "gen_ai.agent.id": thread,
                        CONVERSATION: thread, "livecontext.turn.first_state": state.value})
        turn = self._turns[thread] = _Turn(span)
        return turn

    def _end_turn(self, thread: str, turn: _Turn, *, stop: str = "", error: str = "") -> None:
        """End ``turn``: answered (no ``stop``), or stopped short (``stop`` says why; the calls
        still open under it end with it)."""
        if turn.chat is not None:
            _fail(turn.chat, error or f"stopped: {stop}")
            turn.chat.end()
        for call_id, span in turn.tools.items():
            _fail(span, error or f"stopped: {stop}")
            span.end()
            self._forget_call(thread, call_id)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.usage.input_tokens": turn.input_tokens, "gen_ai.usage.output_tokens": turn.output_tokens,
            "livecontext.turn.model_calls": turn.model_calls, "livecontext.turn.tool_calls": turn.tool_calls}
        if stop:
            attributes["livecontext.turn.stopped"] = stop
        turn.span.set_attributes(attributes)
        if error:
            _fail(turn.span, error)
        turn.span.end()
        del self._turns[thread]

    def _open_turn(self, thread: str | None) -> tuple[str, _Turn] | None:
        """``thread`` and its open turn, if it has one."""
        turn = self._turns.get(thread) if thread is not None else None
        return (thread, turn) if thread is not None and turn is not None else None

    def _step_failed(self, env: Envelope) -> None:
        if (found := self._open_turn(_between(env, "engine", "history"))) is not None:
            assert isinstance(env.payload, RecordStepFailure)
            self._end_turn(*found, stop="failed", error=env.payload.error)

    def _paused(self, env: Envelope) -> None:
        if (found := self._open_turn(_between(env, "engine", "history"))) is not None:
            self._end_turn(*found, stop="paused")

    def _run_over(self, env: Envelope) -> None:
        """The engine answered a run: a turn still open stopped mid-way (max steps, one step)."""
        found = self._open_turn(_thread(env.sender, "engine"))
        if found is None:
            return
        thread, turn = found
        done = env.payload
        if isinstance(done, Idle):
            error = done.error if done.reason is IdleReason.FAILED else ""
            self._end_turn(thread, turn, stop=done.reason.value, error=error)
        else:
            assert isinstance(done, StepDone)
            self._end_turn(thread, turn, stop="cancelled" if done.cancelled else "step", error=done.error)

    # -- model calls ---------------------------------------------------------------------------------

    def _rendered(self, env: Envelope) -> None:
        thread = _between(env, "history", "engine")
        if thread is None:
            return
        rendered = env.payload
        assert isinstance(rendered, Rendered)
        turn = self._turn(thread)
        model = self._models.get(thread, "")
        attributes: dict[str, AttributeValue] = {
            OPERATION: "chat", CONVERSATION: thread, "livecontext.context.tokens": rendered.tokens,
            "livecontext.context.messages": len(rendered.messages), "livecontext.context.entries": rendered.entries}
        if model:
            attributes["gen_ai.request.model"] = model
        turn.chat = self._tracer.start_span(f"chat {model}".rstrip(), context=trace.set_span_in_context(turn.span),
                                            kind=SpanKind.CLIENT, attributes=attributes)
        turn.rendered_tokens = rendered.tokens

    def _output_sent(self, env: Envelope) -> None:
        found = self._open_turn(_between(env, "engine", "history"))
        if found is not None and found[1].chat is not None:
            found[1].output_request = env.message_id

    def _end_chat(self, thread: str, turn: _Turn, entry: object) -> None:
        """End the model call whose output ``entry`` was recorded. Tokens the model did not
        report are our own count: the rendered context's, the output entry's."""
        chat = turn.chat
        turn.chat, turn.output_request = None, None
        if chat is None or not isinstance(entry, ModelOutputEntry):
            return
        model = entry.model
        if model:
            self._models[thread] = model
            chat.update_name(f"chat {model}")
        reported = not entry.usage.counted and bool(entry.usage.prompt_tokens or entry.usage.completion_tokens)
        input_tokens = entry.usage.prompt_tokens if reported else turn.rendered_tokens
        output_tokens = entry.usage.completion_tokens if reported else entry.content.live.tokens
        chat.set_attributes({
            "gen_ai.request.model": model, "gen_ai.response.model": model,
            "gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens,
            "gen_ai.response.finish_reasons": ("tool_calls",) if entry.tool_calls else ("stop",),
            "livecontext.usage.reported": reported, "livecontext.entry.id": entry.id,
            "livecontext.tool_calls": len(entry.tool_calls)})
        chat.end()
        turn.input_tokens += input_tokens
        turn.output_tokens += output_tokens
        turn.model_calls += 1

    # -- tool calls ----------------------------------------------------------------------------------

    def _tool_span(self, thread: str, turn: _Turn, call_id: str, name: str) -> Span:
        return self._tracer.start_span(
            f"execute_tool {name}", context=trace.set_span_in_context(turn.span), kind=SpanKind.INTERNAL,
            attributes={OPERATION: "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id,
                        "gen_ai.tool.type": "function", CONVERSATION: thread})

    def _tool_started(self, env: Envelope) -> None:
        thread = _between(env, "engine", "app")
        if thread is None:
            return
        call = env.payload.call if isinstance(env.payload, InvokeTool) else None
        assert call is not None
        turn = self._turn(thread)
        span = turn.tools[call.id] = self._tool_span(thread, turn, call.id, call.name)
        self._causes[env.message_id] = self._calls[thread, call.id] = _Cause(span, [env.message_id])

    def _tool_recorded(self, env: Envelope) -> None:
        thread = _between(env, "engine", "history")
        if thread is None:
            return
        assert isinstance(env.payload, RecordToolResult)
        result = env.payload.result
        turn = self._turn(thread)
        span = turn.tools.pop(result.call_id, None)
        if span is None:  # answered by the engine itself: a control tool, an interrupted call
            span = self._tool_span(thread, turn, result.call_id, result.name)
        self._forget_call(thread, result.call_id)
        span.set_attribute("livecontext.tool.status", result.status.value)
        if result.status in _FAILED_TOOL:
            _fail(span, result.content.gist.text, result.status.value)
        span.end()
        turn.tool_calls += 1

    def _forget_call(self, thread: str, call_id: str) -> None:
        """Forget the messages of a tool call that ended: later ones belong to no call."""
        cause = self._calls.pop((thread, call_id), None)
        for caused in cause.messages if cause is not None else ():
            self._causes.pop(caused, None)

    # -- history: edits, folds, notifications --------------------------------------------------------

    def _event(self, thread: str, name: str, attributes: dict[str, AttributeValue]) -> None:
        turn = self._turns.get(thread)
        (turn.span if turn is not None else self.root).add_event(name, attributes)

    def _edit_asked(self, env: Envelope) -> None:
        thread = _thread(env.recipient, "history")
        if thread is None:
            return
        msg = env.payload
        entries, edits = _edited(msg)
        strategy = msg.strategy if isinstance(msg, FoldIntoRecap) else ""
        self._edits[env.message_id] = _Edit(thread, str(env.sender), type(msg).__name__, entries, edits, strategy)
        if len(self._edits) > _EDITS_KEPT:
            del self._edits[next(iter(self._edits))]

    def _edit_answered(self, env: Envelope) -> None:
        edit = self._edits.pop(env.correlation_id or "", None)
        if edit is None:
            return
        answer = env.payload
        outcome = ("applied" if isinstance(answer, EditApplied)
                   else "conflict" if isinstance(answer, EditConflict) else "denied")
        attributes: dict[str, AttributeValue] = {
            "livecontext.author": edit.author, "livecontext.edit.kind": edit.kind,
            "livecontext.edit.entries": edit.entries, "livecontext.edit.outcome": outcome}
        if edit.strategy:
            attributes["livecontext.fold.strategy"] = edit.strategy
        if edit.edits:
            attributes["livecontext.edit.edits"] = edit.edits
        if isinstance(answer, EditApplied) and answer.recap is not None:
            attributes["livecontext.recap.id"] = answer.recap.id
        if isinstance(answer, AccessDenied):
            attributes["livecontext.denied.capability"] = answer.capability.value
        name = "livecontext.history.fold" if edit.kind == FoldIntoRecap.__name__ else "livecontext.history.edit"
        self._event(edit.thread, name, attributes)

    def _notified(self, env: Envelope) -> None:
        thread = _thread(env.recipient, "history")
        if thread is not None:
            assert isinstance(env.payload, PostNotification)
            self._event(thread, "livecontext.notification", {
                "livecontext.author": str(env.sender), "livecontext.notification.chars": len(env.payload.text)})


def _fail(span: Span, description: str, error_type: str = "_OTHER") -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, description))


@asynccontextmanager
async def trace_runtime(rt: Runtime, workflow: str,
                        tracer_provider: trace.TracerProvider | None) -> AsyncIterator[None]:
    """Trace ``rt`` while the block runs (see :func:`~._switch.open_tracing`)."""
    provider, ours = (tracer_provider, False) if tracer_provider is not None else provider_from_env()
    if provider is None:
        yield
        return
    observer = SpanObserver(provider.get_tracer("livecontext"), workflow)
    rt.add_audit_hook(observer)
    try:
        yield
    finally:
        rt.remove_audit_hook(observer)
        observer.close()
        if ours:
            await shut_down(provider)

"""What a live view knows of one running agent (:class:`Gauge`), kept up to date from the
events its actors publish, and the plain line each event that matters is worth.

A gauge is plain data owned by the view's task: events change it as they come (a few
attribute writes each, never any I/O), and the view draws a copy of it on its own timer.
"""

from __future__ import annotations

import copy

from attrs import define, field, frozen

from livecontext.protocol.agent import (
    AfterModelCall,
    AfterToolExecute,
    AgentStatus,
    BeforeModelCall,
    BeforeToolExecute,
    HistoryChanged,
    ModelTextDelta,
    NotificationPosted,
    StateTransition,
    WaitingInput,
)
from livecontext.protocol.context import FoldDone, HistoryFill, HistoryUsage, LimitLevel
from livecontext.protocol.history import EngineState
from livecontext.protocol.kernel import Message

from ..agent import AgentActors


@frozen
class Watched:
    """An agent for a live view to watch, and what its run was given."""

    name: str
    """How the view names it (a system's agent name, or the thread id)."""
    actors: AgentActors
    budget: int
    """The token budget of each rendered context."""
    max_steps: int | None = None
    """The run's ``--max-steps``: a progress bar counts steps against it."""
    inputs_given: int = 0
    """Inputs the run feeds it: without ``max_steps``, a progress bar counts those taken."""
    answers: bool = False
    """Note the model's answers, whole, among the plain lines (a chat shows them that way)."""


@frozen
class Line:
    """A plain line about one agent, as noted (its text is made printable when written)."""

    agent: str
    text: str
    whole: bool = False
    """Keep its line breaks (a chat's answer); else it is written on one line."""

    def printed(self, width: int) -> str:
        """The line as written: the agent's name padded to ``width``, the text made safe."""
        text = printable(self.text) if self.whole else one_line(self.text, 400)
        return f"{self.agent:<{width}}  {text}\n"


@define
class Gauge:
    """What the view shows of one agent, as of the events seen so far."""

    watched: Watched
    state: EngineState = EngineState.WAITING_INPUT
    steps: int = 0
    """Engine steps that changed the thread since the view opened (as ``--max-steps`` counts)."""
    inputs_taken: int = 0
    model_calls: int = 0
    model_errors: int = 0
    tokens: int | None = None
    """Tokens of the latest rendered context."""
    budget: int = 0
    tool_calls: int = 0
    doing: str = ""
    """What it does now, or did last, in a few words."""
    folds: int = 0
    notifications: int = 0
    last_notification: str = ""
    level: LimitLevel = LimitLevel.OK
    """The limit level the history store last reported (:class:`HistoryUsage`)."""
    fill: HistoryFill | None = None
    """The unfolded history against its limits, as last read."""
    fill_stale: bool = True
    """The history changed since :attr:`fill` was read."""
    mailboxes: tuple[tuple[str, int], ...] = ()
    """Messages waiting in each of its actors' mailboxes, as last sampled."""
    mailbox_peak: int = 0
    """The most messages seen waiting in any one of its mailboxes at a sample."""
    ended: str | None = None
    """How the run ended for it (set once it is over)."""
    status: AgentStatus | None = None
    reason: str = ""
    """Why its run stopped (``no_input``, ``max_steps``, ``failed: ...``), if said."""
    lines: list[Line] = field(factory=list)
    """Plain lines not yet written, each with the name of its agent (a view without a terminal
    writes them; its gauges share one list, so that lines keep the order of their events)."""

    @property
    def name(self) -> str:
        """The agent's name (see :attr:`Watched.name`)."""
        return self.watched.name

    def snapshot(self) -> Gauge:
        """A copy to draw while events go on changing this one (its fields are replaced,
        never changed in place, except :attr:`lines`, which a drawing does not read)."""
        return copy.copy(self)

    def take(self, event: Message) -> None:
        """Update the gauge from one published event; note a plain line for the ones a
        person following the run wants to see (state changes, folds, notifications, limits,
        failures)."""
        if isinstance(event, ModelTextDelta):  # the most frequent, and nothing to show
            return
        if isinstance(event, HistoryChanged):
            self.fill_stale = True
        elif isinstance(event, StateTransition):
            self._transition(event)
        elif isinstance(event, AfterToolExecute):
            self.steps += 1  # a tool step (its StateTransition, if any, is not counted again)
            self.doing = f"tool {event.name}: {event.status.value}"
        elif isinstance(event, BeforeToolExecute):
            self.tool_calls += 1
            self.doing = f"runs tool {event.name}"
        elif isinstance(event, BeforeModelCall):
            self.model_calls += 1
            self.tokens = event.tokens
            self.budget = event.budget or self.budget
            self.doing = f"model call ({event.messages} messages)"
        elif isinstance(event, AfterModelCall):
            self._answered(event)
        elif isinstance(event, WaitingInput):
            self.doing = "pulls input"
        elif isinstance(event, NotificationPosted):
            n = event.notification
            self.notifications += 1
            self.last_notification = f"{n.sender}: {n.text}"
            self._say(f"notification {n.id} from {n.sender}: {n.text}")
        elif isinstance(event, FoldDone):
            self.folds += event.folds
            self.fill_stale = True
            self._say(f"recap folded ({event.folds} fold(s)); {event.entries} entries, "
                      f"{event.tokens} tokens left unfolded")
        elif isinstance(event, HistoryUsage):
            self.fill_stale = True
            if event.level is not self.level:
                self.level = event.level
                where = "back under its limits" if event.level is LimitLevel.OK else f"at its {event.level.value} limit"
                self._say(f"history {where}: {event.entries} entries, {event.tokens} tokens")

    def _say(self, text: str, *, whole: bool = False) -> None:
        self.lines.append(Line(self.watched.name, text, whole))

    def _transition(self, event: StateTransition) -> None:
        self.state = event.to_state
        if event.from_state is not EngineState.WAITING_TOOL_RESULTS:  # (that step was counted by its tool)
            self.steps += 1
        if event.from_state is EngineState.WAITING_INPUT:
            self.inputs_taken += 1
        self._say(f"{event.from_state.value} -> {event.to_state.value} (step {self.steps})")

    def _answered(self, event: AfterModelCall) -> None:
        if event.error:
            self.model_errors += 1
            self.doing = f"model call failed: {event.error}"
            self._say(f"model call failed, state unchanged: {event.error}")
        else:
            calls = f" (+{event.tool_calls} tool call(s))" if event.tool_calls else ""
            self.doing = f"model: {event.text[:400] or '(no text)'}{calls}"
            if self.watched.answers and event.text.strip():
                self._say(f"model: {event.text.strip()}", whole=True)

    def read_fill(self, fill: HistoryFill) -> None:
        """Take a fresh reading of the unfolded history against its limits (:attr:`level`
        stays the last one reported: a line is said when a report changes it)."""
        self.fill, self.fill_stale = fill, False

    def end(self, state: EngineState, status: AgentStatus | None) -> None:
        """Mark the run over: where the agent stands, and its task's status (if read)."""
        self.state, self.status, self.doing = state, status, ""
        words = [state.value]
        if status is not None:
            detail = status.result or status.question or status.error or status.reason or status.waiting_on
            words.append(status.status.value + (f": {one_line(detail)}" if detail else ""))
        self.ended = ", ".join(words)
        why = f" ({self.reason})" if self.reason else ""
        self._say(f"ended {self.ended} after {self.steps} steps{why}")

    @property
    def progress(self) -> tuple[int, int, str] | None:
        """``(done, total, unit)`` for a progress bar: steps against ``max_steps``, else inputs
        taken against inputs given (``None``: neither was given)."""
        w = self.watched
        if w.max_steps:
            return min(self.steps, w.max_steps), w.max_steps, "steps"
        if w.inputs_given:
            return min(self.inputs_taken, w.inputs_given), w.inputs_given, "inputs"
        return None


_CONTROLS = {code: "\ufffd" for code in (*range(32), *range(127, 160))}
"""C0 and C1 control characters (ESC and CSI among them), each to a replacement character."""
_CONTROLS_BUT_BREAKS = {code: mark for code, mark in _CONTROLS.items() if chr(code) not in "\n\t"}


def printable(text: str) -> str:
    """``text`` without control characters but its line breaks and tabs (a model's text may
    hold escape codes: a terminal must not run them)."""
    return text.translate(_CONTROLS_BUT_BREAKS)


def one_line(text: str, limit: int = 160) -> str:
    """``text`` on one line, without control characters, cut at ``limit`` characters."""
    flat = " ".join(text[: 4 * limit].split())  # (a long text: only its start is shown)
    cut = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return cut.translate(_CONTROLS)

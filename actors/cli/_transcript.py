"""A readable transcript of what the actors do, for the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from livecontext.protocol.agent import (
    AfterModelCall,
    AfterToolExecute,
    AgentOutput,
    BeforeModelCall,
    BeforeToolExecute,
    HistoryChanged,
    ModelTextDelta,
    NotificationPosted,
    StateTransition,
    ApprovalsRequested,
    StepInterruptedEvent,
    TaskTerminatedEvent,
    WaitingInput,
)
from livecontext.protocol.context import FoldDone, HistoryUsage, LimitLevel
from livecontext.protocol.history import ToolStatus
from livecontext.protocol.kernel import Message

_STATUS_STYLE = {ToolStatus.OK: "green", ToolStatus.FAILED: "red", ToolStatus.SKIPPED: "yellow",
                 ToolStatus.INTERRUPTED: "magenta"}


class Transcript:
    """Prints engine events as one line each, prefixed by the actor that did it."""

    def __init__(self, console: Console, thread_id: str, *, show_transitions: bool = True,
                 budget: int | None = None) -> None:
        self.console = console
        self.thread_id = thread_id
        self.show_transitions = show_transitions
        self.budget = budget
        self.max_tokens = 0
        """The largest rendered context seen so far."""
        self._usage: LimitLevel | None = None

    def _line(self, actor: str, text: str) -> None:
        self.console.print(f"[dim]{escape(actor):<22}[/dim] {text}", highlight=False)

    def __call__(self, event: Message) -> None:
        t = self.thread_id
        if isinstance(event, StateTransition) and self.show_transitions:
            self._line(f"engine/{t}", f"[cyan]{event.from_state.value} -> {event.to_state.value}[/cyan]")
        elif isinstance(event, WaitingInput):
            self._line(f"engine/{t}", "pulls input from input/" + escape(t))
        elif isinstance(event, BeforeModelCall):
            self.max_tokens = max(self.max_tokens, event.tokens)
            budget = f" (budget {self.budget})" if self.budget else ""
            self._line(f"engine/{t}", f"model call #{event.call_index}: {event.messages} messages, "
                                      f"{event.tokens} tokens{budget} rendered by history/{escape(t)}")
        elif isinstance(event, AfterModelCall):
            if event.error:
                self._line(f"engine/{t}", f"[red]model call failed, state unchanged: {escape(event.error)}[/red]")
            else:
                calls = f" [yellow]+{event.tool_calls} tool call(s)[/yellow]" if event.tool_calls else ""
                text = escape(event.text.strip()) or "[dim](no text)[/dim]"
                self._line("model", f"[bold]{text}[/bold]{calls}")
        elif isinstance(event, BeforeToolExecute):
            self._line(f"app/{t}", f"runs {escape(event.name)}({escape(_short(event.arguments))})")
        elif isinstance(event, AfterToolExecute):
            style = _STATUS_STYLE[event.status]
            self._line(f"app/{t}", f"[{style}]{event.status.value}[/{style}]: {escape(event.gist)}")
        elif isinstance(event, ApprovalsRequested):
            waiting = ", ".join(f"{c.name} call {c.id}" for c in event.calls)
            self._line(f"engine/{t}", f"[yellow]waits for a person's approval: {escape(waiting)}[/yellow]")
        elif isinstance(event, StepInterruptedEvent):
            self._line(f"engine/{t}", f"[magenta]{escape(event.what)} interrupted by {escape(event.by)}[/magenta]")
        elif isinstance(event, TaskTerminatedEvent):
            self._line(f"engine/{t}", f"[magenta]task terminated by {escape(event.by)}: {escape(event.reason)}"
                                      "[/magenta]")
        elif isinstance(event, AgentOutput):
            self._line(f"engine/{t}", f"[bold green]output:[/bold green] [bold]{escape(event.text)}[/bold]")
        elif isinstance(event, NotificationPosted):
            n = event.notification
            self._line(str(n.sender), f"[magenta]notifies ({n.id}): {escape(n.text)}[/magenta]")
        elif isinstance(event, FoldDone):
            self._line(f"recap/{t}", f"[blue]folded old steps into the recap ({event.folds} fold(s)); "
                                     f"{event.entries} entries, {event.tokens} tokens left unfolded[/blue]")
        elif isinstance(event, HistoryUsage):
            if event.level is not self._usage:
                self._usage = event.level
                where = ("back under its limits" if event.level is LimitLevel.OK
                         else f"at its {event.level.value} limit")
                self._line(f"history/{t}", f"[blue]history {where}: "
                                           f"{event.entries} entries, {event.tokens} tokens[/blue]")
        elif isinstance(event, HistoryChanged):
            pass
        elif isinstance(event, ModelTextDelta):
            pass


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ChatView:
    """The chat's view of engine events: the model's text streamed as it comes, the rest as
    transcript lines (an answer is shown once, as it streams, not again when it ends)."""

    def __init__(self, console: Console, transcript: Transcript) -> None:
        self.console = console
        self.transcript = transcript
        self.streaming = False

    def end_line(self) -> None:
        """Finish a streamed answer's line, if one is open."""
        if self.streaming:
            self.console.print()
            self.streaming = False

    def __call__(self, event: Message) -> None:
        if isinstance(event, ModelTextDelta):
            if not self.streaming:
                self.console.print("[dim]model:[/dim] ", end="")
                self.streaming = True
            self.console.print(event.text, end="", style="bold", highlight=False, markup=False)
            return
        if isinstance(event, WaitingInput):  # the prompt shows that already
            return
        self.end_line()
        if isinstance(event, AfterModelCall) and not event.error:
            if event.tool_calls:
                self.transcript._line("model", f"[yellow]+{event.tool_calls} tool call(s)[/yellow]")
            return
        self.transcript(event)

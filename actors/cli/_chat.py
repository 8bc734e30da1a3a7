"""``livecontext chat``: one turn at a time on a terminal, or on lines piped in.

Each line is answered before the next is read, so the ``> `` prompt comes after the answer.
On a terminal, what is typed while an answer streams is not echoed into it: it waits for
the next prompt, where the line editor shows it. A resumed thread shows its last exchanges.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import click
import trio
from rich.console import Console
from rich.markup import escape

from livecontext.protocol.agent import (
    AfterModelCall,
    AgentStatus,
    GetStatus,
    Idle,
    IdleReason,
    ProvideInput,
    RunUntilIdle,
)
from livecontext.protocol.context import HistorySlice, ReadHistory
from livecontext.protocol.history import DecideApproval, EngineState, TaskStatus, ToolCall
from livecontext.protocol.kernel import Envelope, Message

from ..agent import entry_json
from livecontext.runtime import UsageError

from ..agent import InputTooLargeError, decide_approval, give_input
from ..agent import Session, Stopped, stop_interrupted
from ..agent import InvalidTextError, check_text
from ..front import AgentSpec, open_agent_from
from ._interrupt import Interrupt, say_interrupted
from ._live import LiveView, draws_panels, open_live_view
from ._live_gauge import Watched
from ._transcript import ChatView, Transcript

SHOWN_ENTRIES = 6
"""How many of a resumed thread's last inputs and answers are shown."""
_SHOWN_CHARS = 100


class Terminal:
    """Where the chat reads its lines: a terminal (a ``> `` prompt, line editing; no echo
    while an answer streams) or a pipe (no prompt). Bytes that are not UTF-8 are read as they
    are (``surrogateescape``) so that they can be reported rather than fail the read.

    :meth:`restore` puts the terminal back as it was (a line editor cut short by Ctrl-C may
    leave it without echo).
    """

    def __init__(self) -> None:
        if isinstance(sys.stdin, io.TextIOWrapper):
            sys.stdin.reconfigure(errors="surrogateescape")
        self.tty = sys.stdin.isatty()
        self._saved: list[Any] | None = None
        if self.tty:
            import readline  # noqa: F401  (input() edits lines, and shows what was typed ahead)
            import termios

            self._saved = termios.tcgetattr(sys.stdin.fileno())

    def read_line(self, prompt: str = "> ") -> str | None:
        """The next line (``None`` at the end of the input), after ``prompt`` on a terminal;
        blocks: run it in a thread."""
        try:
            return input(prompt if self.tty else "")
        except EOFError:
            return None

    def echo(self, on: bool) -> None:
        """Echo what is typed (on a terminal)."""
        if self._saved is None:
            return
        import termios

        attrs = termios.tcgetattr(sys.stdin.fileno())
        attrs[3] = attrs[3] | termios.ECHO if on else attrs[3] & ~termios.ECHO
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, attrs)

    def restore(self) -> None:
        """Put the terminal back as it was when the chat began."""
        if self._saved is not None:
            import termios

            termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, self._saved)


async def chat(spec: AgentSpec, *, base_url: str | None, api_key: str | None, interrupt: Interrupt,
               resume: str | None, on_open: Callable[[], None], live: bool = False) -> int:
    """Chat on the thread ``spec`` describes until the input ends; return the exit code (1 if a
    turn failed or a line could not be sent). Ctrl-C stops the thread and exits 130.

    A resumed thread keeps what ``spec`` does not give (its model, apps and settings) as it
    recorded them, and a change is said in one line (see ``open_agent_from``).
    ``live``: each turn is followed by a live panel (see ``_live``); the answer is shown
    whole once it is recorded, above the panel, rather than streamed.
    """
    console = Console()
    terminal = Terminal()
    thread_id = spec.thread
    stopped: Stopped | None = None
    try:
        async with open_agent_from(spec, base_url=base_url, api_key=api_key) as opened:
            session = opened.session
            on_open()
            for line in opened.changed:
                click.echo(f"livecontext: note: {line}", err=True)
            console.print(f"[dim]chatting on thread {thread_id} with {opened.model or 'echo'}; an empty line or "
                          "Ctrl-D ends[/dim]")
            await _show_so_far(session, console)
            async with session.rt.open_subscription(session.agent.events, buffer=1024) as events:
                # on a terminal the answers are printed above the panel; in plain lines, among them
                watched = Watched(thread_id, session.agent, opened.settings.budget,
                                  answers=not draws_panels(console))
                conversation = _Conversation(session, events, console, terminal, interrupt, watched if live else None,
                                             spec.cut_oversized)
                await conversation.run()
            if interrupt.caught:
                stopped = await stop_interrupted(session, conversation.sent, conversation.since)
    finally:
        terminal.restore()
    if stopped is not None:  # (at once: the line reader's thread may still wait for input)
        say_interrupted(thread_id, stopped, resume, at_once=True)
    return 1 if conversation.failures else 0


class _Conversation:
    """Lines read and answered in turn, until the input ends or Ctrl-C."""

    def __init__(self, session: Session, events: trio.MemoryReceiveChannel[Envelope], console: Console,
                 terminal: Terminal, interrupt: Interrupt, live: Watched | None = None,
                 cut_oversized: bool = False) -> None:
        self.session = session
        self.cut_oversized = cut_oversized
        self.events = events
        self.console = console
        self.terminal = terminal
        self.interrupt = interrupt
        transcript = Transcript(console, session.agent.thread_id, show_transitions=False)
        self.view: Callable[[Message], None] = (ChatView(console, transcript) if live is None
                                                else _Answers(console, shown=not live.answers))
        self.live = live
        """The agent a live panel follows during each turn (``None``: no panel)."""
        self.client = session.rt.client("console")
        self.failures = 0
        """Turns that failed, and lines that could not be sent."""
        self.sent: list[str] = []
        """The last line sent (for :func:`stop_interrupted`)."""
        self.since = 0
        """The log's last seq before it was sent."""

    async def run(self) -> None:
        session = self.session
        self.since = await session.log.last_seq()
        if session.resumed_state is not EngineState.WAITING_INPUT:
            self.console.print(f"[dim]thread {session.agent.thread_id} was stopped in the middle of a step "
                               f"({session.resumed_state.value}): finishing it first[/dim]")
            if not await self._turn_and_approvals():
                return
        while not self.interrupt.caught:
            with self.interrupt.region():
                line = await trio.to_thread.run_sync(self.terminal.read_line, abandon_on_cancel=True)
            if self.interrupt.caught and self.terminal.tty:
                self.console.print()  # (after what was typed at the prompt)
            if self.interrupt.caught or line is None or not line.strip():
                return
            try:
                check_text(line, "input")
            except InvalidTextError as exc:
                self.failures += 1
                click.echo(f"livecontext: error: {exc}", err=True)
                continue
            self.since, self.sent = await session.log.last_seq(), [line]
            try:
                await give_input(self.client, session.agent.input, ProvideInput(line, cut_oversized=self.cut_oversized))
            except InputTooLargeError as exc:  # (the task, pinned: nothing recorded, the chat goes on)
                self.failures += 1
                click.echo(f"livecontext: error: {exc}", err=True)
                continue
            if not await self._turn_and_approvals():
                return

    async def _turn_and_approvals(self) -> bool:
        """A turn; then, while it stopped for approval, a prompt per call waiting (``y``, ``n``
        then a reason, ``e`` then edited JSON arguments) and the turn carried on. Returns
        ``False`` if the input ended (or Ctrl-C came) at a prompt: the calls still wait."""
        await self._turn()
        while not self.interrupt.caught:
            status = await self.client.ask(self.session.agent.history, GetStatus())
            assert isinstance(status, AgentStatus)
            if status.status is not TaskStatus.WAITING_APPROVAL:
                return True
            for call in status.approvals:
                decision = await self._decision(call)
                if decision is None:
                    return False
                try:
                    await decide_approval(self.client, self.session.agent.history, decision)
                except UsageError as exc:
                    self.failures += 1
                    click.echo(f"livecontext: error: {exc}", err=True)
            await self._turn()
        return False

    async def _decision(self, call: ToolCall) -> DecideApproval | None:
        """Ask whether ``call`` may run, until the answer is one (``None``: the input ended)."""
        by = os.environ.get("USER", "").strip() or "user"
        while True:
            answer = await self._ask_line(f"approve {call.name}({call.arguments})? [y]es / [n]o / [e]dit: ")
            if answer is None:
                return None
            said = answer.strip().lower()
            if said in ("y", "yes"):
                return DecideApproval(call.id, True, None, "", by)
            if said in ("n", "no"):
                reason = await self._ask_line("reason (the model reads it): ")
                return None if reason is None else DecideApproval(call.id, False, None, reason.strip(), by)
            if said in ("e", "edit"):
                while True:
                    text = await self._ask_line(f"arguments of {call.name} (a JSON object): ")
                    if text is None:
                        return None
                    problem = _not_json_object(text)
                    if problem is None:
                        return DecideApproval(call.id, True, text.strip(), "", by)
                    self.console.print(f"[yellow]{escape(problem)}; type them again[/yellow]", highlight=False)
            else:
                self.console.print("[yellow]answer y (run it), n (do not run it) or e (edit its arguments)[/yellow]")

    async def _ask_line(self, prompt: str) -> str | None:
        """One line read after ``prompt`` (``None``: the input ended, or Ctrl-C)."""
        if not self.terminal.tty:  # (a pipe: the question is said on its own line)
            self.console.print(escape(prompt.rstrip()), highlight=False, soft_wrap=True)
        with self.interrupt.region():
            line = await trio.to_thread.run_sync(self.terminal.read_line, prompt, abandon_on_cancel=True)
        return None if self.interrupt.caught else line

    async def _turn(self) -> None:
        """Run until the engine waits for input again, showing its events as they come."""
        replies: list[Idle] = []
        self.terminal.echo(False)
        try:
            async with self._watching() as live:
                with self.interrupt.region():
                    # the events are shown by this task alone, so that none is shown after the
                    # answer's end (a second reader could hold one it has not shown yet)
                    async with trio.open_nursery() as nursery:
                        async def ask() -> None:
                            idle = await self.client.ask(self.session.agent.engine, RunUntilIdle(), timeout=None)
                            assert isinstance(idle, Idle)
                            replies.append(idle)
                            nursery.cancel_scope.cancel()
                        nursery.start_soon(ask)
                        async for env in self.events:
                            self.view(env.payload)
                while True:  # every event was published before the reply: show the rest now
                    try:
                        self.view(self.events.receive_nowait().payload)
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                if live is not None and replies:
                    live.stopped(self.session.agent.thread_id, replies[0].reason_text)
        finally:
            self.terminal.echo(True)
        if isinstance(self.view, ChatView):
            self.view.end_line()
        if replies and replies[0].reason is IdleReason.FAILED:
            self.failures += 1
            click.echo(f"livecontext: error: {replies[0].reason_text}", err=True)

    def _watching(self) -> contextlib.AbstractAsyncContextManager[LiveView | None]:
        """A live panel of the agent for one turn, with ``--live`` (else nothing)."""
        if self.live is None:
            return contextlib.nullcontext()
        return open_live_view(self.session.rt, [self.live], self.console)


class _Answers:
    """The chat's view of engine events under a live panel: each answer whole, once recorded
    (a streamed line would fight the panel for the bottom of the screen); the panel says the rest."""

    def __init__(self, console: Console, *, shown: bool) -> None:
        self.console = console
        self.shown = shown
        """Whether it prints them (else the panel's plain lines do)."""

    def __call__(self, event: Message) -> None:
        if self.shown and isinstance(event, AfterModelCall) and not event.error and event.text.strip():
            self.console.print(f"[dim]model:[/dim] [bold]{escape(event.text.strip())}[/bold]", highlight=False)


def _not_json_object(text: str) -> str | None:
    """What is wrong with ``text`` as edited arguments (``None``: it is a JSON object)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON ({exc})"
    return None if isinstance(value, dict) else f"not a JSON object but {type(value).__name__}"


async def _show_so_far(session: Session, console: Console) -> None:
    """A resumed thread's last inputs and answers, a line each."""
    entries = await session.rt.client("so-far").ask(session.agent.history, ReadHistory(include_folded=True))
    assert isinstance(entries, HistorySlice)
    said = [entry_json(e) for e in entries.entries]
    said = [e for e in said if e["kind"] in ("model_input", "model_output") and e["levels"]["live"].strip()]
    if not said:
        return
    earlier = len(said) - SHOWN_ENTRIES
    console.print(f"[dim]the conversation so far{f' ({earlier} earlier lines not shown)' if earlier > 0 else ''}:"
                  "[/dim]")
    for e in said[-SHOWN_ENTRIES:]:
        who = "you" if e["kind"] == "model_input" else "model"
        text = " ".join(e["levels"]["live"].split())
        if len(text) > _SHOWN_CHARS:
            text = text[: _SHOWN_CHARS - 1] + "…"
        console.print(f"[dim]{who}:[/dim] {escape(text)}", highlight=False)

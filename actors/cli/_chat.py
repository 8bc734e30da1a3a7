"""``livecontext chat``: one turn at a time on a terminal, or on lines piped in.

A line read at the prompt starts a turn, and the ``> `` prompt comes after the answer. A line
ended (Enter) while the agent works interrupts it: the model call or the tool in flight is
cut, and the line is its next input; a line that starts with ``+`` (:data:`QUEUE_KEY`) is
queued instead, for when the agent waits for input again. On a terminal, what is typed
while an answer streams is not echoed into it, and a line not ended yet waits for the next
prompt, where the line editor shows it. On a pipe, lines that were there before the turn
began wait their turn (a script of lines is answered one by one); one that comes while the
agent works interrupts it. A resumed thread shows its last exchanges.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import stat
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
    InputMode,
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

QUEUE_KEY = "+"
"""A line typed while the agent works that starts with this is queued, not interrupting."""
HINT = ("an empty line or Ctrl-D ends; while the agent works, Enter interrupts it with your line, "
        f"and a line starting with {QUEUE_KEY} is queued")
"""The chat's opening hint line (after ``chatting on thread ... with MODEL; ``)."""
SHOWN_ENTRIES = 6
"""How many of a resumed thread's last inputs and answers are shown."""
_SHOWN_CHARS = 100


class Terminal:
    """Where the chat reads its lines: a terminal (a ``> `` prompt, line editing; no echo
    while an answer streams) or a pipe (no prompt). Bytes that are not UTF-8 are read as they
    are (``surrogateescape``) so that they can be reported rather than fail the read.

    :meth:`restore` puts the terminal back as it was (a line editor cut short by Ctrl-C may
    leave it without echo).

    While the agent works, :meth:`line_while_busy` gives each line that comes meanwhile: on a
    terminal, one ended with Enter (its line discipline hands over whole lines; one not
    ended stays for the line editor); on a pipe, one that arrives (those there before wait
    for :meth:`read_line`). Input that cannot be watched (a regular file, a stream with no
    descriptor) is read at the prompt only.
    """

    def __init__(self) -> None:
        if isinstance(sys.stdin, io.TextIOWrapper):
            sys.stdin.reconfigure(errors="surrogateescape")
        self.tty = sys.stdin.isatty()
        self._saved: list[Any] | None = None
        self._fd = _watchable_fd()
        """The descriptor read directly (a terminal's or a pipe's), or ``None``: read through
        ``input()`` at the prompt only."""
        self._buffer = b""
        """Bytes read from :attr:`_fd` not given as lines yet."""
        self._ended = False
        if self.tty:
            import readline  # noqa: F401  (input() edits lines, and shows what was typed ahead)
            import termios

            self._saved = termios.tcgetattr(sys.stdin.fileno())

    @property
    def watched(self) -> bool:
        """Whether lines typed while the agent works are read then (see :meth:`line_while_busy`)."""
        return self._fd is not None

    async def read_line(self, prompt: str = "> ") -> str | None:
        """The next line after ``prompt`` (``None`` at the end of the input); on a pipe no
        prompt is shown."""
        ahead = self._take_line()
        if ahead is not None:
            if self.tty:
                print(f"{prompt}{ahead}", flush=True)
            return ahead
        if self._fd is None or self.tty:  # (on a terminal, the line editor reads it)
            return await trio.to_thread.run_sync(self._input, prompt, abandon_on_cancel=True)
        return await self._next_read_line()

    def take_piped(self) -> None:
        """On a pipe, read what is there already (without waiting): lines piped before a turn
        began wait for :meth:`read_line` (a script of lines is answered one by one, its
        answers to an approval prompt included), where a line that arrives during the turn
        interrupts it. On a terminal nothing is read: a line typed is a line typed now."""
        if self._fd is None or self.tty or self._ended:
            return
        while select.select([self._fd], [], [], 0)[0]:
            chunk = os.read(self._fd, 65536)
            if not chunk:
                self._ended = True
                return
            self._buffer += chunk

    async def line_while_busy(self) -> str | None:
        """The next line typed while the agent works (``None``: the input ended). Lines
        that were read before (typed ahead) wait for :meth:`read_line`: this waits forever."""
        if self._fd is None or b"\n" in self._buffer:
            await trio.sleep_forever()
        return await self._next_read_line()

    async def _next_read_line(self) -> str | None:
        """The next line read from :attr:`_fd`, waiting for it (``None``: the input ended)."""
        while True:
            if not await self._read_more():
                return self._rest()
            line = self._take_line()
            if line is not None:
                return line

    def _input(self, prompt: str) -> str | None:
        try:
            return input(prompt if self.tty else "")
        except EOFError:
            return None

    async def _read_more(self) -> bool:
        """Read what :attr:`_fd` has (waiting for it); ``False`` at its end."""
        assert self._fd is not None
        if self._ended:
            return False
        await trio.lowlevel.wait_readable(self._fd)
        chunk = os.read(self._fd, 65536)
        if not chunk:
            self._ended = True
            return False
        self._buffer += chunk
        return True

    def _take_line(self) -> str | None:
        at = self._buffer.find(b"\n")
        if at < 0:
            return None
        line, self._buffer = self._buffer[:at], self._buffer[at + 1:]
        return line.decode("utf-8", "surrogateescape").rstrip("\r")

    def _rest(self) -> str | None:
        """What is left at the end of the input (a last line without its newline), once."""
        rest, self._buffer = self._buffer, b""
        return rest.decode("utf-8", "surrogateescape") if rest else None

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
            console.print(f"[dim]chatting on thread {thread_id} with {opened.model or 'echo'}; {HINT}[/dim]",
                          highlight=False, soft_wrap=True)  # (one line: the terminal wraps it)
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
        self.ended = False
        """The input ended (or an empty line came) while the agent worked: the chat ends
        after the turn."""
        self.given = 0
        """Lines given while the agent worked."""

    async def run(self) -> None:
        session = self.session
        self.since = await session.log.last_seq()
        if session.resumed_state is not EngineState.WAITING_INPUT:
            self.console.print(f"[dim]thread {session.agent.thread_id} was stopped in the middle of a step "
                               f"({session.resumed_state.value}): finishing it first[/dim]")
            if not await self._turn_and_approvals():
                return
        while not self.interrupt.caught and not self.ended:
            with self.interrupt.region():
                line = await self.terminal.read_line()
            if self.interrupt.caught and self.terminal.tty:
                self.console.print()  # (after what was typed at the prompt)
            if self.interrupt.caught or line is None or not line.strip():
                return
            typed = self._typed(line)  # (the agent waits: a queued line is any line)
            if typed is None:
                continue
            line = typed[0]
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
            line = await self.terminal.read_line(prompt)
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
                            while True:  # again if a line came as the run ended: it takes it
                                given = self.given
                                idle = await self.client.ask(self.session.agent.engine, RunUntilIdle(), timeout=None)
                                assert isinstance(idle, Idle)
                                replies.insert(0, idle)
                                if self.given == given or idle.reason is not IdleReason.NO_INPUT:
                                    break
                            nursery.cancel_scope.cancel()
                        nursery.start_soon(ask)
                        if self.terminal.watched and not self.ended:
                            self.terminal.take_piped()
                            nursery.start_soon(self._listen)
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

    def _typed(self, line: str) -> tuple[str, bool] | None:
        """What a typed line gives: its text and whether it is queued (it starts with
        :data:`QUEUE_KEY`, taken off); ``None`` if that leaves nothing, or if the text cannot
        be sent (said in one line, and counted as a failure)."""
        queued = line.lstrip().startswith(QUEUE_KEY)
        text = line.lstrip()[len(QUEUE_KEY):].lstrip() if queued else line
        if not text.strip():
            return None
        try:
            check_text(text, "input")
        except InvalidTextError as exc:
            self.failures += 1
            click.echo(f"livecontext: error: {exc}", err=True)
            return None
        return text, queued

    async def _listen(self) -> None:
        """Give each line typed while the agent works: interrupting, or queued if it starts
        with :data:`QUEUE_KEY`; the end of the input (or an empty line) ends the chat after
        the turn."""
        while True:
            line = await self.terminal.line_while_busy()
            if line is None or not line.strip():
                self.ended = True
                return
            typed = self._typed(line)
            if typed is None:
                continue
            text, queued = typed
            mode = InputMode.QUEUE if queued else InputMode.INTERRUPT
            if isinstance(self.view, ChatView):
                self.view.end_line()
            self.console.print(f"[dim]you ({'queued' if queued else 'interrupting'}):[/dim] {escape(text)}",
                               highlight=False)
            self.sent.append(text)
            self.given += 1
            with trio.CancelScope(shield=True):  # (read, it must be given: the turn's end must not lose it)
                try:
                    await give_input(self.client, self.session.agent.input,
                                     ProvideInput(text, cut_oversized=self.cut_oversized, mode=mode))
                except InputTooLargeError as exc:
                    self.failures += 1
                    click.echo(f"livecontext: error: {exc}", err=True)

    def _watching(self) -> contextlib.AbstractAsyncContextManager[LiveView | None]:
        """A live panel of the agent for one turn, with ``--live`` (else nothing)."""
        if self.live is None:
            return contextlib.nullcontext()
        return open_live_view(self.session.rt, [self.live], self.console)


def _watchable_fd() -> int | None:
    """Standard input's descriptor if lines can be waited for on it (a terminal, a pipe, a
    socket), else ``None`` (a regular file, which is always readable; no descriptor)."""
    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode) else None


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

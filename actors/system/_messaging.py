"""The messaging app: how an agent of a system reaches the others, through two tools.

``send_message(to, text)`` leaves a note: a notification posted to the receiver's history by
the sender's app host (``app/THREAD``, stamped by the runtime), which the receiver reads with
its next input (the ``silent`` dispatch mode). With ``mode="interrupt"`` the message is given
to the receiver's input source as an interrupting input instead: it cuts the model call or
tool the receiver is running and is its next input (an idle receiver takes it in its next
turn); with ``mode="terminate"`` it ends the receiver's task, the text being the reason. ``ask_agent(to, question)`` runs the receiver on the question and returns its
answer: the asker takes the receiver's next turn from the system's switchboard, posts the
question (a notification again, so the receiver's log names who asked what), feeds it an input
saying whom to answer, runs it until it waits for input, and gives the turn back. A question
that is not answered within the system's ``ask_timeout_s`` stops the receiver's run and fails.

Both tools are idempotent: each message is keyed by its sender's name and the tool call's id
(``planner:call_3_0``, see :func:`message_key`), which the receiver's history keeps with it.
A call run again (the engine re-runs an idempotent tool whose result a crash kept from being
recorded; a fork of the system resumes one cut in the middle) finds its message there: a
message is delivered once, and a question is asked once and its answer taken up where the
receiver left it (:func:`~._turns.run_question`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from types import MappingProxyType

import trio
from attrs import field, frozen

from livecontext.protocol.agent import InputMode, InvokeTool, NotificationPosted, PostNotification, ProvideInput
from livecontext.protocol.history import Retention
from livecontext.protocol.kernel import ActorId
from livecontext.runtime import Context

from ._turns import AgentAddress, TurnRefusedError, held_turn, run_question
from ..apps import App, ToolFailure, ToolOutcome, tool
from ..blueprint import DEFAULT_ASK_TIMEOUT_S

def _readonly(value: Mapping[str, AgentAddress]) -> Mapping[str, AgentAddress]:
    return MappingProxyType(dict(value))


@frozen
class Directory:
    """The agents of one system, as each of them can reach the others."""

    system: str
    switchboard: ActorId
    agents: Mapping[str, AgentAddress] = field(converter=_readonly, hash=False)
    """Every agent, by name, in the blueprint's order."""
    ask_timeout_s: float = DEFAULT_ASK_TIMEOUT_S


class Messaging(App):
    """``send_message`` and ``ask_agent`` for agent ``me`` of a system (see the module docstring)."""

    name = "messaging"

    def __init__(self, me: str = "", directory: Directory | None = None) -> None:
        self.me = me
        self.directory = directory
        """``None``: not part of a running system (an app rebuilt to render a recorded thread)."""
        self.ctx: Context | None = None
        self._claims = itertools.count(1)

    def fresh(self) -> Messaging:
        return Messaging(self.me, self.directory)

    def bind(self, ctx: Context) -> None:
        self.ctx = ctx

    def view(self) -> str:
        # the same for every agent, running or rebuilt: who the others are is in the system
        # prompt (see roster_prompt), which the log keeps
        return "Reach the other agents with send_message (a note) and ask_agent (a question; you wait for the answer)."

    @tool(idempotent=True)  # keyed: run again, it finds the message delivered
    async def send_message(self, to: str, text: str, mode: str = "silent") -> ToolOutcome:
        """Leave a message for another agent of the system; it reads it with its next input.

        Does not wait for an answer: use ask_agent for that.

        Args:
            to: The receiving agent's name.
            text: The message.
            mode: silent (default), interrupt (stop its current work; your message is its next input) or terminate (end its task; text is why).
        """
        key, target, ctx = self._key(), self._target(to), self._ctx()
        if not text.strip():
            raise ToolFailure("text is empty: write the message to send")
        if mode not in SEND_MODES:
            raise ToolFailure(f"unknown mode {mode!r}: use one of {', '.join(SEND_MODES)}")
        if mode != "silent":
            given = InputMode(mode)
            said = f"{self.me} says: {text}" if given is InputMode.INTERRUPT else text
            await ctx.ask(target.input, ProvideInput(said, Retention.COMPRESSIBLE, key, mode=given), timeout=None)
            done = "interrupted, with your message as its next input" if given is InputMode.INTERRUPT else \
                "its task was terminated"
            return ToolOutcome.ok(f"{to} {done}", gist=f"{mode} {to}: {_line(text)}")
        posted = await ctx.ask(target.history, PostNotification(f"{self.me} says: {text}", key))
        assert isinstance(posted, NotificationPosted)
        note = posted.notification.id
        return ToolOutcome.ok(f"message {note} left for {to}; it reads it with its next input",
                              gist=f"message {note} to {to}: {_line(text)}")

    @tool(idempotent=True, waits_on_agent=True)  # keyed: run again, it takes up the question where it stopped
    async def ask_agent(self, to: str, question: str) -> ToolOutcome:
        """Ask another agent of the system a question and wait for its answer.

        The agent answers one question at a time: if it is busy, the question waits its turn.

        Args:
            to: The agent to ask, by name.
            question: The question, in full: the agent sees its own history and this, not yours.
        """
        key, target, ctx, directory = self._key(), self._target(to), self._ctx(), self._directory()
        if not question.strip():
            raise ToolFailure("question is empty: write what to ask")
        timeout = directory.ask_timeout_s
        # not pinned as the thread's task, even as its first input: the agent's task is its
        # role, and the next question will be another
        asked = ProvideInput(f"Answer {self.me}'s question (the notification below); "
                             f"your reply is sent back to {self.me}.", Retention.COMPRESSIBLE)
        with trio.move_on_after(timeout) as scope:
            try:
                async with held_turn(ctx, directory.switchboard, to, f"{self.me}.{next(self._claims)}"):
                    outcome = await run_question(ctx, target, asked, note=f"{self.me} asks: {question}", key=key)
            except TurnRefusedError as exc:
                raise ToolFailure(str(exc)) from None
        if scope.cancelled_caught:
            raise ToolFailure(f"{to} did not answer within {timeout:g} s (the system's ask_timeout_s); "
                              "its run was stopped. Ask again later, or go on without its answer")
        if outcome.answer is None:
            raise ToolFailure(f"{to} did not answer: its run stopped after {outcome.idle.steps} steps "
                              f"({outcome.idle.reason_text})")
        answer = outcome.answer or "(an empty answer)"
        return ToolOutcome.ok(answer, gist=f"{to} answered: {_line(answer)}")

    def _ctx(self) -> Context:
        if self.ctx is None:
            raise ToolFailure("messaging is not running in an app host")
        return self.ctx

    def _key(self) -> str:
        """The key of the message the tool call being run sends (see the module docstring)."""
        current = self._ctx().current
        if current is None or not isinstance(current.payload, InvokeTool):
            raise ToolFailure("messaging tools run inside an app host's InvokeTool")
        return message_key(self.me, current.payload.call.id)

    def _directory(self) -> Directory:
        if self.directory is None:
            raise ToolFailure("this agent is not part of a running system: there is nobody to reach")
        return self.directory

    def _target(self, to: str) -> AgentAddress:
        directory = self._directory()
        target = directory.agents.get(to)
        others = ", ".join(name for name in directory.agents if name != self.me) or "(none but you)"
        if target is None:
            raise ToolFailure(f"no agent named {to!r} in system {directory.system!r}; "
                              f"the agents there are: {others}")
        if to == self.me:
            raise ToolFailure(f"{to!r} is you: send_message and ask_agent reach the other agents ({others})")
        return target


SEND_MODES = ("silent", "interrupt", "terminate")
"""The modes of ``send_message``: a note (the ``silent`` dispatch mode), or an input that
interrupts the receiver or terminates its task."""


def message_key(sender: str, call_id: str) -> str:
    """The key of the message (or question) that agent ``sender``'s tool call ``call_id``
    sends: the same in every run of the call, and in a fork of the system (agents keep their
    names there; threads do not)."""
    return f"{sender}:{call_id}"


def roster_prompt(me: str, directory: Directory) -> str:
    """What agent ``me`` is told of its system, after its system prompt: the other agents, what
    each is for, and how to reach them."""
    lines = [f"You are {me}, one of the agents of system {directory.system}. The others, whom you "
             "reach with your tools send_message (a note they read with their next input) and "
             "ask_agent (a question; you wait for the answer):"]
    lines += [f"- {a.name}" + (f": {a.description}" if a.description else "")
              for a in directory.agents.values() if a.name != me]
    return "\n".join(lines)


def _line(text: str, limit: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"

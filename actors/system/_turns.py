"""Taking one turn of an agent of a system: claim it, feed it, run it, read its answer, give it back.

Both ways into an agent of a system go through here: a question from another agent
(``ask_agent``, run in the asker's app host) and an input from the user
(:meth:`~livecontext.actors.System.send`). The turn is claimed from the system's switchboard
(see :mod:`._switchboard`), so that two of them never feed the same agent at once.

A question is keyed by its asker's name and tool call (:func:`run_question`): the call, run
again after a crash (``ask_agent`` is idempotent) or in a fork of the system, finds in the
receiver's history how far the question got (posted, read, answered) and takes up from there,
so that the receiver answers it once.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

import trio
from attrs import frozen

from livecontext.protocol.agent import (
    Cancel,
    GetTail,
    Idle,
    IdleReason,
    NotificationPosted,
    PostNotification,
    ProvideInput,
    RunUntilIdle,
    Tail,
)
from livecontext.protocol.history import EngineState
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.system import ClaimTurn, FindMessage, MessageFound, ReleaseTurn, TurnRefused
from livecontext.runtime import ActorError, Context, UsageError

from ..agent import final_answer


@frozen
class AgentAddress:
    """Where an agent of a system is: its name, its thread (so its actors' ids), how it runs."""

    name: str
    thread_id: str
    max_steps: int | None = None
    """The most engine steps one turn takes (``None``: until it waits for input)."""
    description: str = ""
    """What it is for, as the other agents read it in their messaging window."""

    @property
    def engine(self) -> ActorId:
        return ActorId("engine", self.thread_id)

    @property
    def history(self) -> ActorId:
        return ActorId("history", self.thread_id)

    @property
    def input(self) -> ActorId:
        return ActorId("input", self.thread_id)


class TurnRefusedError(UsageError):
    """The switchboard refused a turn: an unknown agent, or an ask that would deadlock.

    Attributes:
        agent: The agent whose turn was claimed.
        cycle: The agents that would wait for each other (empty for other refusals).
    """

    def __init__(self, refused: TurnRefused) -> None:
        self.agent = refused.agent
        self.cycle = refused.cycle
        super().__init__(refused.reason)


@frozen
class TurnOutcome:
    """How a turn ended: the engine's :class:`~livecontext.protocol.agent.Idle` and the answer."""

    idle: Idle
    answer: str | None
    """The text of the agent's last model output, if the turn ended with one (it waits for
    input); ``None`` if it stopped otherwise (a failure, ``max_steps``, a cancel)."""


@contextlib.asynccontextmanager
async def held_turn(ctx: Context, switchboard: ActorId, agent: str, claim: str) -> AsyncIterator[None]:
    """Hold ``agent``'s turn for the block: wait for it, and give it back however the block ends.

    A cancel while waiting gives up the claim; nothing is left queued.

    Raises:
        TurnRefusedError: the switchboard refused the claim (nothing is held then).
    """
    try:
        got = await ctx.ask(switchboard, ClaimTurn(agent, claim), timeout=None)
        if isinstance(got, TurnRefused):
            raise TurnRefusedError(got)
        yield
    finally:
        with trio.CancelScope(shield=True):
            try:
                await ctx.tell(switchboard, ReleaseTurn(agent, claim))
            except ActorError:  # the system is closing: nothing to give back to
                pass


async def run_turn(ctx: Context, agent: AgentAddress, inputs: Sequence[ProvideInput], *,
                   note: str | None = None, key: str | None = None) -> TurnOutcome:
    """Run ``agent`` on ``inputs`` until it waits for input again; hold its turn around this.

    Work an earlier turn left unfinished (a crash, a cancel) is finished first, so that
    ``note`` (a notification posted just before the inputs, with ``key``) rides on the first
    of them. A cancel of the caller cancels the agent's run too: nobody would read its answer.
    """
    tail = await _tail(ctx, agent)
    if tail.state is not EngineState.WAITING_INPUT:
        idle = await _run(ctx, agent)
        if idle.reason is not IdleReason.NO_INPUT:
            return TurnOutcome(idle, None)
    if note is not None:
        posted = await ctx.ask(agent.history, PostNotification(note, key))
        assert isinstance(posted, NotificationPosted)
    for given in inputs:
        await ctx.ask(agent.input, given)
    idle = await _run(ctx, agent)
    if idle.reason is not IdleReason.NO_INPUT:
        return TurnOutcome(idle, None)
    return TurnOutcome(idle, await final_answer(ctx, agent.history))


async def run_question(ctx: Context, agent: AgentAddress, asked: ProvideInput, *, note: str,
                       key: str) -> TurnOutcome:
    """:func:`run_turn` for a question (``note``, then the input ``asked``), at most once per
    ``key``; hold the agent's turn around this.

    If the agent's history holds the question already (the asking call was stopped and runs
    again), it is not asked twice: the agent's unfinished work is finished; a question never
    read is given its input now; one read and answered gives that answer (as
    :func:`final_answer` if the agent took no input since, else its first text after it).
    """
    found = await _find(ctx, agent, key)
    if found.notification is None:
        return await run_turn(ctx, agent, [asked], note=note, key=key)
    if (await _tail(ctx, agent)).state is not EngineState.WAITING_INPUT:
        idle = await _run(ctx, agent)  # (stopped while answering it, most likely)
        if idle.reason is not IdleReason.NO_INPUT:
            return TurnOutcome(idle, None)
        found = await _find(ctx, agent, key)
    if found.read_in is None:
        return await run_turn(ctx, agent, [asked])
    idle = Idle(EngineState.WAITING_INPUT, 0, IdleReason.NO_INPUT)
    if found.in_latest_turn:  # answered as any turn is (a task_complete result, ...)
        return TurnOutcome(idle, await final_answer(ctx, agent.history))
    return TurnOutcome(idle, found.reply)


async def _find(ctx: Context, agent: AgentAddress, key: str) -> MessageFound:
    found = await ctx.ask(agent.history, FindMessage(key))
    assert isinstance(found, MessageFound)
    return found


async def _tail(ctx: Context, agent: AgentAddress) -> Tail:
    tail = await ctx.ask(agent.history, GetTail())
    assert isinstance(tail, Tail)
    return tail


async def _run(ctx: Context, agent: AgentAddress) -> Idle:
    try:
        idle = await ctx.ask(agent.engine, RunUntilIdle(agent.max_steps), timeout=None)
    except trio.Cancelled:
        with trio.CancelScope(shield=True):  # stop the run we started: its answer has no reader now
            try:
                await ctx.ask(agent.engine, Cancel(), timeout=30)
            except ActorError:
                pass
        raise
    assert isinstance(idle, Idle)
    return idle

"""What an agent answered, read from its history: the one answer a turn of a system's agent and a
sub-agent's run both give back."""

from __future__ import annotations

from typing import Any

from livecontext.protocol.agent import AgentStatus, GetStatus, GetTail, Tail
from livecontext.protocol.history import ModelOutputEntry, TaskStatus
from livecontext.protocol.kernel import ActorId
from livecontext.runtime import ActorRef, Context


async def final_answer(ctx: Context, history: ActorId | ActorRef[Any]) -> str | None:
    """What an agent that stopped to wait for input answered: the result it gave
    ``task_complete``, else the reason it gave ``task_abandon`` (said as such), or the reason
    its task was terminated for, else the
    question it gave ``wait_user_response`` (or a sub-agent's message to ``wait_parent``), else
    its last model output's text (``None``: it has none)."""
    status = await ctx.ask(history, GetStatus())
    assert isinstance(status, AgentStatus)
    if status.result is not None:
        return status.result
    if status.status is TaskStatus.ABANDONED and status.reason is not None:
        return f"gave the task up: {status.reason}"
    if status.status is TaskStatus.TERMINATED and status.reason is not None:
        return f"its task was terminated by {status.by}: {status.reason}"
    if status.question is not None:
        return status.question
    tail = await ctx.ask(history, GetTail())
    assert isinstance(tail, Tail)
    return tail.last.content.live.text if isinstance(tail.last, ModelOutputEntry) else None

"""The ask-cycle tests' messages and relay (plain and inline asks): actors asking along a path."""

from __future__ import annotations

from attrs import frozen

from livecontext.protocol.kernel import ActorId, Message
from livecontext.runtime import AskCycleError, Context


@frozen
class AskOn(Message):
    """Ask ``AskOn(rest)`` of ``path[0]``; the last actor of the path answers."""

    path: tuple[ActorId, ...]


@frozen
class Via(Message):
    """The answer: the actors the request went through, in order."""

    via: tuple[str, ...]


@frozen
class Caught(Message):
    """Asks an actor for the cycle errors it caught."""


@frozen
class CaughtList(Message):
    errors: tuple[str, ...]


async def relay(ctx: Context, msg: AskOn, caught: list[str]) -> Via:
    """What a relay's ``AskOn`` handler does: ask the next actor of the path (the last one
    answers), recording an :class:`AskCycleError` in ``caught`` before it propagates."""
    if not msg.path:
        return Via((str(ctx.self_id),))
    try:
        reply = await ctx.ask(msg.path[0], AskOn(msg.path[1:]), timeout=60)
    except AskCycleError as exc:
        caught.append(str(exc))
        raise
    return Via((str(ctx.self_id), *reply.via))

"""The switchboard of a system of agents: each agent's turns, one at a time, and no deadlock.

An agent answers one question (or one input of the user) at a time: whoever wants to run it
claims its next turn here (:class:`~livecontext.protocol.system.ClaimTurn`), runs it, and gives it
back (:class:`~livecontext.protocol.system.ReleaseTurn`). Claims are granted in the order they came.

An agent that asks another waits, in its tool call, for that agent's answer; meanwhile its own
turn is taken, so nobody can ask *it* anything until it has the answer. If the agent asked
is itself waiting, maybe through others, for the asker, neither would ever answer: the
switchboard keeps who waits for whom and refuses the claim that would close such a cycle,
naming it, instead of letting the system hang.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping

from attrs import define

from livecontext.protocol.kernel import ActorId
from livecontext.protocol.system import ClaimTurn, ReleaseTurn, TurnGranted, TurnRefused
from livecontext.runtime import Actor, PendingReply, handler


@define
class _Claim:
    owner: ActorId
    """Who claimed (the envelope's sender)."""
    claim: str
    asker: str | None
    """The agent that waits for the turn (an agent's app host claimed it), else ``None``."""
    reply: PendingReply | None = None
    """Where the grant goes, for a claim that had to wait."""

    def is_(self, owner: ActorId, claim: str) -> bool:
        return self.owner == owner and self.claim == claim


def switchboard_id(system: str) -> ActorId:
    """The switchboard's actor id: ``system/NAME``."""
    return ActorId("system", system)


class Switchboard(Actor):
    """Grants each agent's turns one at a time, in order, and refuses claims that would deadlock.

    Args:
        system: The system's name (for messages).
        threads: Each agent's thread id, by agent name: a claim sent by ``app/THREAD`` (the
            agent's app host, where its tools run) is that agent's.
    """

    def __init__(self, system: str, threads: Mapping[str, str]) -> None:
        self.system = system
        self.names = tuple(threads)
        self._agent_of = {ActorId("app", thread): name for name, thread in threads.items()}
        self._held: dict[str, _Claim] = {}
        self._waiting: dict[str, collections.deque[_Claim]] = {}
        self._waits_for: dict[str, str] = {}
        """Agent -> the agent whose turn it claimed (granted or still waiting): it cannot go on
        before that agent has answered."""

    def waits_for(self) -> dict[str, str]:
        """Who waits for whose answer now (a copy, for tests and inspection)."""
        return dict(self._waits_for)

    @handler(inline=True)
    def on_claim(self, msg: ClaimTurn) -> TurnGranted | TurnRefused | None:
        env = self.ctx.current
        assert env is not None
        if msg.agent not in self.names:
            return TurnRefused(msg.agent, msg.claim, (
                f"no agent named {msg.agent!r} in system {self.system!r}; "
                f"the agents there are: {', '.join(self.names)}"))
        asker = self._agent_of.get(env.sender)
        if asker is not None:
            cycle = self._cycle(asker, msg.agent)
            if cycle:
                return TurnRefused(msg.agent, msg.claim, _cycle_reason(cycle), cycle)
            self._waits_for[asker] = msg.agent
        claim = _Claim(env.sender, msg.claim, asker)
        if msg.agent not in self._held:
            self._held[msg.agent] = claim
            return TurnGranted(msg.agent, msg.claim)
        claim.reply = self.ctx.defer_reply()
        self._waiting.setdefault(msg.agent, collections.deque()).append(claim)
        return None

    @handler(inline=True)
    def on_release(self, msg: ReleaseTurn) -> None:
        env = self.ctx.current
        assert env is not None
        held = self._held.get(msg.agent)
        if held is not None and held.is_(env.sender, msg.claim):
            del self._held[msg.agent]
            self._forget(msg.agent, held)
            self._grant_next(msg.agent)
            return
        queue = self._waiting.get(msg.agent, collections.deque())
        for claim in queue:
            if claim.is_(env.sender, msg.claim):  # given up before it was granted
                queue.remove(claim)
                self._forget(msg.agent, claim)
                return

    async def on_stop(self) -> None:
        for agent, queue in self._waiting.items():
            for claim in queue:
                if claim.reply is not None:
                    claim.reply.send(TurnRefused(agent, claim.claim, f"system {self.system!r} is closing"))
        self._waiting.clear()

    def _cycle(self, asker: str, agent: str) -> tuple[str, ...]:
        """The agents from ``asker`` through ``agent`` back to ``asker``, each waiting for the
        next, if ``asker`` waiting for ``agent`` would close that cycle; else ``()``."""
        chain = [asker, agent]
        seen = {agent}
        current = agent
        while current != asker:
            nxt = self._waits_for.get(current)
            if nxt is None or nxt in seen and nxt != asker:
                return ()
            chain.append(nxt)
            seen.add(nxt)
            current = nxt
        return tuple(chain)

    def _forget(self, agent: str, claim: _Claim) -> None:
        if claim.asker is not None and self._waits_for.get(claim.asker) == agent:
            del self._waits_for[claim.asker]

    def _grant_next(self, agent: str) -> None:
        queue = self._waiting.get(agent)
        while queue:
            claim = queue.popleft()
            if claim.reply is None:  # told, not asked: nobody to hand the turn to
                self._forget(agent, claim)
                continue
            self._held[agent] = claim
            claim.reply.send(TurnGranted(agent, claim.claim))
            return


def _cycle_reason(cycle: tuple[str, ...]) -> str:
    asker, agent = cycle[0], cycle[1]
    if len(cycle) == 2:
        return f"ask_agent refused: {asker} cannot ask itself; answer it yourself"
    return (f"ask_agent refused, it would deadlock: {' -> '.join(cycle)} (each waits for the next "
            f"one's answer, so {agent} cannot answer {asker} now); answer without {agent}, or "
            f"tell it with send_message (it reads the message with its next input)")

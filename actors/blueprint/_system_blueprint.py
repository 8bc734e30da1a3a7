"""A loaded system blueprint: several agents, each as a one-agent blueprint, in one store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
from attrs import frozen

from livecontext.runtime import UsageError

from ..spend import SpendLimits

DEFAULT_ASK_TIMEOUT_S = 120.0
"""How long ``ask_agent`` waits for an answer, the receiver's turn included, by default (a
system blueprint's ``ask_timeout_s``)."""

ENGINE_TOOL_LIMIT_S = 300.0
"""How long the engine lets any tool call run (an ask waits inside one)."""
from ._blueprint import Blueprint


@frozen
class AgentBlueprint:
    """One ``[[agents]]`` table: the agent's name, what it is for, and its keys."""

    name: str
    """Unique in the system: how the other agents and ``--input NAME=TEXT`` reach it."""
    blueprint: Blueprint
    """Its keys, as a one-agent blueprint's (its thread is ``SYSTEM.NAME`` unless given; its
    ``store`` is ``None``: the system's agents share the system's)."""
    description: str = ""
    """What it is for, as the other agents read it in their messaging window."""


@frozen
class SystemBlueprint:
    """Everything a system blueprint describes (``[[agents]]``; docs/blueprints.md).

    Like :class:`Blueprint`, it opens nothing: :func:`~livecontext.actors.open_system` runs it.
    """

    path: str
    """The file it was loaded from, as it was given."""
    name: str
    """The system's name (``system``; else the file's name without ``.toml``)."""
    agents: tuple[AgentBlueprint, ...]
    """The agents, in the file's order (at least one; names and threads unique)."""
    store: str | None = None
    """The event store URL of every agent's thread; ``None``: the default store."""
    ask_timeout_s: float = DEFAULT_ASK_TIMEOUT_S
    """How long ``ask_agent`` waits for an answer, the receiver's turn included."""
    spend: SpendLimits | None = None
    """The system's spend limits (``[spend]`` at the top level): one set for all its agents,
    their sub-agents included."""

    def __attrs_post_init__(self) -> None:
        if not 0 < self.ask_timeout_s < ENGINE_TOOL_LIMIT_S:
            raise UsageError(f"system {self.name!r}: ask_timeout_s must be > 0 and < {ENGINE_TOOL_LIMIT_S:g} "
                             f"(the engine's limit on any tool call), got {self.ask_timeout_s!r}")
        names = [a.name for a in self.agents]
        if not names:
            raise UsageError(f"system {self.name!r} has no agents: give it at least one")
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise UsageError(f"system {self.name!r} has two agents named {name!r}; give each its own name")
            seen.add(name)
        threads = [a.blueprint.settings.thread_id for a in self.agents]
        if len(set(threads)) != len(threads):
            raise UsageError(f"system {self.name!r} gives two agents one thread ({threads}); one thread each")

    @property
    def names(self) -> tuple[str, ...]:
        """The agents' names, in order."""
        return tuple(a.name for a in self.agents)

    def agent(self, name: str) -> AgentBlueprint:
        """The agent named ``name``.

        Raises:
            UsageError: there is none; the message names the agents there are.
        """
        for a in self.agents:
            if a.name == name:
                return a
        raise UsageError(f"no agent named {name!r} in system {self.name!r}; "
                         f"the agents there are: {', '.join(self.names)}")

    def override(self, *, store: str | None = None,
                 inputs: Mapping[str, Sequence[str]] | None = None,
                 spend: SpendLimits | None = None) -> SystemBlueprint:
        """A copy with the given values in place of the file's (``None`` keeps them).

        ``inputs`` (by agent name) replace every agent's inputs as a whole: an agent it does not
        name gets none, as ``--input`` replaces a one-agent blueprint's inputs.

        Raises:
            UsageError: ``inputs`` names an agent the system does not have.
        """
        agents = self.agents
        if inputs is not None:
            for name in inputs:
                self.agent(name)
            agents = tuple(attrs.evolve(a, blueprint=attrs.evolve(a.blueprint, inputs=tuple(inputs.get(a.name, ()))))
                           for a in self.agents)
        return attrs.evolve(self, agents=agents, store=self.store if store is None else store,
                            spend=self.spend if spend is None else spend)

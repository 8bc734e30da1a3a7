"""The front door for one agent: :func:`open_agent` and the :class:`Agent` it gives (re-exported
by ``livecontext``).

It is a wing of its own, above the blueprints it loads: the agent's wing sits below them (a
blueprint names an agent's settings and apps), so the two cannot be one package without a
circle.
"""

from __future__ import annotations

from ._front import Agent, AgentEvent, AgentState, Reply, open_agent

__all__ = ["Agent", "AgentEvent", "AgentState", "Reply", "open_agent"]

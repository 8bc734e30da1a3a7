"""The front door for one agent: :func:`open_agent` and the :class:`Agent` it gives (re-exported
by ``livecontext``), its forms without ``async`` (:func:`run_agent`, :func:`open_sync_agent`
and the :class:`SyncAgent` it gives), its form on asyncio (:func:`open_aio_agent` and
the :class:`AioAgent` it gives, or :func:`start_aio_agent` for a notebook: ``livecontext.aio``), and below it the one way every caller builds an agent: an
:class:`AgentSpec` opened by :func:`open_agent_from`.

It is a wing of its own, above the blueprints it loads: the agent's wing sits below them (a
blueprint names an agent's settings and apps), so the two cannot be one package without a
circle.
"""

from __future__ import annotations

from ..blueprint import NOT_GIVEN, AgentSpec
from ._aio import AioAgent, open_aio_agent
from ._aio_notebook import start_aio_agent
from ._front import Agent, AgentEvent, AgentState, Reply, agent_spec, open_agent
from ._open import OpenedAgent, open_agent_from
from ._sync import SyncAgent, open_sync_agent, run_agent

__all__ = ["NOT_GIVEN", "Agent", "AioAgent", "AgentEvent", "AgentSpec", "AgentState", "OpenedAgent", "Reply", "SyncAgent",
           "agent_spec", "open_agent", "open_agent_from", "open_aio_agent", "open_sync_agent", "run_agent", "start_aio_agent"]

"""The actors of an agent: engine, history store, app host and apps, input source, CLI."""

from __future__ import annotations

from ._agent import AgentActors, AgentSettings, check_thread_id, spawn_agent
from ._host import AppHost
from ._input import InputSource
from ._subagents import SubAgents

__all__ = ["AgentActors", "AgentSettings", "AppHost", "InputSource", "SubAgents", "check_thread_id", "spawn_agent"]

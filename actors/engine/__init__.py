"""The engine: an agent's state machine as an actor."""

from __future__ import annotations

from ._engine import Engine, EngineWiring, StepOutcome, engine_topic

__all__ = ["Engine", "EngineWiring", "StepOutcome", "engine_topic"]

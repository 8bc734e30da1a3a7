"""The engine: an agent's state machine as an actor, and its control tools."""

from __future__ import annotations

from ._approval import NO_APPROVALS, ApprovalCheck, ApprovalPolicy, import_check
from ._engine import Engine, EngineWiring, StepOutcome, engine_topic
from ._lifecycle import CONTROL_TOOL_NAMES, CONTROL_TOOLS, ToolNameClashError, control_tools, run_control_tool

__all__ = ["ApprovalCheck", "ApprovalPolicy", "NO_APPROVALS", "import_check", "CONTROL_TOOLS", "CONTROL_TOOL_NAMES", "Engine", "EngineWiring", "StepOutcome", "ToolNameClashError",
           "control_tools", "engine_topic", "run_control_tool"]

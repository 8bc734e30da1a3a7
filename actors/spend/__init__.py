"""Spend limits: an agent (a system, an agent with its sub-agents) stops before the model call
that would pass its limit on input tokens, output tokens or cost (README, "Spend limits")."""

from __future__ import annotations

from ._ledger import SpendLedger, ledger_id
from ._limits import SpendLimits, SpendLimitsError, override_limits

__all__ = ["SpendLedger", "SpendLimits", "SpendLimitsError", "ledger_id", "override_limits"]

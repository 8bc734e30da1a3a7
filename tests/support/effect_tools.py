"""Side-effecting tools for the tests of effects done exactly once (tests/durability/test_effects_once.py).

Each call writes its points to the effect log named by ``$EFFECT_LOG`` (``before``, ``effect``,
``after``, each with the call's idempotency key): the ``effect`` line *is* the effect, so the log
says how many times it happened. With ``$EFFECT_HOLD`` set to a point's name, the call stops
there for good once it has written that point: the test kills the process at that instant.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from livecontext import ToolContext, tool

POINTS = ("before", "effect", "after")


def _point(name: str, ctx: ToolContext) -> None:
    with open(os.environ["EFFECT_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{name} {ctx.key}\n")
        log.flush()
        os.fsync(log.fileno())
    if os.environ.get("EFFECT_HOLD") == name:
        while True:  # held here until the test kills the process
            time.sleep(1)


def _pay(amount: int, ctx: ToolContext) -> str:
    for name in POINTS:
        _point(name, ctx)
    return f"paid {amount}"


def effects_of(log: Path, key: str) -> int:
    """How many times the call with ``key`` did its effect, by the log."""
    if not log.exists():
        return 0
    return log.read_text(encoding="utf-8").splitlines().count(f"effect {key}")


@tool(side_effects=True)
def pay(amount: int, ctx: ToolContext) -> str:
    """Pay an amount.

    Args:
        amount: How much to pay.
    """
    return _pay(amount, ctx)


def was_paid(key: str) -> str | bool:
    """The check of :func:`pay_checked`: the effect log says whether the call paid."""
    return "paid (its check found the payment)" if effects_of(Path(os.environ["EFFECT_LOG"]), key) else False


@tool(side_effects=True, check=was_paid)
def pay_checked(amount: int, ctx: ToolContext) -> str:
    """Pay an amount (a payment that can be looked up by its key).

    Args:
        amount: How much to pay.
    """
    return _pay(amount, ctx)

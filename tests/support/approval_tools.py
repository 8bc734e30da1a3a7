"""Tools that need a person's approval, for the tests of approvals (Python API, CLI, durability).

Each run of :func:`pay` or :func:`send_mail` is noted in :data:`RUNS` (in process) and, when
``$APPROVAL_LOG`` names a file, as a line there (``pay {"amount": 5}``): a test run through the
real ``livecontext`` command counts the runs from that file.
"""

from __future__ import annotations

import json
import os
from typing import Any

from livecontext import tool
from livecontext.protocol.history import ToolCall, ToolSpec

RUNS: list[tuple[str, dict[str, Any]]] = []
"""Every run of the tools below in this process: (tool, arguments)."""


def _ran(name: str, arguments: dict[str, Any]) -> None:
    RUNS.append((name, arguments))
    path = os.environ.get("APPROVAL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{name} {json.dumps(arguments, sort_keys=True)}\n")


@tool(approval=True)
def pay(amount: int) -> str:
    """Pay an amount.

    Args:
        amount: How much to pay.
    """
    _ran("pay", {"amount": amount})
    return f"paid {amount}"


@tool
def send_mail(to: str) -> str:
    """Send a mail.

    Args:
        to: Who gets it.
    """
    _ran("send_mail", {"to": to})
    return f"mailed {to}"


@tool
def look(what: str) -> str:
    """Look at something (never needs approval).

    Args:
        what: What to look at.
    """
    _ran("look", {"what": what})
    return f"saw {what}"


def big_mails(call: ToolCall, spec: ToolSpec | None) -> bool:
    """An approval policy: a mail to ``everyone`` needs approval, other calls do not."""
    return call.name == "send_mail" and json.loads(call.arguments).get("to") == "everyone"


def runs_in(path: str) -> list[str]:
    """The runs noted in the file ``path`` (``$APPROVAL_LOG``), one line each."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as log:
        return log.read().splitlines()

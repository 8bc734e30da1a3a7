"""Audit records: what happened to each envelope."""

from __future__ import annotations

import enum
from collections.abc import Callable

from attrs import frozen

from livecontext.protocol.kernel import Envelope


class AuditEvent(enum.Enum):
    """What the runtime did with an envelope."""

    DELIVERED = "delivered"
    """Handed to the recipient's handler."""
    REPLIED = "replied"
    """A reply handed to the task waiting for it."""
    DROPPED = "dropped"
    """Not delivered, and no caller was waiting to be told (the reason says why)."""


@frozen
class AuditRecord:
    """One audited fact about an envelope."""

    event: AuditEvent
    envelope: Envelope
    reason: str = ""


AuditHook = Callable[[AuditRecord], None]
"""A function the runtime calls with every audit record. It must be quick and must not block."""

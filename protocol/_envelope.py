"""The envelope: a message with its routing and audit data."""

from __future__ import annotations

import datetime as dt

from attrs import frozen

from ._ids import ActorId, Topic
from ._message import Message


@frozen
class Envelope:
    """A message in transit, stamped by the runtime (an actor never builds one itself).

    The runtime fills every field but ``payload`` from its own state when it builds one:
    ``sender`` is the id of the actor whose context sent it, so no actor can forge another's
    id; ``message_id`` and the times are taken as it is sent. Plain data: every field is an
    ordinary attrs field.
    """

    message_id: str
    """Unique, and sorts by the time it was made (see :func:`format_message_id`)."""
    sender: ActorId
    """Who sent it."""
    recipient: ActorId | Topic
    """An actor, or a topic for published messages."""
    sent_at: dt.datetime
    """UTC wall-clock time of sending."""
    sent_mono_ns: int
    """Monotonic clock of sending (orders events within one process; not wall time)."""
    payload: Message
    """The message itself."""
    correlation_id: str | None = None
    """For a reply: the ``message_id`` of the request it answers."""
    causation_id: str | None = None
    """The ``message_id`` of the message whose handling caused this one, if any."""

"""What the actor kernel moves: who sends (:class:`ActorId`), where to (:class:`Topic`), message
ids, the :class:`Message` base class, the :class:`Envelope` around each message, and the
messages the kernel itself sends (failures, restarts, error replies).
"""

from __future__ import annotations

from ._ids import (
    MAX_THREAD_ID,
    SUB_MARK,
    ActorId,
    Topic,
    format_message_id,
    message_id_template,
    message_id_time_ns,
    thread_id_problem,
)
from ._message import Message, type_source
from ._envelope import Envelope
from ._kernel import Ack, ActorEscalated, ActorRestarted, ErrorReply, KernelMessage

__all__ = [
    "Ack",
    "ActorEscalated",
    "ActorId",
    "ActorRestarted",
    "Envelope",
    "ErrorReply",
    "KernelMessage",
    "MAX_THREAD_ID",
    "Message",
    "SUB_MARK",
    "Topic",
    "format_message_id",
    "message_id_template",
    "message_id_time_ns",
    "thread_id_problem",
    "type_source",
]

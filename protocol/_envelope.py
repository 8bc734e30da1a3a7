"""The envelope: a message with its routing and audit data."""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs
from attrs import field, frozen

from ._ids import ActorId, Topic
from ._message import Message


@frozen
class Envelope:
    """A message in transit, stamped by the runtime (an actor never builds one itself).

    The runtime fills every field but ``payload`` from its own state: ``sender`` is the id of
    the actor whose context sent it, so no actor can forge another's id.
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
    _sent_ns: int | None = field(default=None, init=False, eq=False, repr=False)
    """For an envelope made by :meth:`stamped`: ``sent_at`` in UTC nanoseconds since the epoch."""
    _id_template: str | None = field(default=None, init=False, eq=False, repr=False)
    """For an envelope made by :meth:`stamped`: the %-format of its ``message_id``."""
    _counter: int = field(default=0, init=False, eq=False, repr=False)
    """For an envelope made by :meth:`stamped`: its sender runtime's message counter."""

    @classmethod
    def stamped(cls, id_template: str, counter: int, sender: ActorId, recipient: ActorId | Topic,
                sent_ns: int, sent_mono_ns: int, payload: Message, correlation_id: str | None = None,
                causation_id: str | None = None) -> Envelope:
        """The envelope ``Envelope(id_template % (sent_ns, counter & 0xFFFFFFFF), sender,
        recipient, <sent_ns as a UTC datetime>, ...)``, its ``message_id`` and ``sent_at`` made
        when first read (``id_template``: see :func:`message_id_template`).

        The runtime stamps every message it sends; most are never asked when they were sent
        (only an audit hook or a handler that records the time looks), nor what their id is
        (an ask answered at once needs no id to find its asker, and only a message sent while
        handling this one names it as its cause). Making the datetime was a tenth of the cost
        of sending one, and formatting the id as much again. No reader can tell:
        ``message_id`` and ``sent_at`` (through :meth:`__getattr__`), ``==``, ``hash``,
        ``repr``, pickling and the converter all see the same values as for an envelope made
        with both.
        """
        env = _new_object(cls)
        (_, set_sender, set_recipient, _, set_mono, set_payload, set_correlation, set_causation,
         set_sent_ns, set_id_template, set_counter) = _SLOT_SETTERS
        set_sender(env, sender)
        set_recipient(env, recipient)
        set_mono(env, sent_mono_ns)
        set_payload(env, payload)
        set_correlation(env, correlation_id)
        set_causation(env, causation_id)
        set_sent_ns(env, sent_ns)
        set_id_template(env, id_template)
        set_counter(env, counter)
        return env

    def __getattr__(self, name: str) -> Any:
        # called only when the normal lookup fails: for ``message_id`` or ``sent_at`` of an
        # envelope made by stamped(), whose slot is filled here
        sent_ns = self._sent_ns
        if sent_ns is not None:
            if name == "message_id":
                message_id = self._id_template % (sent_ns, self._counter & 0xFFFFFFFF)  # type: ignore[operator]
                object.__setattr__(self, "message_id", message_id)
                return message_id
            if name == "sent_at":
                sent_at = _from_timestamp(sent_ns / 1e9, _UTC)
                object.__setattr__(self, "sent_at", sent_at)
                return sent_at
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


_new_object = object.__new__
_from_timestamp, _UTC = dt.datetime.fromtimestamp, dt.timezone.utc
_SLOT_SETTERS = tuple(getattr(Envelope, a.name).__set__ for a in attrs.fields(Envelope))

"""Identifiers: who sends (:class:`ActorId`), where to (:class:`Topic`), and message ids."""

from __future__ import annotations

import re

from attrs import frozen

_KIND = re.compile(r"^[A-Za-z0-9_.:@+-]+$")
_NAME = re.compile(r"^[A-Za-z0-9_.:@+-]+(?:/[A-Za-z0-9_.:@+-]+)*$")
"""A name may hold '/' between parts (a sub-agent's thread id, ``main/sub/s1``); a kind may not,
so ``kind/name`` still parses back at its first '/'."""


def _check_kind(value: str) -> None:
    if not isinstance(value, str) or not _KIND.match(value):
        raise ValueError(
            f"invalid ActorId kind {value!r}: use letters, digits and _ . : @ + - "
            "(no '/', no spaces, not empty)"
        )


def _check_name(value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(
            f"invalid ActorId name {value!r}: use letters, digits and _ . : @ + -, and '/' "
            "between parts only (no spaces, not empty)"
        )


MAX_THREAD_ID = 200
"""The longest thread id, in characters, that a store holds."""
SUB_MARK = "/sub/"
"""What joins a sub-agent's name to its parent's thread id: ``PARENT/sub/NAME``."""
_PART = "[A-Za-z0-9_.:@+-]"
_AGENT_THREAD_ID = re.compile(
    # (``sub`` may be neither the namespace nor the name after it: ``A/sub/B`` is sub-agent B
    # of A, and ``A/sub``'s sub-agents would start with ``A/sub/`` as A's do)
    rf"(?:(?!sub/){_PART}{{1,64}}/(?!sub(?:/|$)))?{_PART}{{1,128}}(?:/sub/{_PART}{{1,64}})*")


def thread_id_problem(thread_id: object, *, agent: bool = False) -> str | None:
    """What is wrong with ``thread_id`` as a thread id, said for an error message that tells
    what to do (``None``: nothing is). Each layer raises its own error with it.

    A thread a store holds has an id of 1 to :data:`MAX_THREAD_ID` characters of text
    without control characters. That is all a log needs, and it must never grow stricter:
    a store keeps opening every thread it could ever have been given.

    ``agent=True`` asks more, for a thread an agent runs in: its id names the agent's actors
    (``history/THREAD``, an :class:`ActorId` name, written in audit lines) and its sub-agents'
    threads (``PARENT/sub/NAME``), so it is 1-128 letters, digits and ``_ . : @ + -``,
    optionally after one namespace and a '/' (``NS/NAME``: a batch's ``BATCH/TASK_ID``; NS is
    1-64 of the same, and neither NS nor the NAME after it is ``sub``), then any number of
    ``/sub/NAME`` (NAME: 1-64 of the same). Every such id is one a store holds.
    """
    if not isinstance(thread_id, str):
        return f"expected a str, got {type(thread_id).__name__}"
    if not 1 <= len(thread_id) <= MAX_THREAD_ID:
        return f"use 1 to {MAX_THREAD_ID} characters"
    if any(ch < " " or ch == "\x7f" for ch in thread_id):
        return "control characters are not allowed"
    try:
        thread_id.encode("utf-8")
    except UnicodeEncodeError:
        return "it is not valid UTF-8"
    if agent and not _AGENT_THREAD_ID.fullmatch(thread_id):
        return ("use 1-128 letters, digits and _ . : @ + - for an agent's thread, optionally after one "
                "NAMESPACE/ of 1-64 of them (not sub/; a sub-agent's: PARENT/sub/NAME, at most "
                f"{MAX_THREAD_ID} characters in all)")
    return None


@frozen(order=True, cache_hash=True)
class ActorId:
    """The identity of an actor: a *kind* (what it is) and a *name* (which one).

    Written ``kind/name`` in logs and audits, e.g. ``engine/main`` or ``analyzer/errors``.
    The runtime stamps it on every envelope an actor sends, so it cannot be forged.
    """

    kind: str
    """What the actor is: ``engine``, ``history``, ``app``, ``recap``, ``analyzer``, ..."""
    name: str
    """Which one of its kind."""

    def __attrs_post_init__(self) -> None:
        _check_kind(self.kind)
        _check_name(self.name)

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> ActorId:
        """Parse ``kind/name`` back into an :class:`ActorId`.

        Raises:
            ValueError: if ``text`` is not of the form ``kind/name``.
        """
        kind, sep, name = text.partition("/")
        if not sep:
            raise ValueError(f"invalid ActorId {text!r}: expected 'kind/name', e.g. 'engine/main'")
        return cls(kind, name)


@frozen(order=True)
class Topic:
    """A named publish/subscribe channel, e.g. ``Topic("history.changes")``."""

    name: str
    """The topic's name."""

    def __str__(self) -> str:
        return f"#{self.name}"




def format_message_id(unix_ns: int, counter: int, node: int) -> str:
    """Build a message id that sorts by time.

    The id is ``<16 hex digits of UTC nanoseconds>-<node:4 hex><counter:8 hex>``: ids compare
    (as strings) in the order they were made by one runtime, and ``node`` (a random number
    chosen per runtime) keeps two runtimes' ids apart.
    """
    return message_id_template(node) % (unix_ns, counter & 0xFFFFFFFF)


def message_id_template(node: int) -> str:
    """The %-format of :func:`format_message_id`'s ids for ``node``, taking
    ``(unix_ns, counter)`` with ``counter`` below 2**32: a runtime makes it once, and
    formats every id with it (faster than an f-string, or than formatting the node each time).
    """
    return "%%016x-%04x%%08x" % (node & 0xFFFF)


def message_id_time_ns(message_id: str) -> int:
    """The UTC nanoseconds encoded in a message id made by :func:`format_message_id`."""
    return int(message_id[:16], 16)

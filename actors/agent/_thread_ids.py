"""The thread ids agents run in: which ids an agent may take, and a sub-agent's id from its
parent's (and back).

Apart from the agent's wiring (``_agent``) so that what only reads ids (the CLI's ``threads``,
the usage of a thread's sub-agents) does not import the agent's actors.
"""

from __future__ import annotations

from livecontext.protocol.kernel import SUB_MARK, thread_id_problem
from livecontext.runtime import UsageError


def check_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` if an agent can run in it, else raise :class:`UsageError` saying
    what is allowed.

    The rule is :func:`~livecontext.protocol.kernel.thread_id_problem` with ``agent=True``: 1-128
    letters, digits and ``_ . : @ + -``; a sub-agent's adds ``/sub/NAME`` to its parent's
    (see :func:`sub_thread_id`), the only form with a '/'. (A store holds more: any thread
    an agent runs in is one a store holds, not the other way round.)
    """
    problem = thread_id_problem(thread_id, agent=True)
    if problem is not None:
        raise UsageError(f"invalid thread id {thread_id!r}: {problem}")
    return thread_id


def sub_thread_id(parent: str, name: str) -> str:
    """The thread id of sub-agent ``name`` of thread ``parent``: ``PARENT/sub/NAME``.

    Raises:
        UsageError: the result is not a usable thread id (``name`` is not 1-64 letters,
            digits and ``_ . : @ + -``, or the whole is too long).
    """
    return check_thread_id(f"{parent}{SUB_MARK}{name}")


def parent_thread_id(thread_id: str) -> str | None:
    """The thread that spawned sub-agent thread ``thread_id`` (``None`` for a top-level thread)."""
    parent, mark, _ = thread_id.rpartition(SUB_MARK)
    return parent if mark else None

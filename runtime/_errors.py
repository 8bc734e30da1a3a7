"""The runtime's error classes, split by who is at fault.

:class:`LivecontextError` is the base of every error raised on purpose by livecontext's
runtime and actors. Below it: :class:`UsageError` (the caller or the configuration is at
fault: fix the call, the flag or the file), :class:`ModelError` (the model or its provider is
at fault: retry later or change the model), :class:`ActorError` (an actor or the kernel:
a stopped actor, a timeout, a deadlock).
"""

from __future__ import annotations


from livecontext.protocol.wire import LivecontextError as LivecontextError  # (defined in the lowest layer)


class UsageError(LivecontextError):
    """The caller, a flag, a file or a configuration value is wrong; the message says which."""


class ModelError(LivecontextError):
    """A model call failed (after any retries); the history was not changed."""


class ActorError(LivecontextError):
    """Something went wrong between actors: see the subclasses in the kernel."""


def error_leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc``, exception groups opened all the way down (``[exc]``
    when it is no group): trio wraps even one error of a nursery in a group."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in error_leaves(inner)]
    return [exc]

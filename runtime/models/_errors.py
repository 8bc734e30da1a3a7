"""The model clients' errors, split by who is at fault and by whether a retry can help.

Below :class:`~livecontext.runtime.ModelError` (the model or its provider is at fault):

- :class:`TransientModelError`: one attempt failed in a way a later attempt may not
  (rate limit, server error, timeout). :class:`RetryingModel` retries these.
- :class:`ModelCallFailed`: every attempt failed with a transient error; nothing more to try.
- :class:`ModelRequestRejected`: the server refused the request (a 4xx other than 429);
  sending it again would be refused again.
- :class:`IncompatibleServerError`: the server answered with something that is not an
  OpenAI-compatible chat-completion stream.
- :class:`ScriptExhaustedError`: a scripted model was asked for a turn its script lacks.

Below :class:`~livecontext.runtime.UsageError` (the caller, a flag or a file is at fault):

- :class:`ScriptError`: a scripted model's script cannot be read or has the wrong shape.
- :class:`UnusedTurnsError`: a test ended while its script still had turns nobody asked for.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from .. import ModelError, UsageError


class FailureKind(enum.Enum):
    """Why one attempt of a model call failed in a way worth retrying."""

    RATE_LIMIT = "rate_limit"
    """The provider said "too many requests" (HTTP 429)."""
    SERVER = "server"
    """The provider failed (5xx), the connection failed, or the stream was cut mid-way."""
    TIMEOUT = "timeout"
    """No answer (or no next piece of the stream) in time."""


class TransientModelError(ModelError):
    """One attempt failed, but another attempt may succeed.

    Raised by a single :meth:`ModelClient.complete` attempt; :class:`RetryingModel` catches it
    and tries again, and raises :class:`ModelCallFailed` when it runs out of attempts. Contrast
    with :class:`ModelRequestRejected`, which no retry can fix.
    """

    def __init__(self, kind: FailureKind, detail: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        """Which kind of failure this was."""
        self.detail = detail
        """What happened, in the provider's words where there are some."""
        self.retry_after_s = retry_after_s
        """How long the provider asked us to wait before the next attempt, if it said."""


class ModelCallFailed(ModelError):
    """Every attempt of a model call failed with a transient error.

    The history was not changed: the same step can be tried again later.
    """

    def __init__(self, attempts: int, last_error: TransientModelError) -> None:
        plural = "attempt" if attempts == 1 else "attempts"
        super().__init__(
            f"model call failed after {attempts} {plural}: {last_error}; "
            "the history was not changed, try again later"
        )
        self.attempts = attempts
        """How many attempts were made."""
        self.last_error = last_error
        """The error of the last attempt."""


class ModelRequestRejected(ModelError):
    """The model server refused the request (an HTTP 4xx other than 429).

    Retrying the same request would be refused again: fix what the message names.
    """

    def __init__(self, status: int, message: str, hint: str) -> None:
        super().__init__(f"the model server refused the request with HTTP {status}: {message}; {hint}")
        self.status = status
        """The HTTP status code."""
        self.server_message = message
        """The error message the server sent."""


class IncompatibleServerError(ModelError):
    """The server answered with something that is not an OpenAI-compatible chat stream."""

    def __init__(self, base_url: str, what: str) -> None:
        super().__init__(
            f"the server at {base_url} returned something not OpenAI-compatible: {what}; "
            "check that the base URL points to an OpenAI-compatible /v1 endpoint"
        )
        self.base_url = base_url
        """The base URL the request was sent to."""


class ScriptExhaustedError(ModelError):
    """A scripted model was asked for a turn past the end of its script.

    Not transient: asking again gives the same answer. Either the script is too short, or the
    thread used its turns in an earlier run (a resumed thread asks for its next turn): the
    message says which.
    """

    def __init__(self, call_index: int, turn_count: int, source: str, *, thread_id: str = "",
                 used_before: bool = False) -> None:
        if turn_count == 0:
            turns = "no turns"
        elif turn_count == 1:
            turns = "1 turn (0)"
        else:
            turns = f"{turn_count} turns (0-{turn_count - 1})"
        last_used = min(call_index, turn_count) - 1
        if used_before and last_used >= 0:
            thread = f"thread {thread_id}" if thread_id else "the thread"
            advice = (f", and {thread} used turns 0-{last_used} before this run (a resumed thread goes on "
                      "from its next turn); start a new thread (--thread NAME) or add turns to the script")
        else:
            advice = "; add turns to the script (the agent made more model calls than it has turns)"
        super().__init__(f"scripted model has no turn {call_index}: the script {source} has {turns}{advice}")
        self.call_index = call_index
        """The turn that was asked for."""
        self.turn_count = turn_count
        """How many turns the script has."""
        self.source = source
        """The script's file, or the name given to an in-code script."""
        self.used_before = used_before
        """The turns before ``call_index`` were answered before this model was made (by an
        earlier run of a resumed thread)."""


class ScriptError(UsageError):
    """A scripted model's script is missing, is not JSON, or does not have the script's shape."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        super().__init__(f"invalid model script {source}: {'; '.join(problems)}")
        self.source = source
        """The script's file, or the name given to an in-code script."""
        self.problems = tuple(problems)
        """What is wrong, one line each."""


class UnusedTurnsError(UsageError):
    """A scripted model still has turns nobody asked for (raised by ``check_all_used``).

    A test that scripted more turns than the agent used is usually a test whose agent stopped
    early: this makes that visible instead of passing silently.
    """

    def __init__(self, source: str, unused: Sequence[int]) -> None:
        listed = ", ".join(str(i) for i in unused)
        plural = "turn" if len(unused) == 1 else "turns"
        super().__init__(
            f"the script {source} has {len(unused)} unused {plural} ({listed}): the agent never "
            "asked for them; remove them or find out why it stopped early"
        )
        self.source = source
        """The script's file, or the name given to an in-code script."""
        self.unused = tuple(unused)
        """The indices of the turns never answered."""

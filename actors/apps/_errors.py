"""Errors raised by apps and their tool machinery.

All of them are :class:`~livecontext.runtime.UsageError`: the code that defines an app
or drives it is at fault. A tool call the *model* got wrong is not an exception at all: it
comes back as a FAILED :class:`~livecontext.actors.apps.ToolOutcome` the model can read.
"""

from __future__ import annotations

from livecontext.protocol.kernel import Message
from livecontext.runtime import UsageError


class AppDefinitionError(UsageError):
    """An app class cannot be used as written (e.g. its ``name`` is not a valid app name).

    Raised when the class is defined, so the mistake shows up at import time.
    """


class ToolDefinitionError(AppDefinitionError):
    """A method marked with ``@tool`` cannot be offered to a model as written.

    Raised when the app class is defined (bad name, missing docstring, ``*args``) or when its
    tools are first described (a type hint that cannot be resolved or put in a JSON schema).
    Contrast with a FAILED outcome, which is the model's mistake in one call.
    """


class UnknownEffectError(UsageError):
    """An app was asked to apply an effect that is not one of its own.

    The host routes each committed effect to the app that produced it; this error means the
    routing (or a replayed log) is wrong, and the app's state was left unchanged.
    """

    def __init__(self, app: str, effect: Message) -> None:
        self.app = app
        """The name of the app that refused the effect."""
        self.effect = effect
        """The refused effect."""
        super().__init__(
            f"app {app!r} cannot apply {type(effect).__name__} ({effect!r}): route each "
            "effect to the app that produced it"
        )


class AppStateError(UsageError):
    """A state snapshot given to :meth:`App.load_state` cannot be read; the state is unchanged."""

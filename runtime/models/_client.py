"""The interface every model client implements: one streamed completion per call."""

from __future__ import annotations

import abc
import re
from collections.abc import Callable
from types import TracebackType
from typing import Self

import trio

from livecontext.protocol.history import ModelReply, ModelRequest

TextCallback = Callable[[str], None]
"""Receives each piece of streamed text as it arrives (for display only)."""


class ModelClient(abc.ABC):
    """Something that completes a rendered context: a real model, a script, an echo.

    One :meth:`complete` call is *one attempt*: it either returns a whole reply or raises.
    Retrying transient failures is the job of :class:`RetryingModel`, so that every client
    fails the same way and the policy lives in one place.

    A client may hold connections: close it with :meth:`aclose` (or use it as an async context
    manager). :func:`open_model_client` does both for you.
    """

    name: str
    """The spec the client was made from, e.g. ``"echo"``, ``"scripted:turns.json"`` or
    ``"openai:gpt-4o-mini"``."""

    @abc.abstractmethod
    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        """Ask the model once for the next reply.

        Args:
            request: The rendered messages, the tools, and which call of the thread this is.
            on_text: Called with each piece of text as it streams in. If the attempt then
                fails, the pieces already delivered belong to no reply: they are for display.

        Returns:
            The whole reply, its stream accumulated.

        Raises:
            TransientModelError: This attempt failed; another may succeed.
            ModelError: The call failed and retrying will not help.
        """

    async def aclose(self) -> None:
        """Release what the client holds (connections). Offline clients hold nothing."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


_WORD = re.compile(r"\s*\S+\s*|\s+")


async def stream_in_pieces(text: str, on_text: TextCallback | None, pieces: int = 4, *,
                           checkpointed: bool = False) -> None:
    """Deliver ``text`` to ``on_text`` in up to ``pieces`` word-aligned deltas, as a real
    model's stream would, with a checkpoint between them (so a cancel can land mid-stream).

    With nobody listening there is nothing to pace: the call is one checkpoint, so that a
    model call is a cancel point and lets other tasks run even when it takes no time. Pass
    ``checkpointed`` if the model passed a checkpoint in this call already (a scripted delay
    slept): then it is a cancel point only, as a second trip through Trio's scheduler would
    be one for nothing.
    """
    if on_text is None:  # nobody listens: nothing to pace
        if checkpointed:
            await trio.lowlevel.checkpoint_if_cancelled()
        else:
            await trio.lowlevel.checkpoint()
        return
    words = _WORD.findall(text)
    if not words:
        await trio.lowlevel.checkpoint()
    size = max(1, -(-len(words) // pieces))  # ceiling division
    for start in range(0, len(words), size):
        await trio.lowlevel.checkpoint()
        if on_text is not None:
            on_text("".join(words[start : start + size]))

"""Input sources: actors that buffer input for the engine to pull."""

from __future__ import annotations

import collections
from collections.abc import Iterable

from livecontext.protocol import ActorId, InputAvailable, InputText, ProvideInput, PullInput
from livecontext.runtime import Actor, ActorStoppedError, MailboxFullError, handler


class InputSource(Actor):
    """Buffers lines of input; the engine pulls one per ``PullInput`` when it waits for input.

    Input arriving is told to ``notify`` (the engine) as :class:`InputAvailable`, so an engine
    that found nothing wakes up. Pushing and pulling are decoupled (seed note 002).

    Pass the same ``buffer`` (holding the start-up inputs) to every instance its factory makes,
    so that a restart keeps the input not pulled yet and brings back no line already pulled;
    ``lines`` are added to the buffer by each instance made. Each input keeps the retention
    class it was given with (:attr:`ProvideInput.retention`) until the engine records it.
    """

    def __init__(self, lines: Iterable[str] = (), notify: ActorId | None = None, *,
                 buffer: collections.deque[ProvideInput] | None = None) -> None:
        self.buffer: collections.deque[ProvideInput] = buffer if buffer is not None else collections.deque()
        self.buffer.extend(ProvideInput(line) for line in lines)
        self.notify = notify

    @handler(inline=True)
    def on_provide(self, msg: ProvideInput) -> None:
        # no await here: told to an idle source, this runs in the sender's task, and so does
        # the engine's InputAvailable handler (no task switch for either)
        self.buffer.append(msg)
        if self.notify is None:
            return
        try:
            self.ctx.tell_nowait(self.notify, InputAvailable())
        except MailboxFullError:
            # the engine is busy: tell it later rather than lose the wake-up, which it relies
            # on to pull again after it found the buffer empty
            self.ctx.nursery.start_soon(self._notify)
        except ActorStoppedError:  # the input stays buffered for the engine's next start
            pass

    async def _notify(self) -> None:
        assert self.notify is not None
        try:
            await self.ctx.tell(self.notify, InputAvailable())
        except ActorStoppedError:
            pass

    @handler(inline=True)
    def on_pull(self, msg: PullInput) -> InputText:
        if not self.buffer:
            return InputText(None, 0)
        given = self.buffer.popleft()
        return InputText(given.text, len(self.buffer), given.retention, given.key)

"""A scripted model that reports usage, as a provider would (the offline models report none)."""

from __future__ import annotations

import attrs

from livecontext.protocol.history import ModelReply, ModelRequest, Usage
from livecontext.runtime.models import ModelClient, ScriptedModel, TextCallback


class Metered(ModelClient):
    """A scripted model that reports ``usage`` for every call, as a provider would."""

    def __init__(self, turns: list[dict[str, object]], usage: Usage) -> None:
        self.inner = ScriptedModel.from_turns(turns)
        self.name = "metered"
        self.usage = usage

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        reply = await self.inner.complete(request, on_text)
        return attrs.evolve(reply, usage=self.usage)

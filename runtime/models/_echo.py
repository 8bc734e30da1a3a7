"""A model that repeats what it was last told: offline, instant, for trying the runtime out."""

from __future__ import annotations

from livecontext.protocol.history import ModelReply, ModelRequest, Role

from ._client import ModelClient, TextCallback, stream_in_pieces


class EchoModel(ModelClient):
    """Answers ``"echo: <text>"`` with the content of the last user or tool message (the
    apps' windows left out).

    It never calls tools, needs no network and no file, and streams its answer in a few
    pieces through ``on_text`` like a real model would.
    """

    def __init__(self) -> None:
        self.name = "echo"

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        """Echo the last user or tool message (``"echo: (nothing to echo)"`` if there is none)."""
        # echo the input, not the apps' windows: a message of their own last (the stable
        # policy), or after the latest observation's text (fill)
        said = next(
            (m.content for m in reversed(request.messages)
             if m.role in (Role.USER, Role.TOOL) and not m.content.startswith("[Window: ")),
            "(nothing to echo)",
        )
        said = said.split("\n\n[Window: ", 1)[0]
        text = f"echo: {said}"
        await stream_in_pieces(text, on_text)
        return ModelReply(text=text, model="echo")

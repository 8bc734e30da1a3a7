"""A base for test apps that keep no state: their tools are what a test is about."""

from __future__ import annotations

from livecontext.actors.apps import App
from livecontext.protocol import Message


class StatelessApp(App):
    """An app with no state: an empty window, no effects of its own, an empty snapshot."""

    def view(self) -> str:
        return ""

    def apply(self, effect: Message) -> None:
        super().apply(effect)

    def state_text(self) -> str:
        return "{}"

    def load_state(self, text: str) -> None:
        pass

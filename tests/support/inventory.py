"""An app whose constructor requires an argument, importable by name
(``tests.support.inventory:Inventory``), as a user's own module would be."""

from __future__ import annotations

import json

from attrs import frozen

from livecontext.actors.apps import App, ToolOutcome, tool
from livecontext.protocol.kernel import Message


@frozen
class Stocked(Message):
    """An item was put on the shelves."""

    item: str


class Inventory(App):
    """The items of one warehouse; the warehouse is the constructor's (required) argument."""

    name = "inventory"
    effects = (Stocked,)

    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse
        self.items: list[str] = []

    def view(self) -> str:
        return f"warehouse {self.warehouse}: {', '.join(self.items) or 'empty'}"

    def apply(self, effect: Message) -> None:
        if isinstance(effect, Stocked):
            self.items.append(effect.item)
        else:
            super().apply(effect)

    def state_text(self) -> str:
        return json.dumps({"items": self.items})

    def load_state(self, text: str) -> None:
        self.items = json.loads(text)["items"]

    @tool
    def stock(self, item: str) -> ToolOutcome:
        """Put an item on the shelves.

        Args:
            item: What to stock.
        """
        return ToolOutcome.ok(f"stocked {item}", effect=Stocked(item))

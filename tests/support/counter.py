"""Custom apps for tests, importable by name (``tests.support.counter:Counter``), as a user's
own module would be: a counter that saves snapshots, and a tally that saves none."""

from __future__ import annotations

import json

from attrs import frozen

from livecontext.actors.apps import App, AppStateError, ToolFailure, ToolOutcome, tool
from livecontext.protocol.kernel import Message


@frozen
class CounterAdded(Message):
    """The counter went up (or down) by ``amount``."""

    amount: int


@frozen
class CounterReset(Message):
    """The counter went back to zero."""


class Counter(App):
    """A total changed by ``add`` and ``reset``; it saves its state every ``snapshot_every``
    effects."""

    name = "counter"
    effects = (CounterAdded, CounterReset)

    def __init__(self, snapshot_every: int = 20) -> None:
        self.total = 0
        self.snapshot_every = snapshot_every
        self.loaded: list[str] = []
        """The states this instance loaded (to see that a restart used one)."""

    def fresh(self) -> Counter:
        return type(self)(self.snapshot_every)

    def view(self) -> str:
        return f"total: {self.total}"

    def apply(self, effect: Message) -> None:
        if isinstance(effect, CounterAdded):
            self.total += effect.amount
        elif isinstance(effect, CounterReset):
            self.total = 0
        else:
            super().apply(effect)

    def state_text(self) -> str:
        return json.dumps({"version": 1, "total": self.total})

    def load_state(self, text: str) -> None:
        data = json.loads(text)
        if data.get("version") != 1 or not isinstance(data.get("total"), int):
            raise AppStateError(f"counter state {text!r} is not version 1 with an integer total")
        self.total = data["total"]
        self.loaded.append(text)

    @tool(idempotent=True)
    def add(self, amount: int) -> ToolOutcome:
        """Add to the total.

        Args:
            amount: How much to add (negative to take away).
        """
        return ToolOutcome.ok(f"total {self.total} -> {self.total + amount}", effect=CounterAdded(amount))

    @tool(idempotent=True)
    def reset(self) -> ToolOutcome:
        """Set the total back to zero."""
        return ToolOutcome.ok(f"total {self.total} -> 0", effect=CounterReset())


class CounterV2(Counter):
    """The counter of a later release: it reads only states of its own version 2, so every
    state saved by :class:`Counter` fails to load (its effects are the same)."""

    def load_state(self, text: str) -> None:
        raise AppStateError(f"counter state {text!r} is not version 2: this release reads version 2 only")


@frozen
class TallyMarked(Message):
    """A mark added to the tally."""

    mark: str


class Tally(App):
    """Marks in order; it saves no snapshots, so every effect is replayed."""

    name = "tally"
    effects = (TallyMarked,)

    def __init__(self) -> None:
        self.marks: list[str] = []

    def view(self) -> str:
        return " ".join(self.marks) or "(no marks)"

    def apply(self, effect: Message) -> None:
        if isinstance(effect, TallyMarked):
            self.marks.append(effect.mark)
        else:
            super().apply(effect)

    @tool(idempotent=True)
    def mark(self, mark: str) -> ToolOutcome:
        """Add a mark.

        Args:
            mark: The mark.
        """
        if not mark:
            raise ToolFailure("mark is empty: give a mark")
        return ToolOutcome.ok(f"marked {mark}", effect=TallyMarked(mark))

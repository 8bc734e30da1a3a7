"""The apps of examples/explore/desk.toml: a desk where agents leave questions for the oracle.

Every agent of a system gets its own :class:`Desk` app, but they all share one desk (per
running system): ``leave_question`` puts a question on it, ``take_question`` (the oracle's)
takes the next one off.

The planted bug: the desk keeps ONE slot, so a question left while another still waits there
overwrites it. Run alone, each agent's script is right; only when alice's and bob's asks cross
(both leave their question before the oracle takes the first) is a question lost, and only
some interleavings do that. ``livecontext explore examples/explore/desk.toml --check
checks:every_question_answered`` finds one; desk-fixed.toml (``queue = true``, a queue of
questions) passes every seed.
"""

from __future__ import annotations

import collections
import weakref
from typing import Any

import livecontext

_DESKS: weakref.WeakKeyDictionary[Any, collections.deque[str]] = weakref.WeakKeyDictionary()
"""The one desk of each running system, by the runtime it runs in (a new run, a new desk)."""


class Desk(livecontext.App):
    """``leave_question(question)`` and ``take_question()`` on the desk the system shares."""

    name = "desk"

    def __init__(self, queue: bool = False) -> None:
        self.queue = queue
        """``True``: the desk queues the questions (correct); ``False``: one slot (the bug)."""
        self.ctx: Any = None

    def fresh(self) -> Desk:
        return Desk(self.queue)

    def bind(self, ctx: Any) -> None:
        self.ctx = ctx

    def view(self) -> str:
        return "Leave questions for the oracle on the desk; the oracle takes them off."

    def _desk(self) -> collections.deque[str]:
        return _DESKS.setdefault(self.ctx.runtime, collections.deque())

    @livecontext.tool
    async def leave_question(self, question: str) -> str:
        """Leave a question on the desk for the oracle.

        Args:
            question: The question, signed with your name.
        """
        desk = self._desk()
        if not self.queue:
            desk.clear()  # the bug: one slot, overwritten by the next question
        desk.append(question)
        return "left on the desk"

    @livecontext.tool
    async def count_questions(self) -> str:
        """Say how many questions wait on the desk."""
        return f"{len(self._desk())} question(s) wait on the desk"

    @livecontext.tool
    async def take_question(self) -> str:
        """Take the next question off the desk."""
        desk = self._desk()
        return desk.popleft() if desk else "(the desk is empty)"

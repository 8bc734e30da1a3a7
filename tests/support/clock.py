"""The virtual clock the tests that cut slow work run under."""

from __future__ import annotations

import trio
import trio.testing

PROMPT_S = 0.5
"""What the dispatch modes promise of a cut: at once, within half a second, on the virtual clock."""


def virtual_seconds() -> float:
    """The time on the test's :class:`trio.testing.MockClock` (the ``autojump_clock`` fixture):
    it moves only when every task waits, by the next deadline, and never with the machine's
    load. So a bound on it says which deadline was reached (the cut at once, or the slow
    thing's hour), not how fast the machine ran: no wall-clock bound."""
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock) and clock.rate == 0, "run this test under autojump_clock"
    return trio.current_time()

"""The room kept for the line saying what a render left out: planned before the older units are
placed, so the line never costs a unit that fit (``_render``'s ``_note_reserve``)."""

from __future__ import annotations

from livecontext.actors.history._render import omission_note
from livecontext.actors.history._units import unit_messages
from livecontext.protocol.history import HistoryEntry, Level
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS as OVERHEAD
from tests.support.agent_harness import counter
from tests.actors.history.test_render_units import do_render, inp, out, results


def test_small_older_units_keep_their_place_at_every_budget_until_a_big_one_fits_with_the_line() -> None:
    calls = [f"c{k}" for k in range(20)]
    history: list[HistoryEntry] = [inp(1, "older d"), inp(2, "older c"), out(3, calls), results(4, calls),
                                   inp(5, "newer a"), inp(6, "now")]
    latest = do_render(history[-1:]).tokens
    newer = unit_messages(history[4:5], Level.RECENT)[1]
    wide_gist = unit_messages(history[2:4], Level.GIST)[1]
    # from here the wide unit fits at its gist, but the two older ones not beside it: a line names them
    with_wide = latest + newer + wide_gist + counter().count(omission_note([("e1", "e2")], 2, 0)) + OVERHEAD
    line = "[2 earlier entries left out for want of budget: e3–e4]"
    for budget in range(latest + newer + wide_gist + 1, with_wide):
        shown = [m.content for m in do_render(history, budget).messages]
        assert shown == ["older d", "older c", line, "newer a", "now"], budget
    shown = [m.content for m in do_render(history, with_wide).messages]
    assert shown[0] == "[2 earlier entries left out for want of budget: e1–e2]" and shown[-2:] == ["newer a", "now"]

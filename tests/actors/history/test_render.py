"""Rendering a history under a token budget (DESIGN.md, "Rendering")."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, overload

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livecontext.actors.history import BudgetTooSmallError, ContextPolicy, RenderCache, RenderResult, render
from livecontext.actors.apps import describe_tools
from livecontext.actors.engine import CONTROL_TOOLS
from livecontext.actors.history._lod import input_content, output_content, tools_tokens
from livecontext.actors.history._render import MAX_MISFITS, RECAP_PREFIX, RECAP_PREFIX_TOKENS, omission_note
from livecontext.actors.history._units import (
    JOIN_TOKENS,
    STATUS_PREFIX_TOKENS,
    UnitLevels,
    answers,
    differs,
    unit_messages,
)
from livecontext.protocol.agent import RenderedSpan
from livecontext.protocol.history import (
    ChatMessage,
    Content,
    HistoryEntry,
    Level,
    ModelInputEntry,
    ModelOutputEntry,
    RecapEntry,
    Retention,
    Role,
    Shown,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.kernel import ActorId
from livecontext.runtime.testing import actor_instance
from livecontext.runtime.tokens import BUNDLED_ENCODINGS, MESSAGE_OVERHEAD_TOKENS, TokenCounter
from tests.support.agent_harness import ProbeApp, counter, open_agent

T0 = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
AUTHOR = ActorId("engine", "t")
WINDOW = "[Window: probe]\nWINDOW-MARK"
"""No random text can contain it (the random alphabet has no capitals)."""
SYSTEM = "You are a test agent."
FILL = ContextPolicy("fill")
"""The policy these tests of the renderer go through the history store with (the windows in
the latest observation); the ``stable`` policy's are in test_render_stable.py."""


# -- building entries -------------------------------------------------------------------------


def levels(live: str, recent: str, gist: str) -> Content:
    return counter().content(live, recent, gist)


def inp(n: int, text: str | None = None) -> ModelInputEntry:
    # LIVE costs more than RECENT, which costs more than GIST
    detail = " with its detail" * 8
    content = (levels(f"live {n}{detail} and more", f"recent {n}{detail}", f"gist {n}") if text is None
               else levels(text, text, text[:20]))
    return ModelInputEntry(id=f"e{n}", revision=1, author=AUTHOR, created_at=T0,
                           retention=Retention.COMPRESSIBLE, content=content, text=content.live.text)


def out(n: int, text: str | None = None, calls: int = 0, args: str = '{"label": "x"}') -> ModelOutputEntry:
    tool_calls = tuple(ToolCall(f"c{n}_{k}", "record", args) for k in range(calls))
    content = output_content(f"answer {n}" if text is None else text, tool_calls, counter())
    return ModelOutputEntry(id=f"e{n}", revision=1, author=AUTHOR, created_at=T0,
                            retention=Retention.COMPRESSIBLE, content=content, tool_calls=tool_calls)


def results(n: int, output: ModelOutputEntry, text: str | None = None,
            status: ToolStatus = ToolStatus.OK) -> ToolResultsEntry:
    made = tuple(
        ToolResult(c.id, c.name, status,
                   levels(f"result live {n}", f"result recent {n}", f"result gist {n}") if text is None
                   else levels(text, text[: len(text) // 2], text[:10]))
        for c in output.tool_calls)
    return ToolResultsEntry(id=f"e{n}", revision=1, author=AUTHOR, created_at=T0,
                            retention=Retention.COMPRESSIBLE, content=levels("", "", ""), results=made)


def recap(n: int, text: str) -> RecapEntry:
    return RecapEntry(id=f"e{n}", revision=1, author=AUTHOR, created_at=T0,
                      retention=Retention.CRITICAL, content=levels(text, text, text[:30]))


def do_render(active: Sequence[HistoryEntry], budget: int, *, windows: str = WINDOW,
              system: str = SYSTEM, recaps: Sequence[RecapEntry] = (), pinned: Sequence[int] = ()) -> RenderResult:
    c = counter()
    return render(active, recaps, budget, system_prompt=system, system_tokens=c.count(system),
                  windows=windows, windows_tokens=c.count(windows) if windows else 0, count=c.count,
                  pinned=pinned)


# -- checking what was rendered ---------------------------------------------------------------


def recount(messages: Sequence[ChatMessage]) -> int:
    """The tokens of the messages as sent, counted afresh (tool calls as the history counts them)."""
    c = counter()
    total = 0
    for m in messages:
        total += c.count(m.content) + MESSAGE_OVERHEAD_TOKENS
        total += sum(c.count(call.name) + c.count(call.arguments) + 3 for call in m.tool_calls)
    return total


def assert_no_orphans(messages: Sequence[ChatMessage]) -> None:
    """Every assistant tool call is answered right after it, and every tool message answers one."""
    i = 0
    while i < len(messages):
        m = messages[i]
        assert m.role is not Role.TOOL, f"orphan tool message at {i}: {m}"
        if m.role is Role.ASSISTANT and m.tool_calls:
            answers = messages[i + 1 : i + 1 + len(m.tool_calls)]
            assert [a.role for a in answers] == [Role.TOOL] * len(m.tool_calls), f"call without result at {i}"
            assert [a.tool_call_id for a in answers] == [c.id for c in m.tool_calls]
            i += len(m.tool_calls)
        i += 1


def assert_window_only_in_latest_observation(messages: Sequence[ChatMessage], latest: HistoryEntry) -> None:
    holders = [i for i, m in enumerate(messages) if "WINDOW-MARK" in m.content]
    if isinstance(latest, ModelOutputEntry):
        assert holders == []
    elif holders:
        assert holders == [len(messages) - 1]
        assert messages[-1].role is Role.USER
    # (a budget too tight even for the latest observation's gist drops the window)


# -- examples ---------------------------------------------------------------------------------


def conversation(turns: int) -> list[HistoryEntry]:
    """``turns`` x (input, output with a call, its results, answer), then a last input."""
    entries: list[HistoryEntry] = []
    n = 0
    for _ in range(turns):
        o = out(n + 1, calls=1)
        entries += [inp(n), o, results(n + 2, o), out(n + 3)]
        n += 4
    entries.append(inp(n))
    return entries


def level_of(message: ChatMessage) -> str:
    text = message.content.removeprefix("[ok] ")
    for level in ("live", "recent", "gist"):
        if text.startswith((f"{level} ", f"result {level} ")):
            return level
    return "-"


async def test_the_latest_observation_is_live_then_older_entries_recent_then_gist_then_a_line_for_the_rest() -> None:
    history = [e for n in range(0, 40, 2) for e in (inp(n), out(n + 1, text=f"gist {n + 1}"))]
    history.append(inp(40))
    full = do_render(history, 100_000)
    assert len(full.messages) == 42  # the system prompt and every entry
    # room for everything in full: every input at LIVE (an answer is the same at every level)
    assert [s.shown for s in full.spans] == [Shown.LIVE, Shown.RECENT] * 20 + [Shown.LIVE]
    zones_seen = set()
    for budget in range(full.tokens // 4, full.tokens, 13):
        tight = do_render(history, budget)
        inputs = [m for m in tight.messages if m.role is Role.USER]
        seen = [level_of(m) for m in reversed(inputs)]
        assert seen[0] == "live"
        ranks = ["live", "recent", "gist"]
        assert seen == sorted(seen, key=ranks.index)  # newest first: live, recent, then gist
        zones_seen.add(tuple(dict.fromkeys(seen)))
        assert tight.messages[0] == ChatMessage(Role.SYSTEM, SYSTEM)
        assert recount(tight.messages) <= tight.tokens <= budget
        # what is not shown is named, in one line, where it was: at the oldest end
        notes = [m for m in tight.messages if "left out for want of budget" in m.content]
        omitted = tight.spans[0]
        if omitted.shown is not Shown.OMITTED:  # every entry shown, some as gists
            assert notes == [] and tight.entries == 41
            continue
        zones_seen.add("omitted")
        assert len(notes) == 1 and tight.messages[1] is notes[0] and notes[0].role is Role.SYSTEM
        assert omitted.first == "e0"
        assert notes[0].content == omission_note([("e0", omitted.last)], _number(omitted.last) + 1, 0)
        assert tight.entries == 41 - _number(omitted.last) - 1
        # the budget is filled: not even the next older entry's gist would fit
        assert budget - tight.tokens < counter().count(f"gist {omitted.last}") + MESSAGE_OVERHEAD_TOKENS + 12
    assert {("live", "recent", "gist"), ("live", "recent"), "omitted"} <= zones_seen


def _number(entry_id: str) -> int:
    return int(entry_id[1:])


async def test_rendering_goes_on_past_a_unit_too_big_even_as_a_gist_and_names_it() -> None:
    wide = out(11, text="", calls=30)  # thirty results: a gist of thirty lines
    history: list[HistoryEntry] = [inp(n, f"old input {n}") for n in range(10)]
    history += [wide, results(12, wide), inp(13, "the latest")]
    c = counter()
    latest = do_render(history[-1:], 100_000).tokens
    wide_gist = unit_messages(history[10:12], Level.GIST)[1]
    budget = latest + wide_gist - 1  # with the line saying what is left out, not even the wide unit's gist fits
    result = do_render(history, budget)
    assert [s.shown for s in result.spans] == [Shown.GIST, Shown.OMITTED, Shown.LIVE]
    assert result.spans[1] == RenderedSpan("e11", "e12", Shown.OMITTED)
    assert [m.content for m in result.messages if m.role is Role.USER][:10] == [f"old input {n}" for n in range(10)]
    note = "[2 earlier entries left out for want of budget: e11–e12]"
    assert [m.content for m in result.messages][11:13] == [note, "the latest\n\n" + WINDOW]
    assert_no_orphans(result.messages)
    assert recount(result.messages) <= result.tokens <= budget
    assert c.count(note) < wide_gist


async def test_the_window_is_injected_into_the_latest_observation_alone() -> None:
    history = conversation(3)
    result = do_render(history, 100_000)
    assert_window_only_in_latest_observation(result.messages, history[-1])
    assert result.messages[-1].content == f"{history[-1].content.live.text}\n\n{WINDOW}"
    assert result.entries == len(history)


async def test_after_tool_results_the_window_follows_the_tool_messages() -> None:
    o = out(1, calls=2)
    history: list[HistoryEntry] = [inp(0), o, results(2, o)]
    result = do_render(history, 100_000)
    assert [m.role for m in result.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.USER]
    assert result.messages[-1].content == WINDOW
    assert result.messages[3].content == "[ok] result live 2"  # the latest results are LIVE
    assert_no_orphans(result.messages)


async def test_a_model_output_and_its_results_are_dropped_together() -> None:
    history = conversation(6)
    full = do_render(history, 100_000)
    for budget in range(60, full.tokens + 1, 7):
        try:
            result = do_render(history, budget)
        except BudgetTooSmallError:
            continue
        assert_no_orphans(result.messages)
        assert recount(result.messages) <= result.tokens <= budget


async def test_tool_results_whose_model_output_is_not_rendered_never_become_orphans() -> None:
    o = out(1, calls=1)
    # the output was folded away (not active) but its results entry was not
    history: list[HistoryEntry] = [results(2, o), out(3), inp(4)]
    result = do_render(history, 100_000)
    assert_no_orphans(result.messages)
    latest_only: list[HistoryEntry] = [inp(0), results(2, o)]
    result = do_render(latest_only, 100_000)
    assert_no_orphans(result.messages)


async def test_a_pending_model_output_is_rendered_without_its_unanswered_calls() -> None:
    history: list[HistoryEntry] = [inp(0), out(1, text="let me look", calls=2)]
    result = do_render(history, 100_000)
    assert result.messages[-1] == ChatMessage(Role.ASSISTANT, "let me look")
    assert_window_only_in_latest_observation(result.messages, history[-1])


async def test_failed_and_interrupted_results_are_counted_with_their_status() -> None:
    o = out(1, calls=3)
    history: list[HistoryEntry] = [inp(0), o, results(2, o, text="x", status=ToolStatus.INTERRUPTED)]
    result = do_render(history, 100_000)
    assert result.messages[3].content == "[interrupted] x"
    assert recount(result.messages) <= result.tokens


async def test_a_budget_too_small_for_the_latest_observation_raises_and_says_what_to_do() -> None:
    history = [inp(0, "a long observation " * 50)]
    with pytest.raises(BudgetTooSmallError, match=r"token budget 12 is too small: .* need at least \d+ tokens; raise --budget"):
        do_render(history, 12)
    with pytest.raises(BudgetTooSmallError, match="token budget 3 is too small"):
        do_render([], 3)


def _long_input(lines: int = 400) -> ModelInputEntry:
    """An input as the history store writes it: its RECENT is its head and tail lines."""
    text = "\n".join(f"line {k} of the pasted log" for k in range(lines))
    content = input_content(text, (), counter())
    return ModelInputEntry(id="e0", revision=1, author=AUTHOR, created_at=T0,
                           retention=Retention.CRITICAL, content=content, text=text)


async def test_the_latest_observation_is_cut_to_its_head_and_tail_and_drops_the_window_before_failing() -> None:
    # (this test once pinned the old fallback to the observation's one-line gist)
    history = [_long_input()]
    recent = history[0].content.recent.text
    assert "lines, " in recent and "chars elided] …" in recent
    window_heavy = WINDOW + " filler" * 300
    c = counter()
    needed = c.count(SYSTEM) + history[0].content.recent.tokens + 2 * MESSAGE_OVERHEAD_TOKENS
    result = do_render(history, needed + 5, windows=window_heavy)
    assert result.messages[-1].content == recent
    assert result.spans == (RenderedSpan("e0", "e0", Shown.RECENT),)
    assert result.tokens <= needed + 5


async def test_the_latest_observation_is_never_sent_as_its_gist_the_render_fails_naming_the_sizes() -> None:
    history = [_long_input()]
    c = counter()
    fixed = c.count(SYSTEM) + MESSAGE_OVERHEAD_TOKENS
    recent = history[0].content.recent.tokens + MESSAGE_OVERHEAD_TOKENS
    gist = history[0].content.gist.tokens + MESSAGE_OVERHEAD_TOKENS
    assert fixed + gist < fixed + recent - 1  # (the gist would fit: it is not sent)
    budget = fixed + recent - 1
    with pytest.raises(BudgetTooSmallError, match=(
            rf"^token budget {budget} is too small: the system prompt and the tools \({fixed} tokens\) and the "
            rf"latest observation cut to its head and tail \({recent}\) need at least {fixed + recent} tokens; "
            r"raise --budget$")):
        do_render(history, budget, windows="")


async def test_the_latest_observation_cut_to_recent_still_leaves_room_for_a_pinned_gist() -> None:
    task = attrs.evolve(inp(0, "the task, which says what to do in many words " * 20), retention=Retention.CRITICAL)
    latest = attrs.evolve(_long_input(), id="e2")
    history: list[HistoryEntry] = [task, out(1), latest]
    c = counter()
    budget = (c.count(SYSTEM) + latest.content.recent.tokens + task.content.gist.tokens + out(1).content.gist.tokens
              + 4 * MESSAGE_OVERHEAD_TOKENS + 40)
    result = do_render(history, budget, windows="", pinned=[0])
    assert result.spans[-1].last == "e2" and result.spans[-1].shown is Shown.RECENT
    assert result.spans[0].first == "e0" and result.spans[0].shown in (Shown.GIST, Shown.RECENT)
    assert result.messages[-1].content == latest.content.recent.text
    assert result.tokens <= budget


async def test_recaps_are_rendered_after_the_system_prompt_within_the_budget() -> None:
    history = conversation(2)
    summary = recap(100, "earlier: the user asked for a plan " * 3)
    result = do_render(history, 100_000, recaps=[summary])
    assert result.messages[1].role is Role.SYSTEM
    assert result.messages[1].content.startswith("[Recap of earlier steps]\n")
    assert recount(result.messages) <= result.tokens
    big = recap(101, "a very long recap " * 2000)
    result = do_render(history, 2_000, recaps=[big])
    assert result.messages[1].content == f"[Recap of earlier steps]\n{big.content.gist.text}"  # too big at LIVE
    assert result.tokens <= 2_000


# -- the property: any history, any budget ------------------------------------------------------

TEXT = st.text(alphabet=st.sampled_from("abcdefghij klmnop\n.,:;'\"{}[]-_0123é漢🙂 "), max_size=120)


@st.composite
def histories(draw: st.DrawFn) -> list[HistoryEntry]:
    entries: list[HistoryEntry] = []
    n = 0
    for _ in range(draw(st.integers(0, 6))):
        entries.append(inp(n, draw(TEXT) or "hi"))
        n += 1
        for _ in range(draw(st.integers(0, 2))):
            calls = draw(st.integers(1, 3))
            o = out(n, draw(TEXT), calls=calls, args=draw(TEXT))
            entries.append(o)
            status = draw(st.sampled_from(list(ToolStatus)))
            entries.append(results(n + 1, o, draw(TEXT) or "r", status))
            n += 2
        entries.append(out(n, draw(TEXT)))
        n += 1
    cut = draw(st.integers(0, len(entries)))
    return entries[:cut] if draw(st.booleans()) else entries


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), budget=st.integers(1, 1500), windows=TEXT, system=TEXT, pins=st.data())
def test_any_history_renders_within_any_budget_without_orphans(
    history: list[HistoryEntry], budget: int, windows: str, system: str, pins: st.DataObject
) -> None:
    window = f"{WINDOW}\n{windows}"
    pinned = sorted(pins.draw(st.sets(st.integers(0, len(history) - 1), max_size=3))) if history else []
    for p in pinned:
        history[p] = attrs.evolve(history[p], retention=Retention.CRITICAL)
    try:
        result = do_render(history, budget, windows=window, system=system, pinned=pinned)
    except BudgetTooSmallError as exc:
        assert exc.budget == budget and exc.needed > budget
        return
    assert recount(result.messages) <= result.tokens <= budget
    assert_no_orphans(result.messages)
    if history:
        assert_window_only_in_latest_observation(result.messages, history[-1])
        if not isinstance(history[-1], ModelOutputEntry):  # the latest observation always fits
            assert result.entries >= 1
    if system:
        assert result.messages[0] == ChatMessage(Role.SYSTEM, system)
    # every entry is accounted for, once, in order: shown at a level or left out
    assert expand(result.spans, history) == [e.id for e in history]
    assert result.entries == sum(1 for e in history if shown_as(result.spans, e.id) is not Shown.OMITTED)


def expand(spans: Sequence[RenderedSpan], history: Sequence[HistoryEntry]) -> list[str]:
    """The ids the spans cover, in order (each span covers the history's entries in its range)."""
    ids = []
    for span in spans:
        first, last = int(span.first[1:]), int(span.last[1:])
        ids += [e.id for e in history if first <= int(e.id[1:]) <= last]
    return ids


def shown_as(spans: Sequence[RenderedSpan], entry_id: str) -> Shown:
    n = int(entry_id[1:])
    return next(s.shown for s in spans if int(s.first[1:]) <= n <= int(s.last[1:]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), budgets=st.lists(st.integers(1, 1500), min_size=1, max_size=4),
       edited=st.data())
def test_a_render_cache_never_changes_what_is_rendered_even_across_edits(
    history: list[HistoryEntry], budgets: list[int], edited: st.DataObject
) -> None:
    cache = RenderCache(max_units=8)  # small: it also starts afresh along the way

    def both(entries: list[HistoryEntry], budget: int) -> None:
        def once(c: RenderCache | None) -> RenderResult | str:
            try:
                return render(entries, (), budget, system_prompt="sys", system_tokens=2,
                              windows=WINDOW, windows_tokens=5, cache=c)
            except BudgetTooSmallError as exc:
                return str(exc)
        assert once(cache) == once(None)

    for budget in budgets:
        both(history, budget)
    if history:  # a new revision of one entry, with other text: the cache must not serve the old one
        k = edited.draw(st.integers(0, len(history) - 1))
        old = history[k]
        history[k] = attrs.evolve(old, revision=old.revision + 1,
                                  content=levels("edited live", "edited recent", "edited gist"))
        for budget in budgets:
            both(history, budget)
    assert len(cache) <= 8


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), budgets=st.lists(st.integers(1, 1500), min_size=1, max_size=3),
       changes=st.lists(st.tuples(st.sampled_from(["grow", "drop", "copy", "edit"]), st.integers(0, 40)),
                        max_size=12))
def test_a_render_cache_renders_a_growing_history_as_without_it(
    history: list[HistoryEntry], budgets: list[int], changes: list[tuple[str, int]]
) -> None:
    # how a store renders: a few entries more at each model call, now and then a fold, a
    # removal or an edit among the older ones; the cache keeps the older units that all fit
    cache = RenderCache()
    shown = history[: len(history) // 2]
    for step, (change, k) in enumerate([("grow", 0), *changes]):
        if change == "grow":
            shown = history[: len(shown) + 1 + k % 3]
        elif shown and change == "drop":  # folded or removed
            shown = shown[: k % len(shown)] + shown[k % len(shown) + 1 :]
        elif shown and change == "copy":  # an equal entry, decoded anew
            shown[k % len(shown)] = attrs.evolve(shown[k % len(shown)])
        elif shown:
            old = shown[k % len(shown)]  # (a revision never seen before, as in a store)
            shown[k % len(shown)] = attrs.evolve(
                old, revision=100 + step, content=levels(f"edit {k}", f"edited {k} " * k, "e"))
        for budget in budgets:
            def once(c: RenderCache | None) -> RenderResult | str:
                try:
                    return render(shown, (), budget, system_prompt=system, system_tokens=2,
                                  windows=WINDOW, windows_tokens=5, cache=c)
                except BudgetTooSmallError as exc:
                    return str(exc)
            system = ("sys", "another sys", "")[k % 3]  # (the cache keeps the system message too)
            assert once(cache) == once(None)


def test_a_render_after_an_append_builds_only_the_unit_it_pushed_back() -> None:
    # what keeps a model step's render flat however long the history: every older unit is
    # kept at every level, so after a turn the render builds the units that turn made older
    cache = RenderCache()
    history: list[HistoryEntry] = [inp(k) if k % 2 == 0 else out(k) for k in range(401)]

    def once(c: RenderCache | None) -> RenderResult:
        return render(history, (), 2_000, system_prompt="sys", system_tokens=2, windows=WINDOW,
                      windows_tokens=5, cache=c)

    first = once(cache)
    assert 20 < first.entries < 200  # the budget is full: many units shown, most left out
    built = len(cache)
    history += [out(401), inp(402)]  # the engine's answer and the next input
    assert once(cache) == once(None)
    assert len(cache) == built + 2  # e400 (the latest before, shown with the windows) and e401


@settings(max_examples=100, deadline=None)
@given(history=histories())
def test_a_units_kept_levels_are_its_messages_at_each_level(history: list[HistoryEntry]) -> None:
    i = 0
    while i < len(history):
        unit = history[i : i + 2] if i + 1 < len(history) and answers(history[i], history[i + 1]) else history[i : i + 1]
        i += len(unit)
        kept = UnitLevels(unit)
        for level in (Level.GIST, Level.RECENT, Level.LIVE):
            msgs, tokens = unit_messages(unit, level)
            assert kept.piece(level) == (tuple(msgs), tokens)
        assert kept.shows_more(Level.RECENT) == differs(unit, Level.GIST, Level.RECENT)
        assert kept.shows_more(Level.LIVE) == differs(unit, Level.RECENT, Level.LIVE)


# -- cost ---------------------------------------------------------------------------------------


class CountingHistory(Sequence[HistoryEntry]):
    """A long history made on demand from a repeating turn; counts the entries read."""

    def __init__(self, length: int) -> None:
        o = out(1, calls=1)
        self.turn: list[HistoryEntry] = [inp(0), o, results(2, o), out(3)]
        self.length = length
        self.reads = 0

    def __len__(self) -> int:
        return self.length

    def _at(self, i: int) -> HistoryEntry:
        self.reads += 1
        # the last entry is an input, so that the history ends with an observation
        return self.turn[0] if i == self.length - 1 else self.turn[i % 4]

    @overload
    def __getitem__(self, i: int) -> HistoryEntry: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[HistoryEntry]: ...
    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._at(k) for k in range(*i.indices(self.length))]
        if i < 0:
            i += self.length
        if not 0 <= i < self.length:
            raise IndexError(i)
        return self._at(i)

    def __iter__(self) -> Any:
        raise AssertionError("render must not walk the whole history")


async def test_render_reads_only_what_it_renders_however_long_the_history() -> None:
    for length in (1_001, 100_001):
        history = CountingHistory(length)
        result = do_render(history, 2_000)
        assert result.entries < 200  # (the longer history's ids cost more in the omission line)
        assert history.reads <= 3 * result.entries + 2 * MAX_MISFITS + 10


# -- through the history store ----------------------------------------------------------------


async def test_the_history_store_renders_a_real_thread_within_budget_and_without_orphans() -> None:
    record = {"name": "record", "arguments": {"label": "a label that takes some tokens"}}
    turns = [{"text": f"step {k}", "tool_calls": [record, record]} for k in range(8)] + [{"text": "done"}]
    async with open_agent(turns, inputs=["please record things"], apps=[ProbeApp()], context=FILL) as h:
        await h.run_until_idle()
        await h.provide("and now?")
        await h.step()
        entries = await h.entries()
        full = await h.render(100_000, WINDOW)
        assert full.entries == len(entries)
        tools = tools_tokens(describe_tools(ProbeApp()) + CONTROL_TOOLS, counter())  # the app's and the engine's
        assert full.tokens - recount(full.messages) >= tools > 0  # the tools' schemas count
        for budget in (tools + 120, tools + 200, tools + 400, full.tokens):
            rendered = await h.render(budget, WINDOW)
            assert recount(rendered.messages) + tools <= rendered.tokens <= budget
            assert_no_orphans(rendered.messages)
            assert_window_only_in_latest_observation(rendered.messages, entries[-1])
            assert rendered.messages[-1].content.startswith("and now?")
            assert rendered.messages[1] == ChatMessage(Role.USER, "please record things")  # the task, pinned
        with pytest.raises(Exception, match="token budget 100 is too small"):
            await h.render(100, WINDOW)  # the tools alone cost more


async def test_the_history_store_counts_the_windows_once_while_their_text_stays_the_same() -> None:
    async with open_agent([{"text": "ok"}], inputs=["hello"]) as h:
        await h.step()
        store = actor_instance(h.agent.history)
        counted: list[str] = []
        real = store.counter

        class Spy:
            def count(self, text: str) -> int:
                counted.append(text)
                return real.count(text)

        store.counter = Spy()
        first = await h.render(8000, WINDOW)
        again = await h.render(8000, WINDOW)
        other = await h.render(8000, WINDOW + " and more")
        none = await h.render(8000, "")
        assert [t for t in counted if "left out for want of budget" not in t] == [WINDOW, WINDOW + " and more"]
        assert first == again
        assert other.tokens - first.tokens == real.count(WINDOW + " and more") - real.count(WINDOW)
        assert none.tokens < first.tokens


@pytest.mark.parametrize("text", ["", "Recording step 1.", "line one\nline two", "x" * 300])
@pytest.mark.parametrize("calls", [0, 1, 3])
def test_a_model_outputs_levels_count_their_text_plus_the_tool_calls(text: str, calls: int) -> None:
    from livecontext.actors.history._lod import gist_line
    from livecontext.protocol.history import LevelText

    c = counter()
    tool_calls = tuple(ToolCall(f"c{k}", f"tool_{k}", f'{{"k": {k}}}') for k in range(calls))
    content = output_content(text, tool_calls, c)
    extra = sum(c.count(t.name) + c.count(t.arguments) + 3 for t in tool_calls)
    gist = gist_line(text)
    assert content == Content(LevelText(text, c.count(text) + extra), LevelText(text, c.count(text) + extra),
                              LevelText(gist, c.count(gist) + extra))


# -- exact costs and the rules around pairing and recaps ---------------------------------------------


def test_a_tool_results_entry_costs_exactly_its_results_their_status_prefixes_and_overheads() -> None:
    o = out(1, calls=2)
    res = results(2, o)
    paired = unit_messages([o, res], Level.RECENT)
    result_tokens = sum(r.content.recent.tokens for r in res.results)
    assert paired[1] == o.content.recent.tokens + MESSAGE_OVERHEAD_TOKENS + result_tokens + 2 * (
        STATUS_PREFIX_TOKENS + MESSAGE_OVERHEAD_TOKENS)
    alone = unit_messages([res], Level.RECENT)  # its output not rendered: one user message
    assert [m.role for m in alone[0]] == [Role.USER]
    assert alone[0][0].content == "[ok] result recent 2\n\n[ok] result recent 2"
    assert alone[1] == result_tokens + 2 * (STATUS_PREFIX_TOKENS + JOIN_TOKENS) + MESSAGE_OVERHEAD_TOKENS


def test_a_results_entry_keeps_its_own_note_whether_paired_or_not() -> None:
    o = out(1, calls=1)
    res = attrs.evolve(results(2, o), content=levels("[Notifications]\n- hi", "[Notifications]\n- hi", "1 note"))
    paired = unit_messages([o, res], Level.RECENT)[0]
    assert paired[-1] == ChatMessage(Role.USER, "[Notifications]\n- hi")
    alone = unit_messages([res], Level.GIST)[0]
    assert alone[-1].content == "[ok] result gist 2\n\n1 note"


@pytest.mark.parametrize("case", ["no calls", "fewer results", "other ids", "not results"])
def test_only_results_answering_exactly_an_outputs_calls_pair_with_it(case: str) -> None:
    o = out(1, calls=2)
    res = results(2, o)
    assert answers(o, res)
    if case == "no calls":
        o = out(1)
    elif case == "fewer results":
        res = attrs.evolve(res, results=res.results[:1])
    elif case == "other ids":
        res = attrs.evolve(res, results=(res.results[0], attrs.evolve(res.results[1], call_id="elsewhere")))
    else:
        res = inp(2)  # type: ignore[assignment]
    assert not answers(o, res)
    rendered = do_render([inp(0), o, res, inp(3, "latest")], 100_000)
    assert [m.role for m in rendered.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER, Role.USER]
    assert rendered.messages[2].tool_calls == ()  # calls not answered are not sent


def test_several_recaps_are_sent_oldest_first_and_a_recap_that_does_not_fit_ends_the_older_ones() -> None:
    history = [inp(10, "now")]
    recaps = [recap(1, "first"), recap(2, "second " * 400), recap(3, "third " * 5)]
    roomy = do_render(history, 100_000, recaps=recaps)
    assert [m.content.split("\n")[1][:5] for m in roomy.messages if m.content.startswith(RECAP_PREFIX)] == [
        "first", "secon", "third"]
    c = counter()
    cost = {r.id: c.count(r.content.live.text) + RECAP_PREFIX_TOKENS + MESSAGE_OVERHEAD_TOKENS for r in recaps}
    gist = {r.id: c.count(r.content.gist.text) + RECAP_PREFIX_TOKENS + MESSAGE_OVERHEAD_TOKENS for r in recaps}
    latest = do_render(history, 100_000).tokens
    assert cost["e1"] < gist["e2"] - 1  # the oldest would fit where the middle one does not
    tight = do_render(history, latest + cost["e3"] + gist["e2"] - 1, recaps=recaps)
    # the newest fits at LIVE, the middle one not even at GIST: the oldest is not tried
    shown = [m.content for m in tight.messages if m.content.startswith(RECAP_PREFIX)]
    assert shown == [f"{RECAP_PREFIX}{recaps[2].content.live.text}"]
    assert tight.spans == (RenderedSpan("e1", "e2", Shown.OMITTED), RenderedSpan("e3", "e3", Shown.RECAP),
                           RenderedSpan("e10", "e10", Shown.LIVE))
    assert ChatMessage(Role.SYSTEM, "[2 recaps left out for want of budget]") in tight.messages


@pytest.mark.parametrize("encoding", BUNDLED_ENCODINGS)
def test_the_fixed_costs_are_what_every_bundled_encoding_spends_plus_one(encoding: str) -> None:
    c = TokenCounter(encoding)
    assert c.count(RECAP_PREFIX) + 1 <= RECAP_PREFIX_TOKENS
    assert max(c.count(f"[{s.value}] ") for s in ToolStatus) + 1 <= STATUS_PREFIX_TOKENS
    assert c.count("a\n\nb") - c.count("a") - c.count("b") <= JOIN_TOKENS


FOLLOWING = ["hello world", "def foo(x):\n    return x", "  indented", "漢字 text", "🙂 emoji", "x", '{"a": 1}',
             ".,;", "-- dash", "\n\nnewline first", "ok"]
"""Texts a status prefix may stand before: the prefix's cost includes its boundary with them."""


def test_the_fixed_costs_are_no_larger_than_the_costliest_encoding_needs() -> None:
    counters = [TokenCounter(e) for e in BUNDLED_ENCODINGS]
    assert max(c.count(RECAP_PREFIX) for c in counters) + 1 == RECAP_PREFIX_TOKENS
    prefix = max(c.count(f"[{s.value}] {t}") - c.count(t) for c in counters for s in ToolStatus for t in FOLLOWING)
    assert prefix + 1 == STATUS_PREFIX_TOKENS


def test_the_omission_line_names_three_runs_then_says_there_are_more() -> None:
    runs = [("e1", "e1"), ("e3", "e5"), ("e9", "e10"), ("e12", "e12")]
    assert omission_note(runs, 8, 0) == "[8 earlier entries left out for want of budget: e1, e3–e5, e9–e10, …]"
    assert omission_note(runs[:3], 6, 0) == "[6 earlier entries left out for want of budget: e1, e3–e5, e9–e10]"
    assert omission_note(runs[2:3], 2, 1) == "[2 earlier entries and 1 recap left out for want of budget: e9–e10]"
    assert omission_note([], 0, 2) == "[2 recaps left out for want of budget]"
    assert omission_note([("e7", "e7")], 1, 0) == "[1 earlier entry left out for want of budget: e7]"


def _pinned(entry: ModelInputEntry | ModelOutputEntry) -> Any:
    return attrs.evolve(entry, retention=Retention.CRITICAL)


def _cost(entries: Sequence[HistoryEntry], level: Level) -> int:
    return unit_messages(entries, level)[1]


def test_a_pinned_entry_is_shown_where_it_was_while_older_and_newer_ones_are_left_out() -> None:
    task = _pinned(inp(0, "THE TASK " * 20))
    history: list[HistoryEntry] = [task, *[inp(n, f"filler {n} " * 40) for n in range(1, 30)], inp(30, "now")]
    latest = do_render(history[-1:], 100_000).tokens
    budget = latest + _cost([task], Level.RECENT) + 60
    result = do_render(history, budget, pinned=[0])
    assert result.messages[1] == ChatMessage(Role.USER, task.content.recent.text)  # right after the system prompt
    assert result.spans[0] == RenderedSpan("e0", "e0", Shown.RECENT)
    assert result.spans[-1] == RenderedSpan("e30", "e30", Shown.LIVE)
    unpinned = do_render(history, budget)
    assert all("THE TASK" not in m.content for m in unpinned.messages)


def test_a_pinned_model_output_is_shown_with_its_results() -> None:
    o = _pinned(out(1, "the plan", calls=2))
    history: list[HistoryEntry] = [inp(0, "go"), o, results(2, o),
                                   *[inp(n, f"filler {n} " * 60) for n in range(3, 20)], inp(20, "now")]
    latest = do_render(history[-1:], 100_000).tokens
    budget = latest + _cost(history[1:3], Level.RECENT) + 40
    result = do_render(history, budget, pinned=[1])
    roles = [m.role for m in result.messages]
    assert roles[:5] == [Role.SYSTEM, Role.SYSTEM, Role.ASSISTANT, Role.TOOL, Role.TOOL]  # after the omission line
    assert result.messages[1].content == "[17 earlier entries left out for want of budget: e0, e3–e18]"
    assert_no_orphans(result.messages)
    assert result.spans[1] in (RenderedSpan("e1", "e2", Shown.RECENT), RenderedSpan("e1", "e2", Shown.LIVE))


def test_a_pinned_latest_observation_is_shown_once_live_with_the_windows() -> None:
    task = _pinned(inp(0, "the task"))
    result = do_render([task], 100_000, pinned=[0])
    assert [m.content for m in result.messages] == [SYSTEM, f"the task\n\n{WINDOW}"]
    assert result.spans == (RenderedSpan("e0", "e0", Shown.LIVE),)


def test_what_fits_to_the_last_token_is_shown() -> None:
    task = _pinned(inp(0, "the task " * 10))
    history: list[HistoryEntry] = [task, inp(1, "now")]
    summary = recap(5, "what happened before")
    exact = do_render(history, 100_000, recaps=[summary], pinned=[0])
    assert do_render(history, exact.tokens, recaps=[summary], pinned=[0]) == exact
    short = do_render(history, exact.tokens - 1, recaps=[summary], pinned=[0])
    assert short.messages != exact.messages and short.tokens < exact.tokens


def test_rendering_stops_looking_back_after_sixteen_misfits_in_a_row_counted_from_the_last_fit() -> None:
    wide = [out(2 * k + 100, text="", calls=20) for k in range(MAX_MISFITS)]
    big: list[HistoryEntry] = [e for o in wide for e in (o, results(int(o.id[1:]) + 1, o))]
    history: list[HistoryEntry] = [inp(0, "oldest"), *big, inp(500, "fits"), inp(501, "now")]
    latest = do_render(history[-1:], 100_000).tokens
    small = _cost([inp(0, "oldest")], Level.GIST)
    budget = latest + 2 * small + 60  # room for two small entries and the line, never for a wide one
    assert _cost(big[:2], Level.GIST) > 2 * small + 60
    result = do_render(history, budget)
    shown = [m.content for m in result.messages]
    assert "fits" in shown and "oldest" not in shown  # one fit, then sixteen misfits: it stopped
    fewer = [inp(0, "oldest"), *big[2:], inp(500, "fits"), inp(501, "now")]
    assert "oldest" in [m.content for m in do_render(fewer, budget).messages]  # fifteen: it went on


def test_left_out_runs_are_named_apart_and_the_line_stands_where_the_oldest_was() -> None:
    def wide(n: int) -> list[HistoryEntry]:
        o = out(n, text="", calls=20)
        return [o, results(n + 1, o)]
    history: list[HistoryEntry] = [*wide(0), inp(2, "kept"), *wide(3), *wide(5), inp(7, "now")]
    latest = do_render(history[-1:], 100_000).tokens
    budget = latest + _cost([inp(2, "kept")], Level.RECENT) + 40
    result = do_render(history, budget)
    assert [m.content for m in result.messages] == [
        SYSTEM, "[6 earlier entries left out for want of budget: e0–e1, e3–e6]", "kept", f"now\n\n{WINDOW}"]
    assert [s.shown for s in result.spans] == [Shown.OMITTED, Shown.GIST, Shown.OMITTED, Shown.LIVE]


def test_a_history_whose_oldest_unfolded_entry_is_a_model_output_renders_it_with_its_results() -> None:
    o = out(1, "the call", calls=1)
    result = do_render([o, results(2, o), inp(3, "now")], 100_000)
    assert [m.role for m in result.messages] == [Role.SYSTEM, Role.ASSISTANT, Role.TOOL, Role.USER]
    assert_no_orphans(result.messages)


def test_fifteen_misfits_with_no_fit_before_them_do_not_stop_rendering() -> None:
    wide = [out(2 * k + 100, text="", calls=20) for k in range(MAX_MISFITS - 1)]
    big: list[HistoryEntry] = [e for o in wide for e in (o, results(int(o.id[1:]) + 1, o))]
    history: list[HistoryEntry] = [inp(0, "oldest"), *big, inp(501, "now")]
    budget = do_render(history[-1:], 100_000).tokens + 2 * _cost([inp(0, "oldest")], Level.GIST) + 60
    assert "oldest" in [m.content for m in do_render(history, budget).messages]
    more = [inp(0, "oldest"), out(98, text="", calls=20), results(99, out(98, text="", calls=20)), *history[1:]]
    assert "oldest" not in [m.content for m in do_render(more, budget).messages]


def test_units_older_than_a_pinned_one_are_still_shown() -> None:
    history: list[HistoryEntry] = [inp(0, "first words"), _pinned(inp(1, "the task")),
                                   *[inp(n, f"step {n}") for n in range(2, 6)], inp(6, "now")]
    result = do_render(history, 100_000, pinned=[1])
    assert [m.content for m in result.messages][1:3] == ["first words", "the task"]


def test_a_recap_comes_after_the_pinned_entries_older_than_what_it_stands_for_and_before_the_rest() -> None:
    summary = attrs.evolve(recap(20, "what happened in e2 to e10"), covers=tuple(f"e{n}" for n in range(2, 11) if n != 5))
    history: list[HistoryEntry] = [_pinned(inp(1, "the task")), _pinned(inp(5, "a note pinned midway")),
                                   inp(11, "after the fold"), inp(12, "now")]
    result = do_render(history, 100_000, recaps=[summary], pinned=[0, 1])
    assert [m.content for m in result.messages][1:5] == [
        "the task", "a note pinned midway", f"{RECAP_PREFIX}what happened in e2 to e10", "after the fold"]


def test_the_line_saying_what_is_left_out_was_planned_for_so_it_costs_no_unit_that_fit() -> None:
    o = out(20, text="", calls=20)
    olds = [inp(n, f"old {n}") for n in range(10)]
    history: list[HistoryEntry] = [*olds, o, results(21, o), inp(22, "now")]
    c = counter()
    note = omission_note([("e20", "e21")], 2, 0)
    budget = (do_render(history[-1:], 100_000).tokens + sum(_cost([e], Level.GIST) for e in olds)
              + c.count(note) + MESSAGE_OVERHEAD_TOKENS)
    result = do_render(history, budget)
    assert [m.content for m in result.messages][1:11] == [f"old {n}" for n in range(10)]
    assert note in [m.content for m in result.messages] and result.tokens == budget


def test_room_is_kept_for_the_line_so_a_big_unit_does_not_crowd_out_smaller_older_ones() -> None:
    wide = out(3, text="", calls=20)
    history: list[HistoryEntry] = [inp(1, "older d"), inp(2, "older c"), wide, results(4, wide),
                                   inp(5, "newer a"), inp(6, "now")]
    latest = do_render(history[-1:], 100_000).tokens
    small = _cost([inp(5, "newer a")], Level.RECENT)
    budget = latest + small + _cost(history[2:4], Level.GIST) + 3  # the wide unit fits only with no line
    result = do_render(history, budget)
    shown = [m.content for m in result.messages]
    assert shown[1:5] == ["older d", "older c", "[2 earlier entries left out for want of budget: e3–e4]", "newer a"]


def test_a_span_never_reaches_over_an_entry_that_is_not_shown_here() -> None:
    history: list[HistoryEntry] = [inp(1, "a"), inp(5, "b"), inp(6, "c"), inp(7, "now")]  # e2-e4 folded
    result = do_render(history, 100_000)
    assert result.spans == (RenderedSpan("e1", "e1", Shown.RECENT), RenderedSpan("e5", "e6", Shown.RECENT),
                            RenderedSpan("e7", "e7", Shown.LIVE))


def test_consecutive_ids_past_the_small_numbers_still_make_one_span() -> None:
    history: list[HistoryEntry] = [inp(n, f"step {n}") for n in range(300, 306)]
    assert do_render(history, 100_000).spans == (RenderedSpan("e300", "e304", Shown.RECENT),
                                                 RenderedSpan("e305", "e305", Shown.LIVE))


def test_a_render_costs_exactly_its_parts() -> None:
    c = counter()
    result = do_render([inp(0, "hello there")], 100_000)
    assert result.tokens == (c.count(SYSTEM) + MESSAGE_OVERHEAD_TOKENS + c.count("hello there") + JOIN_TOKENS
                             + c.count(WINDOW) + MESSAGE_OVERHEAD_TOKENS)


def test_a_pinned_task_too_big_for_its_recent_is_shown_as_its_gist() -> None:
    task = _pinned(attrs.evolve(inp(0), content=levels("the task " * 200, "the task " * 200, "the task, in short")))
    history: list[HistoryEntry] = [task, inp(1, "now")]
    budget = do_render(history[1:], 100_000).tokens + _cost([task], Level.GIST) + 5
    result = do_render(history, budget, pinned=[0])
    assert result.messages[1] == ChatMessage(Role.USER, "the task, in short")
    assert result.spans[0] == RenderedSpan("e0", "e0", Shown.GIST)


def test_a_pinned_first_entry_is_kept_when_rendering_stops_looking_back() -> None:
    wide = [out(2 * k + 100, text="", calls=20) for k in range(MAX_MISFITS + 2)]
    big: list[HistoryEntry] = [e for o in wide for e in (o, results(int(o.id[1:]) + 1, o))]
    history: list[HistoryEntry] = [_pinned(inp(0, "the task")), *big, inp(500, "now")]
    budget = do_render(history[-1:], 100_000).tokens + _cost(history[:1], Level.RECENT) + 60
    result = do_render(history, budget, pinned=[0])
    assert [m.content for m in result.messages][1:3] == [
        "the task", f"[{len(big)} earlier entries left out for want of budget: e100–e135]"]
    assert result.spans[:2] == (RenderedSpan("e0", "e0", Shown.RECENT), RenderedSpan("e100", "e135", Shown.OMITTED))


def test_room_left_shows_an_older_tool_output_whole() -> None:
    o = out(1, "looking", calls=1)
    long = results(2, o, text="the whole output, line after line " * 20)
    history: list[HistoryEntry] = [inp(0, "go"), o, long, inp(3, "now")]
    result = do_render(history, 100_000)
    assert result.messages[3].content == "[ok] " + long.results[0].content.live.text
    assert result.spans[1] == RenderedSpan("e1", "e3", Shown.LIVE)  # (with the latest, also live)


def test_the_latest_observation_never_takes_a_token_more_than_the_budget_when_the_task_gives_way() -> None:
    big = "the task, which even in short takes room " * 10
    task = _pinned(attrs.evolve(inp(0), content=levels(big, big, big)))
    latest = inp(1)  # LIVE costs more than RECENT
    alone = do_render([latest], 100_000).tokens
    for budget in range(alone - 3, alone + 3):
        result = do_render([task, latest], budget, pinned=[0])
        assert result.tokens <= budget  # the task left out, the latest as much as fits
        assert result.spans[0] == RenderedSpan("e0", "e0", Shown.OMITTED)


def test_the_latest_observation_keeps_the_windows_at_recent_when_only_that_fits() -> None:
    # (this test once pinned the old fallback to the gist with the windows)
    latest = attrs.evolve(inp(0), content=levels("word " * 400, "word " * 200, "in short"))
    with_windows = do_render([latest], 100_000, windows=WINDOW)
    budget = do_render([attrs.evolve(latest, content=levels("word " * 200, "word " * 200, "in short"))],
                       100_000, windows=WINDOW).tokens
    assert budget < with_windows.tokens
    result = do_render([latest], budget, windows=WINDOW)
    assert result.messages[-1].content == "word " * 200 + "\n\n" + WINDOW
    assert result.spans == (RenderedSpan("e0", "e0", Shown.RECENT),)


def test_older_steps_each_keep_a_line_before_newer_ones_get_more_than_half_the_room() -> None:
    # every older step fits as a gist; at RECENT only about half of them would: newest-first
    # RECENT for all would leave the oldest out, the share for RECENT keeps a gist for each
    detail = " and what it showed in detail" * 12
    olds = [attrs.evolve(inp(n), content=levels(f"step {n}{detail}", f"step {n}{detail}", f"step {n}"))
            for n in range(20)]
    history: list[HistoryEntry] = [*olds, inp(20, "now")]
    room = (sum(_cost([e], Level.GIST) for e in olds)
            + 8 * (_cost(olds[:1], Level.RECENT) - _cost(olds[:1], Level.GIST)))
    budget = do_render(history[-1:], 100_000).tokens + room
    result = do_render(history, budget)
    assert Shown.OMITTED not in [s.shown for s in result.spans]
    assert [m.content for m in result.messages][1] == "step 0"  # the oldest, as its gist
    recent = [m for m in result.messages if m.content.endswith(detail)]
    assert 4 <= len(recent) <= 8 and recent[-1].content == f"step 19{detail}"  # the newest get more
    assert result.tokens <= budget


def test_a_recap_comes_after_a_pinned_entry_between_the_last_two_it_stands_for() -> None:
    summary = attrs.evolve(recap(20, "what happened in e2 to e10"),
                           covers=tuple(f"e{n}" for n in range(2, 11) if n != 9))
    history: list[HistoryEntry] = [_pinned(inp(1, "the task")), _pinned(inp(9, "pinned late in the fold")),
                                   inp(11, "after the fold"), inp(12, "now")]
    result = do_render(history, 100_000, recaps=[summary], pinned=[0, 1])
    assert [m.content for m in result.messages][1:5] == [
        "the task", "pinned late in the fold", f"{RECAP_PREFIX}what happened in e2 to e10", "after the fold"]


def test_a_pinned_task_left_out_is_named_once_when_rendering_stops_looking_back() -> None:
    wide = [out(2 * k + 1, text="", calls=20) for k in range(MAX_MISFITS + 2)]
    big: list[HistoryEntry] = [e for o in wide for e in (o, results(int(o.id[1:]) + 1, o))]
    long = "the task, too long to fit even in short " * 30
    task = _pinned(attrs.evolve(inp(0), content=levels(long, long, long)))
    history: list[HistoryEntry] = [task, *big, inp(100, "now")]
    budget = do_render(history[-1:], 100_000).tokens + 40
    result = do_render(history, budget, pinned=[0])
    assert result.spans == (RenderedSpan("e0", f"e{len(big)}", Shown.OMITTED), RenderedSpan("e100", "e100", Shown.LIVE))
    assert expand(result.spans, history) == [e.id for e in history]
    assert f"[{len(big) + 1} earlier entries left out for want of budget: e0–e{len(big)}]" in [
        m.content for m in result.messages]


def test_a_pinned_task_longer_than_an_inputs_recent_is_sent_whole_where_it_fits() -> None:
    task = " ".join(f"requirement {k} of the task." for k in range(700))
    content = input_content(task, (), counter())
    assert content.recent.text != task  # (its RECENT is cut to head and tail)
    pinned = ModelInputEntry(id="e1", revision=1, author=AUTHOR, created_at=T0, retention=Retention.CRITICAL,
                             content=content, text=task)
    first = out(2, calls=1)
    history = [pinned, first, results(3, first), inp(4)]
    whole = do_render(history, 8000, pinned=[0])
    assert whole.messages[1] == ChatMessage(Role.USER, task)
    assert whole.spans[0].first == "e1" and whole.spans[0].shown is Shown.LIVE
    tight = do_render(history, content.live.tokens - 100, pinned=[0])  # no room for all of it: cut, never gone
    assert tight.messages[1] == ChatMessage(Role.USER, content.recent.text)

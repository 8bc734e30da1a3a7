"""A unit's pairing and costs as rendering sees them: the cases the render tests leave open.

A unit is an entry, or a model output and the tool results answering exactly its calls
(:mod:`livecontext.actors.history._units`). These tests pin what a mutation tool found
unchecked: results that outnumber the calls, call ids equal but not the same objects (as a
log reads them back), a unit that would reach from the oldest entry round to the newest, the
exact cost of results of any length rendered as user text, levels equal in text but not in
identity, and the render cache's bound at its default size.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.actors.history import BudgetTooSmallError, RenderCache, RenderResult, render
from livecontext.actors.history._lod import output_content
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
    Content,
    HistoryEntry,
    Level,
    LevelText,
    ModelInputEntry,
    ModelOutputEntry,
    Retention,
    Role,
    Shown,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.kernel import ActorId
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS as OVERHEAD
from tests.support.agent_harness import counter
from tests.actors.history.test_render import AUTHOR, T0


def inp(n: int, text: str) -> ModelInputEntry:
    content = counter().content(text, text, text[:10])
    return ModelInputEntry(id=f"e{n}", revision=1, author=AUTHOR, created_at=T0,
                           retention=Retention.COMPRESSIBLE, content=content, text=text)


def out(n: int, call_ids: Sequence[str] = (), text: str | None = None) -> ModelOutputEntry:
    calls = tuple(ToolCall(call_id, "record", '{"label": "x"}') for call_id in call_ids)
    content = output_content(f"answer {n}" if text is None else text, calls, counter())
    return ModelOutputEntry(id=f"e{n}", revision=1, author=AUTHOR, created_at=T0,
                            retention=Retention.COMPRESSIBLE, content=content,
                            tool_calls=calls)


def results(n: int, call_ids: Sequence[str], text: str = "done", note: str = "") -> ToolResultsEntry:
    c = counter()
    made = tuple(ToolResult(call_id, "record", ToolStatus.OK, c.content(text, text, text[:4])) for call_id in call_ids)
    return ToolResultsEntry(id=f"e{n}", revision=1, author=AUTHOR, created_at=T0, retention=Retention.COMPRESSIBLE,
                            content=c.content(note, note, note), results=made)


def do_render(active: Sequence[HistoryEntry], budget: int = 100_000, pinned: Sequence[int] = ()) -> RenderResult:
    c = counter()
    return render(active, (), budget, system_prompt="", system_tokens=0, windows="", windows_tokens=0,
                  count=c.count, pinned=pinned)


def read_back(text: str) -> str:
    """``text`` as a log decodes it: equal, but another object than the one written."""
    copy: str = json.loads(json.dumps(text))
    assert copy == text and copy is not text
    return copy


# -- pairing -----------------------------------------------------------------------------------------


def test_results_outnumbering_the_calls_do_not_pair_even_when_the_first_ones_answer_them() -> None:
    output = out(1, ["c1"])
    extra = results(2, ["c1", "c2"])
    assert not answers(output, extra)
    assert answers(output, results(2, ["c1"]))
    rendered = do_render([output, extra, inp(3, "latest")])
    # the output is sent without its calls, and its results as user text: no call goes unanswered
    assert [m.role for m in rendered.messages] == [Role.ASSISTANT, Role.USER, Role.USER]
    assert rendered.messages[0].tool_calls == ()
    assert rendered.messages[1].content == "[ok] done\n\n[ok] done"


def test_results_read_back_from_a_log_pair_with_their_calls_by_equal_ids() -> None:
    output = out(1, ["call_" + "a" * 30, "call_" + "b" * 30])
    decoded = results(2, [read_back(c.id) for c in output.tool_calls])
    assert answers(output, decoded)
    rendered = do_render([output, decoded, inp(3, "latest")])
    assert [m.role for m in rendered.messages] == [Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.USER]
    assert [m.tool_call_id for m in rendered.messages[1:3]] == [c.id for c in output.tool_calls]


def test_an_output_without_calls_and_results_without_any_are_two_units_placed_apart() -> None:
    answer = out(1, text="A long answer, " + "word by word, " * 40)  # (its gist: a line, still long)
    notes = results(2, [], note="[Notifications]\n- the build finished")  # (results of no call: a note alone)
    assert not answers(answer, notes)
    history = [answer, notes, inp(3, "latest")]
    whole = do_render(history)
    assert [m.content for m in whole.messages][1:] == ["[Notifications]\n- the build finished", "latest"]
    # a budget that holds the note but not the answer too shows the note alone
    renders = [do_render(history, budget) for budget in range(whole.tokens, 0, -1) if _fits(history, budget)]
    alone = [r for r in renders if r.spans[0] == RenderedSpan("e1", "e1", Shown.OMITTED)]
    assert alone and all(r.entries == 2 for r in alone)
    assert [m.content for m in alone[0].messages] == [
        "[1 earlier entry left out for want of budget: e1]", "[Notifications]\n- the build finished", "latest"]


def _fits(history: Sequence[HistoryEntry], budget: int) -> bool:
    try:
        do_render(history, budget)
    except BudgetTooSmallError:
        return False
    return True


@pytest.mark.parametrize("pinned", [(), (0,)])
def test_the_oldest_entry_never_pairs_with_the_newest_output_whatever_their_call_ids(pinned: tuple[int, ...]) -> None:
    # The oldest unfolded entry is results whose output was folded; the newest, a pending
    # output whose call happens to reuse that id (a scripted model numbers its calls afresh).
    pending = out(4, ["c1"])
    history = [results(1, ["c1"]), inp(2, "go on"), out(3), pending]
    rendered = do_render(history, pinned=pinned)
    assert [(m.role, m.content) for m in rendered.messages] == [
        (Role.USER, "[ok] done"), (Role.USER, "go on"), (Role.ASSISTANT, "answer 3"), (Role.ASSISTANT, "answer 4")]
    assert rendered.messages[-1].tool_calls == ()  # still pending: its call is not sent
    assert rendered.entries == 4
    assert rendered.spans == (RenderedSpan("e1", "e4", Shown.RECENT),)  # each entry once, in order


# -- costs -------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text("abc xyz.\n", min_size=0, max_size=120), min_size=1, max_size=4), st.text("note ", max_size=30))
def test_results_rendered_as_user_text_cost_exactly_their_parts_whatever_their_length(
    texts: list[str], note: str
) -> None:
    c = counter()
    calls = [f"c{k}" for k in range(len(texts))]
    entry = attrs.evolve(results(2, calls), content=c.content(note, note, note), results=tuple(
        ToolResult(call_id, "record", ToolStatus.OK, c.content(text, text, text))
        for call_id, text in zip(calls, texts)))
    messages, tokens = unit_messages([entry], Level.RECENT)  # its output not rendered: user text
    parts = [f"[ok] {text}" for text in texts] + ([note] if note else [])
    assert messages == [messages[0]] and messages[0].role is Role.USER
    assert messages[0].content == "\n\n".join(parts)
    note_tokens = c.count(note)
    assert tokens == sum(c.count(t) + STATUS_PREFIX_TOKENS + JOIN_TOKENS for t in texts) + note_tokens + OVERHEAD
    output = out(1, calls)
    paired_messages, paired = unit_messages([output, entry], Level.RECENT)
    assert [m.role for m in paired_messages] == [Role.ASSISTANT] + [Role.TOOL] * len(texts) + (
        [Role.USER] if note else [])
    assert paired == output.content.recent.tokens + OVERHEAD + sum(
        c.count(t) + STATUS_PREFIX_TOKENS + OVERHEAD for t in texts) + (note_tokens + OVERHEAD if note else 0)


def test_a_result_of_a_dozen_tokens_rendered_as_user_text_costs_its_tokens_its_prefix_and_its_join() -> None:
    # (a count with its 8 bit set: adding the prefix and the join is not the same as or-ing them)
    text = "one two three four five six seven eight nine ten eleven twelve"
    tokens = counter().count(text)
    assert tokens & (STATUS_PREFIX_TOKENS + JOIN_TOKENS)
    _, cost = unit_messages([results(2, ["c1"], text)], Level.LIVE)
    assert cost == tokens + STATUS_PREFIX_TOKENS + JOIN_TOKENS + OVERHEAD


def test_levels_equal_in_text_but_read_back_as_separate_objects_show_nothing_more() -> None:
    def level_text(text: str) -> LevelText:
        return LevelText(read_back(text), counter().count(text))

    same = Content(level_text("all of it"), level_text("all of it"), level_text("all of it"))
    assert same.live is not same.recent and same.recent is not same.gist
    entry = attrs.evolve(inp(1, "all of it"), content=same)
    assert not differs([entry], Level.GIST, Level.RECENT)
    assert not differs([entry], Level.RECENT, Level.LIVE)
    levels = UnitLevels([entry])
    assert not levels.shows_more(Level.RECENT) and not levels.shows_more(Level.LIVE)
    more = attrs.evolve(entry, content=attrs.evolve(same, live=level_text("all of it, and more")))
    assert differs([more], Level.RECENT, Level.LIVE) and not differs([more], Level.GIST, Level.RECENT)


def test_a_render_cache_of_the_default_size_starts_afresh_past_4096_units() -> None:
    cache = RenderCache()
    assert cache.max_units == 4096
    entries = [inp(n, f"step {n}") for n in range(4097)]
    for entry in entries[:4096]:
        cache.levels([entry])
    assert len(cache) == 4096
    kept = cache.levels([entries[0]])
    assert cache.levels([entries[0]]) is kept and len(cache) == 4096  # (read, not built again)
    cache.levels([entries[4096]])
    assert len(cache) == 1  # (never more than max_units: a long run's cache stays bounded)

from __future__ import annotations

import json

import pytest
from attrs import frozen
from hypothesis import assume, given
from hypothesis import strategies as st

from livecontext.actors.apps import (
    AppStateError,
    Notebook,
    ToolOutcome,
    UnknownEffectError,
    describe_tools,
    invoke_tool,
)
from livecontext.protocol.history import ToolCall, ToolStatus
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import NotebookEdited

PLAN = "# Plan\nstep 1: read\nstep 2: write\n# Notes\nkeep this\n"


def notebook(text: str = "") -> Notebook:
    nb = Notebook()
    if text:
        nb.apply(NotebookEdited(text=text))
    return nb


async def replace(nb: Notebook, old_text: str, new_text: str) -> ToolOutcome:
    arguments = json.dumps({"old_text": old_text, "new_text": new_text})
    return await invoke_tool([nb], ToolCall("c1", "notebook_replace", arguments))


async def replace_span(nb: Notebook, start: str, end: str, new_text: str) -> ToolOutcome:
    arguments = json.dumps({"start_anchor": start, "end_anchor": end, "new_text": new_text})
    return await invoke_tool([nb], ToolCall("c1", "notebook_replace_span", arguments))


def failed(message: str) -> ToolOutcome:
    return ToolOutcome.failed(message)


# -- the app ----------------------------------------------------------------------------------


def test_a_new_notebook_is_empty_and_its_window_says_so() -> None:
    nb = Notebook()
    assert nb.text == ""
    assert nb.window() == "[Window: notebook]\n(the notebook is empty)"


def test_the_window_shows_the_whole_text_under_a_heading_naming_the_app() -> None:
    assert notebook(PLAN).window() == "[Window: notebook]\n" + PLAN


def test_the_notebook_offers_its_two_tools_as_idempotent() -> None:
    specs = describe_tools(Notebook())
    assert [(s.name, s.idempotent) for s in specs] == [
        ("notebook_replace", True),
        ("notebook_replace_span", True),
    ]
    assert [json.loads(s.parameters_json)["required"] for s in specs] == [
        ["old_text", "new_text"],
        ["start_anchor", "end_anchor", "new_text"],
    ]
    assert specs[0].description.startswith("Replace one exact passage of the notebook")


def test_a_snapshot_restores_the_same_text() -> None:
    restored = Notebook()
    restored.load_state(notebook("two\nlines ✓").state_text())
    assert restored.text == "two\nlines ✓"


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        ("{not json", r"^notebook snapshot is not valid JSON: Expecting property name"),
        (
            '{"version": 2, "text": "x"}',
            r"^notebook snapshot has version 2, this build reads version 1; use a snapshot made "
            r"by Notebook\.state_text\(\)$",
        ),
        ("[]", r"^notebook snapshot has version None, this build reads version 1"),
        (
            '{"version": 1, "text": 5}',
            r"^notebook snapshot needs a string 'text', got 5; use a snapshot made by "
            r"Notebook\.state_text\(\)$",
        ),
    ],
)
def test_a_bad_snapshot_is_refused_and_the_text_is_kept(snapshot: str, message: str) -> None:
    nb = notebook("kept")
    with pytest.raises(AppStateError, match=message):
        nb.load_state(snapshot)
    assert nb.text == "kept"


@frozen
class Unrelated(Message):
    what: str


def test_applying_an_effect_of_another_kind_is_refused_and_changes_nothing() -> None:
    nb = notebook("kept")
    with pytest.raises(
        UnknownEffectError,
        match=r"^app 'notebook' cannot apply Unrelated \(Unrelated\(what='x'\)\): route each "
        r"effect to the app that produced it$",
    ):
        nb.apply(Unrelated("x"))
    assert nb.text == "kept"


# -- notebook_replace -------------------------------------------------------------------------


async def test_writing_into_an_empty_notebook_with_empty_old_text_sets_the_text() -> None:
    nb = Notebook()
    outcome = await replace(nb, "", "hello\n")
    assert outcome == ToolOutcome.ok(
        live="hello\n",
        recent="--- notebook (before)\n+++ notebook (after)\n@@ -0,0 +1 @@\n+hello",
        gist="notebook edited: 0 -> 6 chars (+6)",
        effect=NotebookEdited(text="hello\n"),
    )


async def test_a_unique_passage_is_replaced_with_levels_new_text_diff_and_size_line() -> None:
    nb = notebook(PLAN)
    outcome = await replace(nb, "step 2: write", "step 2: write tests\nstep 3: ship")
    new = PLAN.replace("step 2: write", "step 2: write tests\nstep 3: ship")
    assert outcome.status is ToolStatus.OK
    assert outcome.live == new
    assert outcome.recent == (
        "--- notebook (before)\n"
        "+++ notebook (after)\n"
        "@@ -1,5 +1,6 @@\n"
        " # Plan\n"
        " step 1: read\n"
        "-step 2: write\n"
        "+step 2: write tests\n"
        "+step 3: ship\n"
        " # Notes\n"
        " keep this"
    )
    assert outcome.gist == f"notebook edited: {len(PLAN)} -> {len(new)} chars (+19)"
    assert outcome.effect == NotebookEdited(text=new)


async def test_the_notebook_is_unchanged_until_the_committed_effect_is_applied() -> None:
    nb = notebook(PLAN)
    before = nb.state_text()
    outcome = await replace(nb, "keep this", "keep that")
    assert nb.text == PLAN
    assert nb.state_text() == before
    assert nb.window() == "[Window: notebook]\n" + PLAN
    assert outcome.effect is not None
    nb.apply(outcome.effect)
    assert nb.text == PLAN.replace("keep this", "keep that")
    assert "keep that" in nb.window()


async def test_deleting_a_passage_reports_a_negative_size_change() -> None:
    outcome = await replace(notebook("abc def"), " def", "")
    assert outcome.live == "abc"
    assert outcome.gist == "notebook edited: 7 -> 3 chars (-4)"


async def test_the_diff_marks_a_last_line_without_a_newline() -> None:
    outcome = await replace(notebook("one\ntwo"), "two", "2")
    assert outcome.recent == (
        "--- notebook (before)\n+++ notebook (after)\n@@ -1,2 +1,2 @@\n one\n-two\n"
        "\\ No newline at end of file\n+2\n\\ No newline at end of file"
    )


async def test_replacing_a_passage_with_itself_succeeds_without_an_effect() -> None:
    outcome = await replace(notebook("same"), "same", "same")
    assert outcome == ToolOutcome.ok(
        "same", "no change: the new text equals the old text", "notebook unchanged: 4 chars"
    )


async def test_old_text_that_does_not_occur_fails_saying_it_was_not_found() -> None:
    nb = notebook(PLAN)
    assert await replace(nb, "step 9", "x") == failed(
        "old_text not found in the notebook; copy it exactly from the notebook window "
        "(whitespace and case matter)"
    )
    assert nb.text == PLAN


async def test_old_text_on_an_empty_notebook_fails_saying_the_notebook_is_empty() -> None:
    assert await replace(Notebook(), "anything", "x") == failed(
        "old_text not found in the notebook (the notebook is empty); copy it exactly from the "
        "notebook window (whitespace and case matter)"
    )


async def test_old_text_occurring_several_times_fails_saying_how_many() -> None:
    assert await replace(notebook("a-b a-c a-d"), "a-", "x") == failed(
        "old_text occurs 3 times; include more surrounding text so it matches exactly once"
    )


async def test_overlapping_occurrences_of_old_text_count_as_ambiguous() -> None:
    assert await replace(notebook("aaa"), "aa", "b") == failed(
        "old_text occurs 2 times; include more surrounding text so it matches exactly once"
    )


async def test_empty_old_text_on_a_non_empty_notebook_fails() -> None:
    assert await replace(notebook("text"), "", "x") == failed(
        "old_text is empty but the notebook is not; give the exact passage to replace (it must "
        "occur exactly once)"
    )


@given(text=st.text(), data=st.data(), new=st.text())
def test_replacing_a_unique_passage_then_applying_equals_str_replace(
    text: str, data: st.DataObject, new: str
) -> None:
    start = data.draw(st.integers(0, len(text)), label="start")
    end = data.draw(st.integers(start, len(text)), label="end")
    old = text[start:end]
    assume(old and text.find(old, text.find(old) + 1) < 0)  # exactly once, overlaps counted
    nb = notebook(text)
    outcome = nb.notebook_replace(old, new)
    assert nb.text == text
    assert outcome.live == text.replace(old, new, 1)
    if outcome.effect is not None:
        nb.apply(outcome.effect)
    assert nb.text == text.replace(old, new, 1)


@given(new=st.text(min_size=1))
def test_writing_into_an_empty_notebook_then_applying_yields_the_new_text(new: str) -> None:
    nb = Notebook()
    outcome = nb.notebook_replace("", new)
    assert outcome.effect == NotebookEdited(text=new)
    nb.apply(outcome.effect)
    assert nb.text == new


# -- notebook_replace_span --------------------------------------------------------------------


async def test_a_span_from_start_anchor_through_end_anchor_is_replaced() -> None:
    nb = notebook(PLAN)
    outcome = await replace_span(nb, "step 1", "write\n", "step 1: done\n")
    new = "# Plan\nstep 1: done\n# Notes\nkeep this\n"
    assert outcome.live == new
    assert outcome.gist == "notebook edited: 52 -> 38 chars (-14)"
    assert (len(PLAN), len(new)) == (52, 38)
    assert outcome.recent.splitlines()[3:] == [
        " # Plan",
        "-step 1: read",
        "-step 2: write",
        "+step 1: done",
        " # Notes",
        " keep this",
    ]
    assert outcome.effect == NotebookEdited(text=new)
    assert nb.text == PLAN


async def test_the_span_ends_at_the_first_end_anchor_after_the_start_anchor() -> None:
    outcome = await replace_span(notebook("END [start a END b END]"), "[start", "END", "<x>")
    assert outcome.live == "END <x> b END]"


async def test_the_end_anchor_may_follow_the_start_anchor_immediately() -> None:
    outcome = await replace_span(notebook("xxABCDyy"), "AB", "CD", "-")
    assert outcome.live == "xx-yy"


async def test_a_missing_start_anchor_fails_saying_which_anchor() -> None:
    assert await replace_span(notebook(PLAN), "step 7", "write", "x") == failed(
        "start_anchor not found in the notebook; copy it exactly from the notebook window "
        "(whitespace and case matter)"
    )


async def test_an_ambiguous_start_anchor_fails_saying_how_often_it_occurs() -> None:
    assert await replace_span(notebook(PLAN), "step", "write", "x") == failed(
        "start_anchor occurs 2 times; include more surrounding text so it matches exactly once"
    )


async def test_an_end_anchor_absent_from_the_notebook_fails_saying_so() -> None:
    assert await replace_span(notebook(PLAN), "step 1", "step 9", "x") == failed(
        "end_anchor not found after start_anchor (it does not occur in the notebook); copy the "
        "exact text where the span ends from the notebook window"
    )


async def test_an_end_anchor_occurring_only_before_the_start_anchor_fails_saying_so() -> None:
    assert await replace_span(notebook(PLAN), "# Notes", "step 1", "x") == failed(
        "end_anchor not found after start_anchor (it occurs only before or overlapping "
        "start_anchor); copy the exact text where the span ends from the notebook window"
    )


async def test_an_end_anchor_inside_the_start_anchor_does_not_count() -> None:
    outcome = await replace_span(notebook("abc"), "abc", "b", "x")
    assert outcome.status is ToolStatus.FAILED
    assert outcome.live.startswith("end_anchor not found after start_anchor (it occurs only before")


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("", "x", "start_anchor is empty; give the exact text where the span begins"),
        ("x", "", "end_anchor is empty; give the exact text where the span ends"),
    ],
)
async def test_an_empty_anchor_fails_saying_which(start: str, end: str, message: str) -> None:
    assert await replace_span(notebook("x y x"), start, end, "z") == failed(message)


async def test_a_span_edit_on_an_empty_notebook_fails_saying_it_is_empty() -> None:
    outcome = await replace_span(Notebook(), "a", "b", "c")
    assert outcome.live.startswith("start_anchor not found in the notebook (the notebook is empty)")


_PLAIN = st.text(alphabet="ab \n")


@given(pre=_PLAIN, mid=_PLAIN, post=_PLAIN, start=_PLAIN, end=_PLAIN, new=st.text())
def test_a_span_edit_replaces_exactly_the_anchored_span(
    pre: str, mid: str, post: str, start: str, end: str, new: str
) -> None:
    # "<" and ">" occur once each, so the anchors are unambiguous by construction.
    start_anchor, end_anchor = "<" + start, ">" + end
    text = pre + start_anchor + mid + end_anchor + post
    nb = notebook(text)
    outcome = nb.notebook_replace_span(start_anchor, end_anchor, new)
    assert outcome.live == pre + new + post
    if outcome.effect is not None:
        nb.apply(outcome.effect)
    assert nb.text == pre + new + post

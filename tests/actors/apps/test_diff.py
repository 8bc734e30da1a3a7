"""The notebook's unified diffs are difflib's, line for line."""

from __future__ import annotations

import difflib

from hypothesis import example, given, settings
from hypothesis import strategies as st

from livecontext.actors.apps._diff import _edit_span, unified_diff

# few distinct lines, so that texts repeat lines (where a matcher could align them otherwise)
_LINE = st.sampled_from(["a\n", "b\n", "c\n", "a", "b", "\n", "- last step: 1\n", "- last step: 2"])
_LINES = st.lists(_LINE, max_size=12)


def _same_as_difflib(old: list[str], new: list[str]) -> None:
    ours = list(unified_diff(old, new, "notebook (before)", "notebook (after)"))
    assert ours == list(difflib.unified_diff(old, new, fromfile="notebook (before)", tofile="notebook (after)"))


@settings(max_examples=1000)
@given(_LINES, _LINES)
def test_any_two_texts_diff_as_difflib_diffs_them(old: list[str], new: list[str]) -> None:
    _same_as_difflib(old, new)


@settings(max_examples=500)
@given(head=_LINES, tail=_LINES, removed=_LINES, added=_LINES)
@example(head=["a\n"], tail=["a\n", "a\n"], removed=[], added=["b\n"])  # the matcher aligns a, a
@example(head=["a\n", "a\n"], tail=["a\n"], removed=["b\n"], added=[])  # ... away from the edit
def test_an_edit_between_a_common_head_and_tail_diffs_as_difflib_diffs_it(
    head: list[str], tail: list[str], removed: list[str], added: list[str]
) -> None:
    _same_as_difflib(head + removed + tail, head + added + tail)


@settings(max_examples=300)
@given(head=st.lists(st.text("abc", max_size=6).map(lambda t: t + "\n"), max_size=20),
       tail=st.lists(st.text("abc", max_size=6).map(lambda t: t + "\n"), max_size=20),
       removed=st.lists(st.text("xyz", min_size=1, max_size=9), min_size=1, max_size=4),
       added=st.lists(st.text("XYZ", min_size=1, max_size=12).map(lambda t: t + "\n"), min_size=1, max_size=4))
def test_a_replaced_passage_whose_lines_are_new_takes_the_direct_way_and_matches_difflib(
    head: list[str], tail: list[str], removed: list[str], added: list[str]
) -> None:
    old, new = head + removed + tail, head + added + tail
    assert _edit_span(old, new) is not None  # (else this test would not test the shortcut)
    _same_as_difflib(old, new)


def test_writing_into_an_empty_notebook_or_emptying_it_takes_the_direct_way() -> None:
    lines = ["# Migration\n", "- owner: data team\n", "- last step: 0"]
    assert _edit_span([], lines) == (0, 0) and _edit_span(lines, []) == (0, 0)
    _same_as_difflib([], lines)
    _same_as_difflib(lines, [])
    _same_as_difflib([], ["one line"])


def test_a_long_text_is_left_to_difflib() -> None:
    old = [f"line {k}\n" for k in range(250)]
    new = old[:100] + ["changed\n"] + old[101:]
    assert _edit_span(old, new) is None
    _same_as_difflib(old, new)

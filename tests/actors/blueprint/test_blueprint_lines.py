"""The line scanner: tomllib gives no positions, so error lines come from scanning the text."""

from __future__ import annotations

from livecontext.actors.blueprint._lines import KeyLines, Where

TEXT = '''\
# a comment
thread = "t"
system_prompt = """
budget = 1
[recap]
"""
limits.max_entries = 5
"quoted" = 1
other = { a = 1 }

[recap]
strategy = "x"
notes = \'\'\'
strategy = "y"
\'\'\'

[[analyzers]]
name = "a"

[[analyzers]]
name = "b"
kind = "usage"
'''


async def test_top_level_keys_are_found_on_their_own_line() -> None:
    lines = KeyLines(TEXT)
    assert lines.line_of(Where(key="thread")) == 2
    assert lines.line_of(Where(key="quoted")) == 8


async def test_lines_inside_multi_line_strings_are_never_taken_for_keys_or_tables() -> None:
    lines = KeyLines(TEXT)
    assert lines.line_of(Where(key="budget")) == 1  # only inside the system prompt: not found
    assert lines.line_of(Where("recap", key="strategy")) == 12
    assert lines.line_of(Where("recap")) == 11


async def test_a_dotted_key_at_the_top_level_counts_as_a_key_of_its_table() -> None:
    assert KeyLines(TEXT).line_of(Where("limits", key="max_entries")) == 7


async def test_each_element_of_an_array_of_tables_has_its_own_lines() -> None:
    lines = KeyLines(TEXT)
    assert lines.line_of(Where("analyzers", 0, "name")) == 18
    assert lines.line_of(Where("analyzers", 1, "name")) == 21
    assert lines.line_of(Where("analyzers", 1, "kind")) == 22


async def test_a_key_not_written_points_at_its_table_then_at_the_key_holding_it() -> None:
    lines = KeyLines(TEXT)
    assert lines.line_of(Where("analyzers", 1, "prompt")) == 20
    assert lines.line_of(Where("other", key="b")) == 9
    assert lines.line_of(Where("nowhere", key="x")) == 1

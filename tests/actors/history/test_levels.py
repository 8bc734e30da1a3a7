"""The levels the runtime makes: RECENT and GIST of a text result, elided call arguments."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.actors.history import _text
from livecontext.actors.history._lod import (
    GIST_KEEP_CHARS,
    GIST_STRING_CHARS,
    RECENT_KEEP_CHARS,
    RECENT_STRING_CHARS,
    INPUT_RECENT_TOKENS,
    RECENT_TOKENS,
    elide_arguments,
    excerpt,
    input_content,
    input_recent_tokens,
    notifications_text,
    output_levels,
    result_content,
    result_gist,
)
from livecontext.actors.history._units import unit_messages
from livecontext.protocol.history import (
    Level,
    ModelOutputEntry,
    Notification,
    Retention,
    Role,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.kernel import ActorId
from tests.support.agent_harness import counter

PYTEST_LOG = "\n".join(
    ["============================= test session starts ==============================",
     "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0", "collected 300 items", ""]
    + [f"tests/test_{i}.py::test_case PASSED" for i in range(300)]
    + ["", "E   ImportError: cannot import name 'flush_chunks' from 'halyard.utils'",
       "=================== 3 failed, 297 passed in 4.21s ==================="])


def test_a_short_text_is_its_own_recent() -> None:
    text = "a few lines\nof output\n"
    assert excerpt(text, counter()) == text


def test_a_long_text_keeps_its_head_and_tail_around_a_marker_of_what_went() -> None:
    c = counter()
    recent = excerpt(PYTEST_LOG, c)
    lines = recent.splitlines()
    assert lines[:3] == PYTEST_LOG.splitlines()[:3]
    assert lines[-2:] == PYTEST_LOG.splitlines()[-2:]  # the error and the outcome are at the end
    [marker] = [line for line in lines if "elided" in line]
    head, tail = lines[: lines.index(marker)], lines[lines.index(marker) + 1:]
    went = PYTEST_LOG.splitlines()[len(head): len(PYTEST_LOG.splitlines()) - len(tail)]
    assert marker == f"… [{len(went):,} lines, {sum(len(line) + 1 for line in went):,} chars elided] …"
    assert c.count(recent) <= RECENT_TOKENS


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abc xyz_()=:.\t漢", max_size=700), min_size=1, max_size=150))
def test_a_recent_excerpt_costs_at_most_its_bound_and_half_the_text(lines: list[str]) -> None:
    c = counter()
    text = "\n".join(lines)
    recent = excerpt(text, c)
    total = c.count(text)
    if total <= RECENT_TOKENS:
        assert recent == text
    else:
        assert c.count(recent) <= min(RECENT_TOKENS, total // 2)
        assert "elided] …" in recent


def test_a_results_gist_names_the_tool_its_status_its_size_and_what_it_says_most() -> None:
    assert result_gist("bash", ToolStatus.OK, PYTEST_LOG) == "bash ok, 307 lines: 3 failed, 297 passed"
    traceback = "Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: bad value"
    assert result_gist("bash", ToolStatus.FAILED, traceback) == "bash failed, 3 lines: ValueError: bad value"
    assert result_gist("grep", ToolStatus.OK, "=====\n\nsrc/a.py:3: def f():\n") == "grep ok, 3 lines: src/a.py:3: def f():"
    assert result_gist("touch", ToolStatus.OK, "") == "touch ok (no output)"
    assert result_gist("notebook_replace", ToolStatus.FAILED, "old_text not found") == (
        "notebook_replace failed: old_text not found")
    assert len(result_gist("cat", ToolStatus.OK, "x" * 5000)) <= 170


def test_what_a_text_says_most_is_its_test_outcome_then_its_last_error_then_its_first_line() -> None:
    assert _text.test_outcome(PYTEST_LOG) == "3 failed, 297 passed"
    assert _text.test_outcome("Ran 5 tests in 0.01s\n\nFAILED (failures=2)") == "ran 5 tests: FAILED (failures=2)"
    assert _text.error_line("a.c:3:5: error: expected ';'\nfatal: not a git repository") == (
        "fatal: not a git repository")
    assert _text.error_line("sh: 1: frobnicate: command not found") == "sh: 1: frobnicate: command not found"
    assert _text.salient_line(PYTEST_LOG) == "3 failed, 297 passed"
    assert _text.salient_line("----\n  hello world\nE   KeyError: 'k'") == "KeyError: 'k'"
    assert _text.salient_line("====\n\n  first words  \nsecond") == "first words"


def test_given_levels_are_kept_and_missing_ones_made() -> None:
    c = counter()
    given_levels = result_content("t", ToolStatus.OK, PYTEST_LOG, "a diff", "one line", c)
    assert (given_levels.recent.text, given_levels.gist.text) == ("a diff", "one line")
    made = result_content("t", ToolStatus.OK, PYTEST_LOG, None, None, c)
    assert made.recent.text == excerpt(PYTEST_LOG, c) and made.gist.text == result_gist("t", ToolStatus.OK, PYTEST_LOG)
    assert made.live.tokens == c.count(PYTEST_LOG)


# -- arguments ---------------------------------------------------------------------------------------

HEREDOC = {"command": "cat > tests/test_regression.py <<'EOF'\n" + "def test_x():\n    assert f() == 1\n" * 80 + "EOF"}


def test_long_strings_in_arguments_are_elided_inside_valid_json() -> None:
    arguments = json.dumps(HEREDOC)
    recent = json.loads(elide_arguments(arguments, RECENT_STRING_CHARS, RECENT_KEEP_CHARS))
    cut = len(HEREDOC["command"]) - RECENT_KEEP_CHARS
    assert recent == {"command": HEREDOC["command"][:RECENT_KEEP_CHARS] + f"…[{cut:,} chars elided]"}
    assert elide_arguments('{"command": "ls -la"}', GIST_STRING_CHARS, GIST_KEEP_CHARS) == '{"command": "ls -la"}'
    unparsed = json.loads(elide_arguments("{not json " * 100, 400, 200))
    assert set(unparsed) == {"_unparsed"} and unparsed["_unparsed"].endswith("chars elided]")


JSON_VALUES: Any = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=600),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=5))
def test_elided_arguments_are_valid_json_of_the_same_shape_with_no_long_string(value: dict[str, Any]) -> None:
    elided = json.loads(elide_arguments(json.dumps(value), 120, 60))

    def strings(v: Any) -> list[str]:
        if isinstance(v, str):
            return [v]
        if isinstance(v, list):
            return [s for x in v for s in strings(x)]
        if isinstance(v, dict):
            return [s for x in v.values() for s in strings(x)]
        return []

    def shape(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: shape(x) for k, x in v.items()}
        if isinstance(v, list):
            return [shape(x) for x in v]
        return type(v).__name__

    assert shape(elided) == shape(value)
    assert all(len(s) <= 120 or (s.endswith("chars elided]") and len(s) < 60 + 30) for s in strings(elided))


def test_a_model_outputs_calls_keep_their_ids_at_every_level_and_its_counts_include_them() -> None:
    c = counter()
    calls = (ToolCall("c1", "bash", json.dumps(HEREDOC)), ToolCall("c2", "bash", '{"command": "pytest -q"}'))
    content, recent_args, gist_args = output_levels("Adding the regression tests.", calls, c)
    assert recent_args[1] == calls[1].arguments and len(recent_args[0]) < len(calls[0].arguments)
    assert gist_args == () or len(gist_args[0]) < len(recent_args[0])
    text_tokens = c.count("Adding the regression tests.")
    assert content.live.tokens == text_tokens + sum(c.count(x.name) + c.count(x.arguments) + 3 for x in calls)
    assert content.recent.tokens == text_tokens + sum(c.count(x.name) + c.count(a) + 3 for x, a in zip(calls, recent_args))
    assert content.recent.tokens < content.live.tokens


def test_at_recent_an_output_with_elided_arguments_still_comes_with_its_results() -> None:
    c = counter()
    calls = (ToolCall("c1", "bash", json.dumps(HEREDOC)),)
    content, recent_args, gist_args = output_levels("Writing the tests.", calls, c)
    author, now = ActorId("engine", "t"), __import__("datetime").datetime.now(__import__("datetime").timezone.utc)
    output = ModelOutputEntry(id="e2", revision=1, author=author, created_at=now, retention=Retention.COMPRESSIBLE,
                              content=content, tool_calls=calls, recent_arguments=recent_args,
                              gist_arguments=gist_args)
    result = ToolResult("c1", "bash", ToolStatus.OK, result_content("bash", ToolStatus.OK, "", None, None, c))
    results = ToolResultsEntry(id="e3", revision=1, author=author, created_at=now, retention=Retention.COMPRESSIBLE,
                               content=c.content("", "", ""), results=(result,))
    for level in (Level.RECENT, Level.GIST):
        messages, _ = unit_messages([output, results], level)
        assert [m.role for m in messages] == [Role.ASSISTANT, Role.TOOL]
        assert [call.id for call in messages[0].tool_calls] == [m.tool_call_id for m in messages[1:]] == ["c1"]
        assert json.loads(messages[0].tool_calls[0].arguments)["command"].endswith("chars elided]")
    live, _ = unit_messages([output, results], Level.LIVE)
    assert live[0].tool_calls == calls


# -- a model input's RECENT -------------------------------------------------------------------------


def test_a_long_input_is_cut_at_recent_to_its_head_and_tail_with_a_line_saying_what_was_elided() -> None:
    c = counter()
    text = "\n".join(f"step {k}: the user pasted this line" for k in range(2000))
    made = input_content(text, (), c)
    assert made.live.text == text
    assert made.recent.text.startswith("step 0: ") and made.recent.text.endswith("step 1999: the user pasted this line")
    assert "lines, " in made.recent.text and "chars elided] …" in made.recent.text
    assert made.recent.tokens <= INPUT_RECENT_TOKENS
    assert made.gist.text == "user: step 0: the user pasted this line"


def test_a_short_input_is_whole_at_recent_and_a_cut_one_keeps_its_notifications_whole() -> None:
    c = counter()
    assert input_content("fix the test", (), c).recent.text == "fix the test"
    note = Notification(id="n1", sender=ActorId("analyzer", "a"), text="the build is red", posted_at=dt.datetime(2025, 1, 2, tzinfo=dt.timezone.utc))
    made = input_content("word\n" * 3000, (note,), c, recent_tokens=100)
    assert made.recent.tokens <= 100 + c.count(notifications_text((note,))) + 1
    assert made.recent.text.endswith("\n\n" + notifications_text((note,)))


def test_an_input_s_recent_is_at_most_a_quarter_of_the_thread_s_budget() -> None:
    assert input_recent_tokens(None) == INPUT_RECENT_TOKENS == input_recent_tokens(8000)
    assert input_recent_tokens(1000) == 250
    assert input_recent_tokens(100_000) == INPUT_RECENT_TOKENS


def test_an_input_of_one_long_line_keeps_its_first_and_last_words_and_the_question_at_its_end() -> None:
    c = counter()
    text = "This is a long paragraph about the bug. " * 300 + "What should I do?"
    made = input_content(text, (), c, recent_tokens=200)
    assert made.recent.tokens <= 200
    head, marker, tail = made.recent.text.split("\n")
    assert text.startswith(head.removesuffix("…")) and text.endswith(tail.removeprefix("…"))
    assert tail.endswith("What should I do?")
    assert marker == f"… [{len(text) - len(head) - len(tail) + 2:,} chars elided] …"

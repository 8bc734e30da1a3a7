from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import trio

from livecontext.protocol.history import ChatMessage, ModelRequest, Role, ToolCall
from livecontext.runtime import ModelError, UsageError, open_runtime
from livecontext.runtime.models import (
    FailureKind,
    ModelCallFailed,
    RetryingModel,
    RetryPolicy,
    ScriptedModel,
    ScriptError,
    ScriptExhaustedError,
    TransientModelError,
    UnusedTurnsError,
)
from livecontext.runtime.models import _scripted
from tests.support.busy import busy_task

FAST = RetryPolicy(max_attempts=4, base_delay_s=0.001, max_delay_s=0.001)


def _request(call_index: int) -> ModelRequest:
    return ModelRequest(messages=(ChatMessage(Role.USER, "go"),), call_index=call_index)


def _write(tmp_path: Path, script: Any, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(script if isinstance(script, str) else json.dumps(script), encoding="utf-8")
    return path


async def test_turn_k_answers_the_call_whose_call_index_is_k_whatever_the_order() -> None:
    model = ScriptedModel.from_turns([{"text": "zero"}, {"text": "one"}, {"text": "two"}])
    assert (await model.complete(_request(2))).text == "two"
    assert (await model.complete(_request(0))).text == "zero"
    assert (await model.complete(_request(0))).text == "zero"
    assert model.unused_turns() == (1,)


async def test_tool_calls_get_deterministic_ids_and_json_text_arguments() -> None:
    model = ScriptedModel.from_turns(
        [
            {"text": "thinking"},
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "a.txt", "lines": [1, 2]}},
                    {"name": "now"},
                ]
            },
        ]
    )
    reply = await model.complete(_request(1))
    assert reply.text == ""
    assert reply.tool_calls == (
        ToolCall(id="call_1_0", name="read_file", arguments='{"path": "a.txt", "lines": [1, 2]}'),
        ToolCall(id="call_1_1", name="now", arguments="{}"),
    )


async def test_string_arguments_are_sent_verbatim_so_tests_can_script_malformed_json() -> None:
    model = ScriptedModel.from_turns([{"tool_calls": [{"name": "read_file", "arguments": '{"path": '}]}])
    reply = await model.complete(_request(0))
    assert reply.tool_calls[0].arguments == '{"path": '


async def test_the_text_is_streamed_through_on_text_in_pieces() -> None:
    model = ScriptedModel.from_turns([{"text": "one two three four five"}])
    pieces: list[str] = []
    reply = await model.complete(_request(0), pieces.append)
    assert len(pieces) > 1
    assert "".join(pieces) == reply.text == "one two three four five"


async def test_a_turn_waits_its_delay_before_answering(autojump_clock: trio.abc.Clock) -> None:
    model = ScriptedModel.from_turns([{"text": "late", "delay_s": 2.5}])
    start = trio.current_time()
    reply = await model.complete(_request(0))
    assert reply.text == "late"
    assert trio.current_time() - start == pytest.approx(2.5)


async def test_a_delay_for_the_first_attempt_only_lets_a_call_cut_short_be_answered_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    model = ScriptedModel.from_turns([{"text": "late", "delay_s": 60, "delay_times": 1}])
    with trio.move_on_after(1) as cut:  # (an interrupt cuts the first attempt)
        await model.complete(_request(0))
    assert cut.cancelled_caught
    start = trio.current_time()
    reply = await model.complete(_request(0))
    assert reply.text == "late" and trio.current_time() == start


async def test_inside_a_runtime_a_turn_waits_its_delay_on_trios_clock(autojump_clock: trio.abc.Clock) -> None:
    model = ScriptedModel.from_turns([{"text": "late", "delay_s": 2.5}])
    async with open_runtime():
        start = trio.current_time()
        reply = await model.complete(_request(0))
        assert trio.current_time() - start == pytest.approx(2.5)
    assert reply.text == "late"


async def test_a_delayed_turn_can_be_cancelled_and_then_counts_as_unused(
    autojump_clock: trio.abc.Clock,
) -> None:
    model = ScriptedModel.from_turns([{"text": "never", "delay_s": 100}])
    pieces: list[str] = []
    with trio.move_on_after(1) as scope:
        await model.complete(_request(0), pieces.append)
    assert scope.cancelled_caught
    assert pieces == []
    assert model.unused_turns() == (0,)


async def test_a_turn_without_a_delay_is_still_a_cancel_point() -> None:
    model = ScriptedModel.from_turns([{"text": "never"}])
    with trio.CancelScope() as scope:
        scope.cancel()
        await model.complete(_request(0))
    assert scope.cancelled_caught
    assert model.unused_turns() == (0,)


async def test_turns_without_a_delay_still_let_other_tasks_run() -> None:
    model = ScriptedModel.from_turns([{"text": "quick"}] * 20)
    async with busy_task() as other:
        for index in range(20):
            await model.complete(_request(index))
        assert other.count >= 10  # about one turn each (Trio orders a batch either way)


class _Steps(trio.abc.Instrument):
    """Counts the steps a task takes: how often it was scheduled, i.e. yielded and resumed."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.count += 1


@pytest.mark.parametrize("in_runtime", [False, True], ids=["outside a runtime", "inside a runtime"])
async def test_a_delayed_turn_nobody_listens_to_yields_once_for_its_sleep(
    autojump_clock: trio.abc.Clock, in_runtime: bool,
) -> None:
    model = ScriptedModel.from_turns([{"text": "late", "delay_s": 2.5}])
    async with open_runtime() if in_runtime else contextlib.nullcontext():
        steps = _Steps(trio.lowlevel.current_task())
        trio.lowlevel.add_instrument(steps)
        try:
            reply = await model.complete(_request(0))
        finally:
            trio.lowlevel.remove_instrument(steps)
    assert reply.text == "late"
    assert steps.count == 1  # the sleep was the checkpoint: no second trip through the scheduler


async def test_a_delayed_turn_cancelled_once_its_sleep_is_over_is_cancelled_all_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the cancel comes after the sleep, before the answer: the call is still a cancel point there
    model = ScriptedModel.from_turns([{"text": "never", "delay_s": 0.001}])
    real_sleep = _scripted.sleep
    with trio.CancelScope() as scope:
        async def sleep_then_cancel(seconds: float) -> None:
            await real_sleep(seconds)
            scope.cancel()

        monkeypatch.setattr(_scripted, "sleep", sleep_then_cancel)
        await model.complete(_request(0))
    assert scope.cancelled_caught
    assert model.unused_turns() == (0,)


async def test_a_failing_turn_fails_its_first_attempts_with_the_scripted_kind() -> None:
    model = ScriptedModel.from_turns([{"text": "ok", "fail": {"error": "timeout", "times": 2}}])
    for attempt in (1, 2):
        with pytest.raises(TransientModelError, match=f"^timeout: scripted failure {attempt} of 2 for turn 0$") as info:
            await model.complete(_request(0))
        assert info.value.kind is FailureKind.TIMEOUT
    assert (await model.complete(_request(0))).text == "ok"
    assert model.attempts(0) == 3


async def test_retries_get_past_a_turn_that_fails_fewer_times_than_the_attempts_allowed() -> None:
    scripted = ScriptedModel.from_turns([{"text": "finally", "fail": {"error": "rate_limit", "times": 3}}])
    reply = await RetryingModel(scripted, FAST).complete(_request(0))
    assert reply.text == "finally"
    assert scripted.attempts(0) == 4


async def test_retries_give_up_on_a_turn_that_fails_as_often_as_the_attempts_allowed() -> None:
    scripted = ScriptedModel.from_turns([{"text": "never", "fail": {"error": "server", "times": 4}}])
    with pytest.raises(
        ModelCallFailed, match=r"^model call failed after 4 attempts: server: scripted failure 4 of 4 for turn 0;"
    ):
        await RetryingModel(scripted, FAST).complete(_request(0))
    assert scripted.unused_turns() == (0,)


async def test_asking_past_the_last_turn_names_the_turn_and_the_script_length(tmp_path: Path) -> None:
    path = _write(tmp_path, {"turns": [{"text": str(i)} for i in range(5)]})
    model = ScriptedModel.from_file(path)
    for k in range(5):
        await model.complete(_request(k))
    message = (
        f"scripted model has no turn 5: the script {path} has 5 turns (0-4); add turns to the script "
        "(the agent made more model calls than it has turns)"
    )
    with pytest.raises(ScriptExhaustedError, match=f"^{re.escape(message)}$") as info:
        await model.complete(_request(5))
    assert not isinstance(info.value, TransientModelError)
    assert isinstance(info.value, ModelError)
    assert not info.value.used_before


async def test_a_thread_resumed_past_the_script_is_told_it_used_the_turns_before() -> None:
    model = ScriptedModel.from_turns([{"text": "a"}, {"text": "b"}], name="two")
    request = ModelRequest(messages=(ChatMessage(Role.USER, "hi"),), call_index=2, thread_id="t")
    with pytest.raises(ScriptExhaustedError, match=re.escape(
            "scripted model has no turn 2: the script two has 2 turns (0-1), and thread t used turns 0-1 "
            "before this run (a resumed thread goes on from its next turn); start a new thread "
            "(--thread NAME) or add turns to the script")) as info:
        await model.complete(request)
    assert info.value.used_before


async def test_an_empty_script_says_it_has_no_turns() -> None:
    with pytest.raises(ScriptExhaustedError, match="the script empty has no turns;"):
        await ScriptedModel.from_turns([], name="empty").complete(_request(0))


async def test_the_past_the_end_error_is_not_retried() -> None:
    scripted = ScriptedModel.from_turns([{"text": "only"}])
    with pytest.raises(ScriptExhaustedError):
        await RetryingModel(scripted, FAST).complete(_request(1))


async def test_check_all_used_lists_the_turns_never_answered() -> None:
    model = ScriptedModel.from_turns([{"text": "a"}, {"text": "b"}, {"text": "c"}], name="my-test")
    await model.complete(_request(0))
    with pytest.raises(UnusedTurnsError, match=r"^the script my-test has 2 unused turns \(1, 2\)") as info:
        model.check_all_used()
    assert info.value.unused == (1, 2)
    assert isinstance(info.value, UsageError)


async def test_check_all_used_passes_once_every_turn_was_answered() -> None:
    model = ScriptedModel.from_turns([{"text": "a"}, {"fail": {"error": "server"}}])
    await model.complete(_request(0))
    with pytest.raises(TransientModelError):
        await model.complete(_request(1))
    await model.complete(_request(1))
    model.check_all_used()


async def test_a_script_file_is_loaded_and_names_the_model_after_its_path(tmp_path: Path) -> None:
    path = _write(tmp_path, {"turns": [{"text": "hello"}]})
    model = ScriptedModel.from_file(path)
    assert model.name == f"scripted:{path}"
    assert model.turn_count == 1
    assert (await model.complete(_request(0))).text == "hello"


async def test_a_missing_script_file_is_a_script_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(ScriptError, match=f"^invalid model script {re.escape(str(path))}: no such file"):
        ScriptedModel.from_file(path)


async def test_a_script_that_is_not_json_says_where_the_json_breaks(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"turns": [\n  {"text": "a",}\n]}')
    with pytest.raises(ScriptError, match=r"not valid JSON: Expecting property name .* at line 2, column 16$"):
        ScriptedModel.from_file(path)


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ({"turns": [{"txt": "a"}]}, "turns[0].txt is not a known key (allowed here: text, tool_calls, delay_s, delay_times, fail)"),
        (
            {"turns": [{}, {}, {"fail": {"error": "x"}}]},
            "turns[2].fail.error must be one of rate_limit, server, timeout, got 'x'",
        ),
        ({"turns": [{"text": 5}]}, "turns[0].text must be a string, got a number 5"),
        ({"turns": [{"delay_s": -1}]}, "turns[0].delay_s must not be negative, got -1"),
        ({"turns": [{"delay_s": "1"}]}, "turns[0].delay_s must be a number, got a string '1'"),
        ({"turns": [{"fail": {"error": "server", "times": -2}}]}, "turns[0].fail.times must not be negative, got -2"),
        ({"turns": [{"fail": {"times": 1}}]}, "turns[0].fail.error is missing"),
        (
            {"turns": [{"tool_calls": [{"name": "a", "arguments": [1]}]}]},
            "turns[0].tool_calls[0].arguments must be an object or a string, got a list [1]",
        ),
        ({"turns": [{"tool_calls": [{"arguments": {}}]}]}, "turns[0].tool_calls[0].name is missing"),
        ({"turns": "all of them"}, "turns must be a list, got a string 'all of them'"),
        ({"steps": []}, "turns is missing; steps is not a known key (allowed here: turns)"),
        ([{"text": "a"}], "the script must be an object, got a list [{'text': 'a'}]"),
    ],
)
async def test_a_malformed_script_is_a_script_error_saying_what_is_wrong(
    tmp_path: Path, script: Any, problem: str
) -> None:
    path = _write(tmp_path, script)
    with pytest.raises(ScriptError, match=f"^invalid model script {re.escape(str(path))}: {re.escape(problem)}$"):
        ScriptedModel.from_file(path)


async def test_turns_built_in_code_are_checked_like_a_file() -> None:
    with pytest.raises(ScriptError, match=r"^invalid model script inline: turns\[0\].fail.error must be one of"):
        ScriptedModel.from_turns([{"fail": {"error": "flaky"}}])

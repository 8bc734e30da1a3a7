"""Plain functions as tools (issue 15, "The front door"): described, validated and run like
an app's tools, a sync one in a worker thread."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import trio

from livecontext.actors.apps import FunctionTools, ToolDefinitionError, describe_tools, invoke_tool, tool
from livecontext.protocol.history import ToolCall, ToolStatus
from tests.support import function_tools as ft


def call(name: str, arguments: Any) -> ToolCall:
    return ToolCall("c1", name, arguments if isinstance(arguments, str) else json.dumps(arguments))


def test_a_function_is_described_from_its_signature_and_docstring_without_a_self() -> None:
    (spec,) = describe_tools(FunctionTools([ft.add]))
    assert spec.name == "add" and spec.description == "Add two integers."
    assert json.loads(spec.parameters_json) == {
        "type": "object", "additionalProperties": False, "required": ["a", "b"],
        "properties": {"a": {"type": "integer", "description": "The first."},
                       "b": {"type": "integer", "description": "The second."}}}


async def test_a_sync_function_runs_in_a_worker_thread_and_its_value_is_sent_as_json() -> None:
    tools = FunctionTools([ft.add, ft.which_thread, ft.count_words])
    assert (await invoke_tool([tools], call("add", {"a": 2, "b": 3}))).live == "5"
    thread = (await invoke_tool([tools], call("which_thread", {}))).live
    assert thread != threading.current_thread().name
    assert (await invoke_tool([tools], call("count_words", {"text": "b a b"}))).live == '{"a":1,"b":2}'


async def test_an_async_function_is_awaited_and_its_defaults_apply() -> None:
    tools = FunctionTools([ft.slow_echo])
    assert (await invoke_tool([tools], call("slow_echo", {"text": "hi"}))).live == "hi"


async def test_a_sync_and_an_async_function_with_bad_arguments_fail_saying_what_was_wrong() -> None:
    tools = FunctionTools([ft.add, ft.slow_echo])
    bad = await invoke_tool([tools], call("add", {"a": "two", "b": 3}))
    assert bad.status is ToolStatus.FAILED
    assert bad.live.startswith("invalid arguments for add: argument 'a': Input should be a valid integer")
    extra = await invoke_tool([tools], call("slow_echo", {"text": "x", "loud": True}))
    assert extra.live == "invalid arguments for slow_echo: unknown argument 'loud' (slow_echo takes text, delay)"
    missing = await invoke_tool([tools], call("slow_echo", {}))
    assert missing.live == "invalid arguments for slow_echo: argument 'text': Field required"


async def test_a_function_raising_gives_the_model_a_failed_result() -> None:
    outcome = await invoke_tool([FunctionTools([ft.refuse])], call("refuse", {"reason": "no"}))
    assert (outcome.status, outcome.live) == (ToolStatus.FAILED, "refused: no")


async def test_cancelling_an_async_function_tool_propagates() -> None:
    tools = FunctionTools([ft.slow_echo])
    with trio.move_on_after(0.01) as scope:
        await invoke_tool([tools], call("slow_echo", {"text": "x", "delay": 10}))
    assert scope.cancelled_caught


def test_functions_are_given_by_import_path_and_an_unmarked_one_gets_the_defaults() -> None:
    tools = FunctionTools(["tests.support.function_tools:add", ft.unmarked])
    assert [s.name for s in describe_tools(tools)] == ["add", "unmarked"]
    assert tools.options() == {"functions": ["tests.support.function_tools:add",
                                             "tests.support.function_tools:unmarked"]}
    assert [f.__name__ for f in tools.fresh().functions] == ["add", "unmarked"]


@pytest.mark.parametrize(("path", "message"), [
    ("nowhere", "tool 'nowhere' is not an import path: write module:name, such as mypkg.tools:search"),
    ("no_such_module_here:f", "tool 'no_such_module_here:f': cannot import module 'no_such_module_here'"),
    ("tests.support.function_tools:nope", "tool 'tests.support.function_tools:nope': module "
                                           "'tests.support.function_tools' has no 'nope'"),
    ("tests.support.function_tools:NOT_A_FUNCTION", "tool 'tests.support.function_tools:NOT_A_FUNCTION' "
                                                    "is an int, not a function"),
])
def test_an_import_path_that_names_no_function_is_refused_in_one_line(path: str, message: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        FunctionTools([path])
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_a_function_whose_signature_cannot_be_a_schema_is_refused_saying_why() -> None:
    with pytest.raises(ToolDefinitionError, match=r"parameter 'rest' is variadic positional; a tool takes named"):
        @tool
        def takes_many(*rest: int) -> str:
            """Take many."""
            return ""

    def takes_a_lock(lock: threading.Lock) -> str:
        """Take a lock."""
        return ""

    with pytest.raises(ToolDefinitionError, match=r"its parameters cannot be described as JSON schema"):
        describe_tools(FunctionTools([takes_a_lock]))


def test_a_function_without_a_type_hint_is_refused_when_described() -> None:
    def vague(thing) -> str:  # type: ignore[no-untyped-def]
        """Vague."""
        return ""

    with pytest.raises(ToolDefinitionError, match="parameter 'thing' has no type hint"):
        describe_tools(FunctionTools([vague]))


def test_two_functions_with_one_tool_name_are_refused_naming_both() -> None:
    @tool(name="add")
    def plus(a: int) -> int:
        """Another add."""
        return a

    with pytest.raises(ToolDefinitionError, match=r"two tools are named 'add': tests.support.function_tools:add and "):
        FunctionTools([ft.add, plus])


def test_an_apps_method_is_not_a_plain_tool() -> None:
    class Holder:
        @tool
        def method(self, x: int) -> int:
            """A method."""
            return x

    with pytest.raises(ToolDefinitionError, match="is a method of a class: give the app"):
        FunctionTools([Holder.method])


def test_the_tools_app_has_no_window() -> None:
    assert FunctionTools([ft.add]).window() == ""


async def test_a_tool_returning_text_that_is_not_valid_unicode_ran_and_says_what_was_replaced() -> None:
    import livecontext
    from livecontext.protocol.history import ToolResultsEntry
    from livecontext.runtime.models import ScriptedModel

    @livecontext.tool
    def undecodable() -> str:
        """Return bytes decoded with surrogateescape, as a subprocess's output may be."""
        return b"bad \xff and \xfe".decode("utf-8", "surrogateescape")

    model = ScriptedModel.from_turns([{"tool_calls": [{"name": "undecodable", "arguments": {}}]}, {"text": "ok"}])
    async with livecontext.open_agent(model=model, tools=[undecodable]) as agent:
        await agent.send("go")
        results = [e for e in await agent.history() if isinstance(e, ToolResultsEntry)]
    (result,) = results[0].results
    assert result.status is ToolStatus.OK
    assert result.content.live.text == "bad \ufffd and \ufffd\n[2 characters that are not valid Unicode replaced by \ufffd]"

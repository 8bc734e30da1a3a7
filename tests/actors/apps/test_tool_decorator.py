from __future__ import annotations

import enum
import json
from typing import Any

import pydantic
import pytest
import trio

from livecontext.actors.apps import (
    App,
    AppDefinitionError,
    ToolDefinitionError,
    ToolFailure,
    ToolOutcome,
    describe_tools,
    invoke_tool,
    tool,
)
from livecontext.actors.apps._invoke import start_tool
from livecontext.protocol import (
    LevelText,
    NotebookEdited,
    ToolCall,
    ToolResult,
    ToolStatus,
)
from livecontext.runtime.tokens import TokenCounter


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(pydantic.BaseModel):
    x: int
    y: int


class Stateless(App):
    """An app with no state of its own, for testing tools."""

    def view(self) -> str:
        return "nothing to see"


class Calculator(Stateless):
    name = "calc"

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    @tool
    def add(self, a: int, b: int = 2, note: str | None = None) -> ToolOutcome:
        """Add two numbers.

        Use it for sums only.

        Args:
            a: The first number.
            b: The second number; it is
                two by default.
            note: A remark to keep.

        Returns:
            The sum.
        """
        self.calls.append((a, b, note))
        return ToolOutcome.ok(str(a + b), f"{a} + {b} = {a + b}", "added")

    @tool(idempotent=True, name="paint-it")
    async def paint(self, colour: Colour, points: list[Point]) -> ToolOutcome:
        """Paint points.

        Args:
            colour: Which colour.
            points: Where.
        """
        await trio.lowlevel.checkpoint()
        self.calls.append((colour, points))
        return ToolOutcome.ok("painted", "painted", "painted")

    @tool
    def fail(self, why: str) -> ToolOutcome:
        """Fail on purpose.

        Args:
            why: What to say.
        """
        raise ToolFailure(why)

    @tool
    def crash(self) -> ToolOutcome:
        """Crash with a bug."""
        raise ValueError("division by zero somewhere")

    @tool
    def crash_quietly(self) -> ToolOutcome:
        """Crash with a bug and no message."""
        raise KeyError

    @tool
    def wrong_return(self) -> ToolOutcome:
        """Return the wrong thing."""
        return object()  # type: ignore[return-value]

    @tool
    async def wait_forever(self) -> ToolOutcome:
        """Never return."""
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    def helper(self) -> str:
        """Not a tool."""
        return "helper"


def call(name: str, arguments: Any) -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id="call-1", name=name, arguments=text)


def schema_of(app: App, name: str) -> dict[str, Any]:
    spec = {s.name: s for s in describe_tools(app)}[name]
    loaded: dict[str, Any] = json.loads(spec.parameters_json)
    return loaded


# -- describing tools ----------------------------------------------------------------------


def test_the_schema_comes_from_the_signatures_types_defaults_and_docstring() -> None:
    assert schema_of(Calculator(), "add") == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {
                "type": "integer",
                "default": 2,
                "description": "The second number; it is two by default.",
            },
            "note": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "A remark to keep.",
            },
        },
        "required": ["a"],
    }


def test_the_description_is_the_docstring_without_its_args_and_returns_sections() -> None:
    spec = describe_tools(Calculator())[0]
    assert spec.name == "add"
    assert spec.description == "Add two numbers.\n\nUse it for sums only."


def test_enums_and_models_become_definitions_without_generated_titles() -> None:
    schema = schema_of(Calculator(), "paint-it")
    assert schema["properties"]["colour"]["$ref"] == "#/$defs/Colour"
    assert schema["$defs"]["Colour"] == {"enum": ["red", "blue"], "type": "string"}
    assert schema["$defs"]["Point"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    }
    assert "title" not in json.dumps(schema)


def test_a_parameter_called_title_or_json_keeps_its_name_in_the_schema() -> None:
    class Titled(Stateless):
        name = "titled"

        @tool
        def rename(self, title: str, json: str, model_config: int = 0) -> ToolOutcome:
            """Rename.

            Args:
                title: The new title.
                json: Names that clash with pydantic are fine.
                model_config: So is this one.
            """
            return ToolOutcome.ok(title, json, str(model_config))

    schema = schema_of(Titled(), "rename")
    assert list(schema["properties"]) == ["title", "json", "model_config"]
    assert schema["properties"]["title"] == {"type": "string", "description": "The new title."}


def test_tools_are_described_in_declaration_order_with_their_names_and_idempotence() -> None:
    specs = describe_tools(Calculator())
    assert [(s.name, s.idempotent) for s in specs] == [
        ("add", False),
        ("paint-it", True),
        ("fail", False),
        ("crash", False),
        ("crash_quietly", False),
        ("wrong_return", False),
        ("wait_forever", False),
    ]


def test_a_subclass_keeps_inherited_tools_first_and_can_override_or_remove_them() -> None:
    class Base(Stateless):
        name = "base"

        @tool
        def zeta(self) -> ToolOutcome:
            """Zeta."""
            return ToolOutcome.ok("z", "z", "z")

        @tool
        def alpha(self) -> ToolOutcome:
            """Alpha."""
            return ToolOutcome.ok("a", "a", "a")

    class Derived(Base):
        name = "derived"

        @tool
        def beta(self) -> ToolOutcome:
            """Beta."""
            return ToolOutcome.ok("b", "b", "b")

        @tool
        def zeta(self) -> ToolOutcome:
            """Zeta, improved."""
            return ToolOutcome.ok("Z", "Z", "Z")

        def alpha(self) -> ToolOutcome:  # no longer a tool
            return ToolOutcome.ok("a", "a", "a")

    specs = describe_tools(Derived())
    assert [(s.name, s.description) for s in specs] == [
        ("zeta", "Zeta, improved."),
        ("beta", "Beta."),
    ]


def test_describing_an_app_whose_methods_share_a_tool_name_is_an_error() -> None:
    class Twice(Stateless):
        name = "twice"

        @tool(name="same")
        def one(self) -> ToolOutcome:
            """One."""
            return ToolOutcome.ok("1", "1", "1")

        @tool(name="same")
        def two(self) -> ToolOutcome:
            """Two."""
            return ToolOutcome.ok("2", "2", "2")

    with pytest.raises(
        ToolDefinitionError,
        match=r"^app 'twice' declares tool 'same' twice \(one and two\): give one of them "
        r"another name with @tool\(name=\.\.\.\)$",
    ):
        describe_tools(Twice())
    with pytest.raises(ToolDefinitionError, match="declares tool 'same' twice"):
        describe_tools(Twice())  # every time, not only the first


def test_apps_of_one_class_are_described_alike_every_time() -> None:
    first = describe_tools(Calculator())
    assert describe_tools(Calculator()) == first
    assert [s.name for s in first][:2] == ["add", "paint-it"]


# -- definition errors ----------------------------------------------------------------------


def test_a_tool_without_a_docstring_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(
        ToolDefinitionError,
        match=r"^tool silent \(.*silent\) has no docstring: write one, the model reads it as "
        r"the tool's description$",
    ):

        class Silent(Stateless):
            @tool
            def silent(self) -> ToolOutcome:
                return ToolOutcome.ok("", "", "")


def test_a_tool_taking_star_args_is_refused() -> None:
    with pytest.raises(
        ToolDefinitionError,
        match=r"^tool spread \(.*spread\): parameter 'rest' is variadic positional; a tool "
        r"takes named parameters only \(the model passes a JSON object\)$",
    ):

        class Spread(Stateless):
            @tool
            def spread(self, *rest: str) -> ToolOutcome:
                """Spread."""
                return ToolOutcome.ok("", "", "")


def test_a_tool_with_positional_only_parameters_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match=r"parameter 'x' is positional-only"):

        class Positional(Stateless):
            @tool
            def positional(self, x: int, /) -> ToolOutcome:
                """Positional."""
                return ToolOutcome.ok("", "", "")


def test_a_tool_name_that_model_apis_reject_is_refused() -> None:
    with pytest.raises(
        ToolDefinitionError,
        match=r"^tool name 'has space' of .* is not valid: use 1-64 letters, digits, '_' or '-' "
        r"\(what model APIs accept\)$",
    ):

        class Spaced(Stateless):
            @tool(name="has space")
            def spaced(self) -> ToolOutcome:
                """Spaced."""
                return ToolOutcome.ok("", "", "")


def test_tool_on_a_staticmethod_is_refused() -> None:
    with pytest.raises(
        ToolDefinitionError, match=r"^@tool marks plain methods, not staticmethod objects"
    ):
        tool(staticmethod(lambda: None))  # type: ignore[arg-type]


def test_a_parameter_without_a_type_hint_is_refused_when_the_tools_are_described() -> None:
    class Unhinted(Stateless):
        name = "unhinted"

        @tool
        def vague(self, thing) -> ToolOutcome:  # type: ignore[no-untyped-def]
            """Vague."""
            return ToolOutcome.ok("", "", "")

    with pytest.raises(
        ToolDefinitionError,
        match=r"^tool vague \(.*vague\): parameter 'thing' has no type hint; annotate it so the "
        r"model gets a schema and its arguments can be validated$",
    ):
        describe_tools(Unhinted())


def test_a_docstring_documenting_a_parameter_the_tool_does_not_take_is_refused() -> None:
    class Stale(Stateless):
        name = "stale"

        @tool
        def stale(self, new: str) -> ToolOutcome:
            """Stale docs.

            Args:
                old: Renamed long ago.
                new: The current one.
            """
            return ToolOutcome.ok("", "", "")

    with pytest.raises(
        ToolDefinitionError,
        match=r"its docstring documents 'old', which it does not take \(it takes new\); fix "
        r"the Args section$",
    ):
        describe_tools(Stale())


def test_a_type_hint_that_cannot_be_resolved_is_refused_with_its_name_error() -> None:
    class Dangling(Stateless):
        name = "dangling"

        @tool
        def dangling(self, thing: NoSuchType) -> ToolOutcome:  # type: ignore[name-defined]  # noqa
            """Dangling."""
            return ToolOutcome.ok("", "", "")

    with pytest.raises(
        ToolDefinitionError,
        match=r"cannot resolve its type hints \(NameError: name 'NoSuchType' is not defined\)",
    ):
        describe_tools(Dangling())


def test_a_parameter_type_without_a_json_schema_is_refused() -> None:
    class Eventful(Stateless):
        name = "eventful"

        @tool
        def wait_for(self, event: trio.Event) -> ToolOutcome:
            """Wait.

            Args:
                event: Not something a model can send.
            """
            return ToolOutcome.ok("", "", "")

    with pytest.raises(
        ToolDefinitionError,
        match=r"^tool wait_for \(.*wait_for\): its parameters cannot be described as JSON "
        r"schema \(Unable to generate pydantic-core schema for <class 'trio.Event'>\); use "
        r"JSON types \(str, int, float, bool, lists, dicts, enums, pydantic models\)$",
    ):
        describe_tools(Eventful())


def test_an_app_name_with_a_slash_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(AppDefinitionError, match=r"^.*\.name = 'a/b' is not a valid app name"):

        class Slashed(Stateless):
            name = "a/b"


# -- invoking tools: success ------------------------------------------------------------------


async def test_a_sync_tool_runs_with_its_validated_arguments_and_defaults() -> None:
    calc = Calculator()
    outcome = await invoke_tool([calc], call("add", {"a": 40}))
    assert outcome == ToolOutcome.ok("42", "40 + 2 = 42", "added")
    assert calc.calls == [(40, 2, None)]


async def test_arguments_are_converted_to_the_annotated_types_before_the_call() -> None:
    calc = Calculator()
    outcome = await invoke_tool(
        [calc], call("paint-it", {"colour": "blue", "points": [{"x": 1, "y": 2}]})
    )
    assert outcome.status is ToolStatus.OK
    assert calc.calls == [(Colour.BLUE, [Point(x=1, y=2)])]


async def test_empty_arguments_text_is_read_as_an_empty_object() -> None:
    outcome = await invoke_tool([Calculator()], call("crash", ""))
    assert outcome.live == "crash raised ValueError: division by zero somewhere"


async def test_the_first_app_offering_a_tool_name_runs_it() -> None:
    first, second = Calculator(), Calculator()
    await invoke_tool([first, second], call("add", {"a": 1}))
    assert (first.calls, second.calls) == ([(1, 2, None)], [])


# -- invoking tools: every mistake is a FAILED outcome ------------------------------------------


def failed(message: str) -> ToolOutcome:
    return ToolOutcome(ToolStatus.FAILED, message)


async def test_an_unknown_tool_fails_listing_the_available_tools() -> None:
    class Other(Stateless):
        name = "other"

        @tool
        def other_tool(self) -> ToolOutcome:
            """Other."""
            return ToolOutcome.ok("", "", "")

    outcome = await invoke_tool([Other(), Calculator()], call("subtract", {}))
    assert outcome == failed(
        "unknown tool 'subtract'; available tools: other_tool, add, paint-it, fail, crash, "
        "crash_quietly, wrong_return, wait_forever"
    )


async def test_an_unknown_tool_with_no_apps_says_there_are_none() -> None:
    outcome = await invoke_tool([], call("x", {}))
    assert outcome == failed("unknown tool 'x'; available tools: (none)")


async def test_malformed_json_arguments_fail_with_the_parsers_message() -> None:
    outcome = await invoke_tool([Calculator()], call("add", '{"a": 1'))
    assert outcome == failed(
        "arguments of add are not valid JSON: Expecting ',' delimiter: line 1 column 8 (char 7)"
    )


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ("[1, 2]", "an array"),
        ('"a"', "a string"),
        ("3", "a number"),
        ("true", "a boolean"),
        ("null", "null"),
    ],
)
async def test_arguments_that_are_not_an_object_fail_naming_what_they_are(
    arguments: str, kind: str
) -> None:
    outcome = await invoke_tool([Calculator()], call("add", arguments))
    assert outcome == failed(
        f'arguments of add must be a JSON object ({{"name": value, ...}}), got {kind}'
    )


async def test_a_missing_argument_fails_naming_the_field() -> None:
    calc = Calculator()
    outcome = await invoke_tool([calc], call("add", {"b": 1}))
    assert outcome == failed("invalid arguments for add: argument 'a': Field required")
    assert calc.calls == []


async def test_an_unknown_argument_is_rejected_by_name_listing_the_accepted_ones() -> None:
    outcome = await invoke_tool([Calculator()], call("add", {"a": 1, "c": 3}))
    assert outcome == failed(
        "invalid arguments for add: unknown argument 'c' (add takes a, b, note)"
    )


async def test_a_wrongly_typed_argument_fails_with_pydantics_reason() -> None:
    outcome = await invoke_tool([Calculator()], call("add", {"a": "forty"}))
    assert outcome == failed(
        "invalid arguments for add: argument 'a': Input should be a valid integer, unable to "
        "parse string as an integer"
    )


async def test_every_invalid_argument_is_reported_with_its_path() -> None:
    outcome = await invoke_tool(
        [Calculator()], call("paint-it", {"colour": "green", "points": [{"x": 1}]})
    )
    assert outcome == failed(
        "invalid arguments for paint-it: argument 'colour': Input should be 'red' or 'blue'; "
        "argument 'points[0].y': Field required"
    )


async def test_a_tool_failure_fails_with_exactly_its_message() -> None:
    outcome = await invoke_tool([Calculator()], call("fail", {"why": "the sky is falling"}))
    assert outcome == failed("the sky is falling")


async def test_an_exception_inside_a_tool_fails_naming_the_tool_and_exception() -> None:
    outcome = await invoke_tool([Calculator()], call("crash", {}))
    assert outcome == failed("crash raised ValueError: division by zero somewhere")


async def test_an_exception_without_a_message_is_reported_by_its_type() -> None:
    outcome = await invoke_tool([Calculator()], call("crash_quietly", {}))
    assert outcome == failed("crash_quietly raised KeyError")


async def test_a_tool_returning_a_value_that_is_not_json_fails() -> None:
    outcome = await invoke_tool([Calculator()], call("wrong_return", {}))
    assert outcome == failed(
        "wrong_return returned object, which is not text, a ToolOutcome or a value that can be "
        "written as JSON (a bug in app 'calc'); the call had no effect"
    )


async def test_a_tool_that_cannot_be_compiled_fails_instead_of_raising() -> None:
    class Unhinted(Stateless):
        name = "unhinted"

        @tool
        def vague(self, thing) -> ToolOutcome:  # type: ignore[no-untyped-def]
            """Vague."""
            return ToolOutcome.ok("", "", "")

    outcome = await invoke_tool([Unhinted()], call("vague", {"thing": 1}))
    assert outcome.status is ToolStatus.FAILED
    assert outcome.live.startswith("vague cannot be called: tool vague (")


async def test_cancellation_inside_a_tool_is_never_swallowed() -> None:
    outcomes = []
    with trio.CancelScope() as scope:
        scope.cancel()
        outcomes.append(await invoke_tool([Calculator()], call("wait_forever", {})))
    assert scope.cancelled_caught
    assert outcomes == []


# -- start_tool: the synchronous part, and the awaitable of an async tool ------------------------


class Async(Stateless):
    """Async twins of the calculator's failing tools."""

    name = "async"

    @tool
    async def fail_later(self, why: str) -> ToolOutcome:
        """Fail with a ToolFailure after a checkpoint.

        Args:
            why: The message.
        """
        await trio.lowlevel.checkpoint()
        raise ToolFailure(why)

    @tool
    async def crash_later(self) -> ToolOutcome:
        """Crash after a checkpoint."""
        await trio.lowlevel.checkpoint()
        raise ValueError("late")

    @tool
    async def wrong_later(self) -> ToolOutcome:
        """Return a lock after a checkpoint."""
        await trio.lowlevel.checkpoint()
        return trio.Lock()  # type: ignore[return-value]

    @tool
    def wrapped(self) -> ToolOutcome:
        """A sync method returning a coroutine."""
        async def later() -> ToolOutcome:
            await trio.lowlevel.checkpoint()
            return ToolOutcome.ok("wrapped", "wrapped", "wrapped")
        return later()  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("add", {"a": 1}), ("fail", {"why": "no"}), ("crash", {}), ("wrong_return", {}),
     ("nope", {}), ("add", "{oops"), ("add", {"a": "x"})],
)
def test_a_sync_tool_or_a_mistake_is_over_when_start_tool_returns(name: str, arguments: Any) -> None:
    calc = Calculator()
    started = start_tool([calc], call(name, arguments))
    assert isinstance(started, ToolOutcome)
    assert calc.calls == ([(1, 2, None)] if name == "add" and arguments == {"a": 1} else [])


async def test_start_tool_gives_what_invoke_tool_gives_for_a_sync_tool() -> None:
    for name, arguments in [("add", {"a": 40}), ("crash", {}), ("nope", {})]:
        assert start_tool([Calculator()], call(name, arguments)) == await invoke_tool(
            [Calculator()], call(name, arguments))


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("fail_later", {"why": "the sky"}, failed("the sky")),
        ("crash_later", {}, failed("crash_later raised ValueError: late")),
        ("wrong_later", {}, failed(
            "wrong_later returned Lock, which is not text, a ToolOutcome or a value that can be "
            "written as JSON (a bug in app 'async'); the call had no effect")),
        ("wrapped", {}, ToolOutcome.ok("wrapped", "wrapped", "wrapped")),
    ],
)
async def test_an_async_tool_is_an_awaitable_whose_outcome_reports_every_mistake_the_same_way(
    name: str, arguments: Any, expected: ToolOutcome
) -> None:
    started = start_tool([Async()], call(name, arguments))
    assert not isinstance(started, ToolOutcome)
    assert await started == expected
    assert await invoke_tool([Async()], call(name, arguments)) == expected


async def test_cancellation_inside_an_async_tool_started_earlier_is_never_swallowed() -> None:
    started = start_tool([Calculator()], call("wait_forever", {}))
    assert not isinstance(started, ToolOutcome)
    with trio.move_on_after(0.01) as scope:
        await started
    assert scope.cancelled_caught


# -- outcomes ---------------------------------------------------------------------------------


def test_a_failed_outcome_carries_its_message_and_no_effect_and_the_runtime_makes_its_levels() -> None:
    outcome = ToolOutcome.failed("nope")
    assert (outcome.status, outcome.live, outcome.recent, outcome.gist, outcome.effect) == (
        ToolStatus.FAILED,
        "nope",
        None,
        None,
        None,
    )
    content = outcome.to_result(call("add", {}), TokenCounter()).content
    assert (content.live.text, content.recent.text, content.gist.text) == ("nope", "nope", "add failed: nope")


def test_an_outcome_that_failed_cannot_carry_an_effect() -> None:
    with pytest.raises(
        ValueError,
        match=r"^a failed tool outcome cannot carry an effect \(NotebookEdited\): only a "
        r"successful call changes state$",
    ):
        ToolOutcome(ToolStatus.FAILED, "x", "x", "x", NotebookEdited(text=""))


def test_an_outcome_becomes_a_tool_result_with_token_counts() -> None:
    outcome = ToolOutcome.ok("hello world", "hello world", "ok")
    result = outcome.to_result(call("add", {}), TokenCounter())
    assert result == ToolResult(
        call_id="call-1",
        name="add",
        status=ToolStatus.OK,
        content=result.content,
    )
    assert (result.content.live, result.content.gist) == (
        LevelText("hello world", 2),
        LevelText("ok", 1),
    )

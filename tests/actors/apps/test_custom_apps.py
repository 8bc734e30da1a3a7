"""Defining a custom app: its effects are registered by declaring them, its defaults suffice."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from attrs import frozen

from livecontext.actors.apps import (
    App,
    AppDefinitionError,
    AppStateError,
    ToolOutcome,
    describe_tools,
    invoke_tool,
    tool,
)
from livecontext.protocol.history import ToolCall, ToolStatus
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import AppEffect, UndecodedEffect
from livecontext.protocol.wire import MessageTypeClashError, make_converter, register_message_types
from tests.support.counter import Counter, CounterAdded, CounterReset


class Greeter(App):
    """A stateless app: a name and a tool, nothing else."""

    name = "greeter"

    @tool(idempotent=True)
    def greet(self, who: str) -> str:
        """Say hello.

        Args:
            who: Whom to greet.
        """
        return f"hello, {who}"


async def test_a_stateless_app_needs_only_a_name_and_its_tools() -> None:
    app = Greeter()
    assert [spec.name for spec in describe_tools(app)] == ["greet"]
    outcome = await invoke_tool([app], ToolCall("c1", "greet", '{"who": "ann"}'))
    assert (outcome.status, outcome.live, outcome.effect) == (ToolStatus.OK, "hello, ann", None)
    assert app.window() == "[Window: greeter]\n"
    assert app.state_text() is None  # it saves no snapshots: it has nothing to save
    with pytest.raises(AppStateError, match=r"^app 'greeter' \(.*:Greeter\) loads no snapshots"):
        app.load_state("{}")


def test_an_effect_needs_no_field_naming_its_app_and_every_converter_knows_it() -> None:
    converter = make_converter()  # no extra_types: defining Counter registered its effects
    wrapped = AppEffect("counter", CounterAdded(5))
    data = converter.dump_message(wrapped)
    assert data == {"type": "AppEffect", "app": "counter", "effect": {"type": "CounterAdded", "amount": 5},
                    "source": "tests.support.counter:CounterAdded"}
    assert converter.load_message(json.loads(json.dumps(data))) == wrapped
    assert converter.load_message(converter.dump_message(CounterReset())) == CounterReset()


def test_a_converter_made_before_an_app_is_defined_reads_its_effects_once_it_is() -> None:
    converter = make_converter()
    stored = {"type": "AppEffect", "app": "late", "effect": {"type": "LateTicked", "n": 2},
              "source": "tests.somewhere:LateTicked"}
    before = converter.load_message(stored)
    assert isinstance(before, AppEffect) and isinstance(before.effect, UndecodedEffect)

    @frozen
    class LateTicked(Message):
        n: int

    class Late(App):
        name = "late"
        effects = (LateTicked,)

        def apply(self, effect: Message) -> None:
            super().apply(effect)

    assert converter.load_message(stored) == AppEffect("late", LateTicked(2), "tests.somewhere:LateTicked")


def test_two_effect_classes_with_one_tag_are_refused_naming_both() -> None:
    @frozen
    class CounterAdded(Message):  # the tag of tests.support.counter's CounterAdded
        amount: int

    with pytest.raises(AppDefinitionError) as info:
        class OtherCounter(App):
            name = "other-counter"
            effects = (CounterAdded,)

            def apply(self, effect: Message) -> None:
                super().apply(effect)

    here = "test_two_effect_classes_with_one_tag_are_refused_naming_both.<locals>"
    assert str(info.value) == (
        f"{here}.OtherCounter.effects: two message classes share the tag 'CounterAdded': "
        f"tests.support.counter:CounterAdded and {__name__}:{here}.CounterAdded; "
        "the log stores a message by its class name alone, so rename one of them")
    with pytest.raises(MessageTypeClashError, match=r"share the tag 'CounterAdded'"):
        register_message_types([CounterAdded])


def test_a_class_of_the_same_module_and_name_defined_again_replaces_the_first() -> None:
    def define() -> type[Message]:
        @frozen
        class Redefined(Message):  # a notebook cell run twice makes such a class twice
            n: int

        register_message_types([Redefined])
        return Redefined

    first, second = define(), define()
    assert first is not second
    assert make_converter().load_message({"type": "Redefined", "n": 1}) == second(1)


def test_a_tag_of_the_protocol_cannot_be_taken_by_an_effect() -> None:
    @frozen
    class Tail(Message):
        n: int

    with pytest.raises(AppDefinitionError, match=r"share the tag 'Tail': livecontext\.protocol\._agent:Tail and "):
        class Thief(App):
            name = "thief"
            effects = (Tail,)

            def apply(self, effect: Message) -> None:
                super().apply(effect)


@pytest.mark.parametrize(
    ("effects", "message"),
    [
        ([CounterAdded], r"^Broken\.effects must be a tuple of effect classes, got \[<class "),
        ((dict,), r"^Broken\.effects: <class 'dict'> cannot be written to the log: make it a @frozen attrs "
                  r"class subclassing livecontext\.protocol\.kernel\.Message$"),
    ],
)
def test_effects_that_cannot_be_logged_are_refused_when_the_app_is_defined(effects: object, message: str) -> None:
    with pytest.raises(AppDefinitionError, match=message):
        type("Broken", (App,), {"name": "broken", "effects": effects, "apply": Counter.apply})


def test_an_app_that_declares_effects_without_apply_is_refused() -> None:
    with pytest.raises(AppDefinitionError, match=r"^test_.*\.Forgetful declares effects \(CounterAdded\) but no apply\(\): "
                                                 r"fold them into the state there$"):
        class Forgetful(App):
            name = "forgetful"
            effects = (CounterAdded,)


@pytest.mark.parametrize("has", ["state_text", "load_state"])
def test_an_app_that_saves_its_state_must_load_it_and_the_other_way_round(has: str) -> None:
    lacks = "load_state" if has == "state_text" else "state_text"
    body = {"name": "half", has: lambda self, *args: None}
    with pytest.raises(AppDefinitionError, match=rf"^Half overrides {has} but not {lacks}: an app that saves "
                                                 r"its state must load it too"):
        type("Half", (App,), body)


def test_a_snapshot_interval_below_one_is_refused() -> None:
    with pytest.raises(AppDefinitionError, match=r"^Hasty\.snapshot_every = 0: give a number of effects >= 1$"):
        type("Hasty", (App,), {"name": "hasty", "snapshot_every": 0})


async def test_a_tool_returning_an_effect_its_app_does_not_declare_fails_and_commits_nothing() -> None:
    @frozen
    class Stray(Message):
        pass

    class Sloppy(App):
        name = "sloppy"

        @tool
        def act(self) -> ToolOutcome:
            """Act."""
            return ToolOutcome.ok("done", effect=Stray())

    outcome = await invoke_tool([Sloppy()], ToolCall("c1", "act", "{}"))
    assert outcome.status is ToolStatus.FAILED and outcome.effect is None
    assert outcome.live == ("act returned a Stray effect, which app 'sloppy' does not declare (a bug in the app: "
                            "add it to test_a_tool_returning_an_effect_its_app_does_not_declare_fails_and_commits_"
                            "nothing.<locals>.Sloppy.effects); the call had no effect")


def test_an_effect_of_an_unknown_class_is_kept_as_stored_and_written_back_unchanged() -> None:
    converter = make_converter()
    stored = {"type": "AppEffect", "app": "far", "effect": {"type": "FarAway", "x": [1, {"y": "z"}]},
              "source": "elsewhere.apps:FarAway"}
    effect = converter.load_message(stored)
    assert isinstance(effect, AppEffect) and effect.effect == UndecodedEffect(
        "FarAway", '{"type":"FarAway","x":[1,{"y":"z"}]}')
    assert converter.dump_message(effect) == stored
    assert effect.import_hint() == "import elsewhere.apps to decode it"


def test_the_example_of_docs_apps_md_runs_and_its_counter_holds_the_fold_of_its_effects(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "apps.md").read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", text, re.S)[0]  # (the first: the second is of tools with side effects)
    done = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "{'counter': 'total: 18'}\n"  # (10, its constructor's start, then 5 and 3)

"""Apps made with constructor arguments keep them: a restart, a resumed thread and
``render`` make them again with the same arguments, without the app's author writing a
``fresh()``; one that cannot be made again is said in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import livecontext
from livecontext import App, AppDefinitionError
from livecontext.runtime.models import ScriptedModel
from tests.support.inventory import Inventory


def stock(*items: str) -> ScriptedModel:
    """A model that stocks each item in turn (a resumed thread goes on from its next turn)."""
    return ScriptedModel.from_turns([
        turn for item in items
        for turn in ({"tool_calls": [{"name": "stock", "arguments": json.dumps({"item": item})}]},
                     {"text": "stocked"})])


def window(rendered: livecontext.Agent | object) -> str:
    text = rendered.messages[-1].content  # type: ignore[attr-defined]
    return text[text.index("[Window: inventory]"):]


async def test_an_app_with_a_required_argument_keeps_it_in_its_window_and_after_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'lc.db'}"
    async with livecontext.open_agent(apps=[Inventory(warehouse="north")], model=stock("bolts"), store=url) as agent:
        await agent.send("stock bolts")
        assert window(await agent.render()) == "[Window: inventory]\nwarehouse north: bolts"
    async with livecontext.open_agent(store=url, model=stock("bolts", "nuts")) as agent:  # its apps as recorded
        await agent.send("stock nuts")
        assert window(await agent.render()) == "[Window: inventory]\nwarehouse north: bolts, nuts"


def test_fresh_makes_the_app_again_with_the_arguments_it_was_made_with_positional_or_not() -> None:
    for app in (Inventory("south"), Inventory(warehouse="south")):
        again = app.fresh()
        assert isinstance(again, Inventory) and again.warehouse == "south" and again is not app
        assert app.options() == {"warehouse": "south"}


def test_arguments_that_are_not_json_data_are_kept_for_fresh_but_not_recorded() -> None:
    shelf = object()
    app = Inventory(warehouse=shelf)  # type: ignore[arg-type]
    assert app.fresh().warehouse is shelf and app.options() is None


class Once(App):
    """An app whose constructor refuses to run twice."""

    name = "once"
    made = 0

    def __init__(self, key: str) -> None:
        type(self).made += 1
        if type(self).made > 1:
            raise RuntimeError("the key was used already")


async def test_an_app_that_cannot_be_made_again_is_said_in_one_line_naming_its_class() -> None:
    Once.made = 0
    with pytest.raises(AppDefinitionError, match=(
            r"^app 'once' \((tests\.front\.)?test_app_arguments:Once\) cannot be made again with the arguments "
            r"it was made with: RuntimeError: the key was used already; make its constructor accept them "
            r"again, or override fresh\(\) to return a new instance$")):
        async with livecontext.open_agent(apps=[Once("k")], model="echo", store="memory:"):
            pass


async def test_agent_state_gives_a_custom_apps_state_text() -> None:
    async with livecontext.open_agent(apps=[Inventory("north")], model=stock("bolts"), store="memory:") as agent:
        await agent.send("stock bolts")
        assert (await agent.state()).apps == {"inventory": '{"items": ["bolts"]}'}

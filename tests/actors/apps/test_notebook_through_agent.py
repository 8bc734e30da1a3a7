"""The Memory Notebook driven by a (scripted) model through the engine, its app host and its log."""

from __future__ import annotations

from typing import Any

from livecontext.actors.apps import Notebook
from livecontext.protocol.agent import GetWindows, IdleReason, Windows
from livecontext.protocol.history import ToolResultsEntry, ToolStatus
from livecontext.protocol.records import NotebookEdited
from tests.support.agent_harness import AgentHarness, ProbeModel, open_agent, scripted


def replace(old: str, new: str) -> dict[str, Any]:
    return {"name": "notebook_replace", "arguments": {"old_text": old, "new_text": new}}


def span(start: str, end: str, new: str) -> dict[str, Any]:
    return {"name": "notebook_replace_span", "arguments": {"start_anchor": start, "end_anchor": end, "new_text": new}}


async def results(h: AgentHarness) -> list[tuple[ToolStatus, str]]:
    return [(r.status, r.content.live.text) for e in await h.entries()
            if isinstance(e, ToolResultsEntry) for r in e.results]


async def committed_text(h: AgentHarness) -> str:
    effects = await h.effects()
    assert all(isinstance(e, NotebookEdited) for e in effects)
    return effects[-1].text if effects else ""  # type: ignore[attr-defined]


async def window(h: AgentHarness) -> str:
    got = await h.client.ask(h.agent.apps, GetWindows())
    assert isinstance(got, Windows)
    return got.text


async def test_scripted_edits_change_the_notebook_and_its_committed_state_matches() -> None:
    turns = [
        {"tool_calls": [replace("", "# Plan\n- eggs\n- milk\nwhen: noon")]},
        {"tool_calls": [replace("- milk", "- milk\n- bread"), span("when:", "noon", "when: 1 pm")]},
        {"text": "done"},
    ]
    model = ProbeModel(scripted(turns))
    async with open_agent(model=model, inputs=["make a plan"], apps=[Notebook()]) as h:
        idle = await h.run_until_idle()
        assert idle.reason is IdleReason.NO_INPUT
        expected = "# Plan\n- eggs\n- milk\n- bread\nwhen: 1 pm"
        assert await committed_text(h) == expected
        assert await window(h) == f"[Window: notebook]\n{expected}"
        got = await results(h)
        assert [status for status, _ in got] == [ToolStatus.OK] * 3
        assert got[-1][1] == expected  # LIVE: the whole new text
        last = [e for e in await h.entries() if isinstance(e, ToolResultsEntry)][-1]
        assert last.results[0].content.recent.text.startswith("--- notebook (before)")  # RECENT: a diff
        assert last.results[1].content.gist.text == "notebook edited: 39 -> 39 chars (+0)"  # GIST: one line
    # the model saw the window with the new text in its latest observation
    assert model.requests[-1].messages[-1].content.endswith(f"[Window: notebook]\n{expected}")


async def test_failed_edits_leave_the_notebook_unchanged_and_tell_the_model_why() -> None:
    turns = [
        {"tool_calls": [replace("", "a b a")]},
        {"tool_calls": [
            replace("zzz", "x"),
            replace("a", "x"),
            replace("", "overwrite"),
            span("nope", "b", "x"),
            span("a b", "zzz", "x"),
            {"name": "notebook_replace", "arguments": {"old_text": "a b"}},
        ]},
        {"text": "I could not edit it"},
    ]
    async with open_agent(turns, inputs=["edit"], apps=[Notebook()]) as h:
        await h.run_until_idle()
        assert await committed_text(h) == "a b a"
        assert await window(h) == "[Window: notebook]\na b a"
        failures = (await results(h))[1:]
        assert all(status is ToolStatus.FAILED for status, _ in failures)
        messages = [text for _, text in failures]
        assert messages[0].startswith("old_text not found in the notebook")
        assert messages[1].startswith("old_text occurs 2 times; include more surrounding text")
        assert messages[2].startswith("old_text is empty but the notebook is not")
        assert messages[3].startswith("start_anchor not found in the notebook")
        assert messages[4].startswith("end_anchor not found after start_anchor")
        assert "new_text" in messages[5] and "invalid arguments for notebook_replace" in messages[5]


async def test_run_json_apps_show_the_committed_notebook() -> None:
    # the same state, read the way `livecontext run --json` reads it
    from livecontext.actors.agent._format import apps_json

    async with open_agent([{"tool_calls": [replace("", "noted")]}, {"text": "ok"}], inputs=["note"],
                          apps=[Notebook()]) as h:
        await h.run_until_idle()
        assert apps_json(await h.app_histories()) == {"notebook": "noted"}

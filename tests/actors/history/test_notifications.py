"""Notifications ride on the next observation exactly once, and survive a failed model call."""

from __future__ import annotations

from collections import Counter

from livecontext.protocol.history import EngineState, HistoryEntry, ModelInputEntry, Role, ToolResultsEntry
from tests.support.agent_harness import ProbeApp, ProbeModel, open_agent, scripted

S = EngineState
RECORD = {"name": "record", "arguments": {"label": "x"}}


def delivered(entries: tuple[HistoryEntry, ...]) -> Counter[str]:
    """How many times each notification id was delivered, over the whole history."""
    return Counter(n.id for e in entries for n in getattr(e, "notifications", ()))


async def test_a_notification_rides_on_the_next_model_input_exactly_once() -> None:
    model = ProbeModel(scripted([{"text": "one"}, {"text": "two"}]))
    async with open_agent(model=model, inputs=["a", "b"]) as h:
        posted = await h.notify("the build is green")
        assert posted.notification.id == "n1"
        assert str(posted.notification.sender) == "client/test"
        await h.run_until_idle()
        entries = await h.entries()
        first = entries[0]
        assert isinstance(first, ModelInputEntry)
        assert [n.id for n in first.notifications] == ["n1"]
        assert "the build is green" in first.content.live.text
        assert "notification" in first.content.gist.text
        assert delivered(entries) == {"n1": 1}
    # the model read it once, on the call after it was delivered, and it stayed in place after
    for request in model.requests:
        assert sum("the build is green" in m.content for m in request.messages) == 1


async def test_a_notification_posted_while_tools_run_rides_on_the_tool_results() -> None:
    async with open_agent([{"tool_calls": [RECORD]}, {"text": "done"}], inputs=["go"],
                          apps=[ProbeApp()]) as h:
        await h.step()
        await h.step()
        assert (await h.tail()).state is S.WAITING_TOOL_RESULTS
        await h.notify("disk almost full")
        await h.run_until_idle()
        entries = await h.entries()
        results = entries[2]
        assert isinstance(results, ToolResultsEntry)
        assert [n.text for n in results.notifications] == ["disk almost full"]
        assert delivered(entries) == {"n1": 1}
        rendered = await h.render(8000)
        notes = [m for m in rendered.messages if "disk almost full" in m.content]
        assert len(notes) == 1 and notes[0].role is Role.USER


async def test_a_notification_survives_a_failed_model_call_and_is_delivered_once_afterwards() -> None:
    turns = [{"text": "first", "fail": {"error": "timeout", "times": 3}}, {"text": "second"}]
    async with open_agent(turns, inputs=["a", "b"]) as h:
        await h.step()  # input a: PendingInput
        await h.notify("posted while pending")
        failed = await h.step()  # three attempts, all fail
        assert failed.error and not failed.progressed
        assert (await h.tail()).state is S.PENDING_INPUT
        assert delivered(await h.entries()) == {}
        ok = await h.step()  # the retry succeeds: an output, which carries no notifications
        assert ok.to_state is S.WAITING_INPUT
        assert delivered(await h.entries()) == {}
        await h.run_until_idle()  # input b carries it
        entries = await h.entries()
        assert delivered(entries) == {"n1": 1}
        carrier = entries[2]
        assert isinstance(carrier, ModelInputEntry) and carrier.text == "b"


async def test_several_notifications_are_each_delivered_once_in_order() -> None:
    async with open_agent([{"tool_calls": [RECORD]}, {"text": "done"}, {"text": "again"}],
                          inputs=["go", "more"], apps=[ProbeApp()]) as h:
        await h.notify("one")
        await h.notify("two")
        await h.step()  # the input carries n1 and n2
        await h.notify("three")
        await h.run_until_idle()  # the tool results carry n3; the second input none
        entries = await h.entries()
        assert delivered(entries) == {"n1": 1, "n2": 1, "n3": 1}
        assert [n.id for n in entries[0].notifications] == ["n1", "n2"]  # type: ignore[union-attr]
        assert [n.id for n in entries[2].notifications] == ["n3"]  # type: ignore[union-attr]
        assert entries[4].notifications == ()  # type: ignore[union-attr]


async def test_a_notification_with_no_text_is_refused() -> None:
    import pytest

    from livecontext.runtime import RemoteActorError

    async with open_agent([]) as h:
        with pytest.raises(RemoteActorError, match="a notification needs text"):
            await h.notify("   ")

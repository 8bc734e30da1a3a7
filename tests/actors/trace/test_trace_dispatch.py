"""The trace of a thread whose step was cut by an interrupt and whose task was terminated: an
ask to the history store and a mark for each, naming who gave the input."""

from __future__ import annotations

from pathlib import Path

import trio

from livecontext.actors.trace import MarkType
from livecontext.protocol.agent import InputMode, ProvideInput
from tests.actors.trace._runs import trace
from tests.support.agent_harness import Probe, ProbeApp, open_agent


async def _cut_then_terminated(store: str) -> None:
    probe = Probe()
    turns = [{"tool_calls": [{"name": "slow", "arguments": {"seconds": 3600}}]}, {"text": "ok"}]
    async with open_agent(turns, inputs=["go"], apps=[ProbeApp(probe)], store=store) as h:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run_until_idle)
            await probe.started.wait()
            await h.client.ask(h.agent.input, ProvideInput("stop", mode=InputMode.INTERRUPT))
        await h.client.ask(h.agent.input, ProvideInput("enough", mode=InputMode.TERMINATE))


def test_a_cut_step_and_a_termination_are_asks_and_marks_that_name_who(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'd.db'}"

    trio.run(_cut_then_terminated, store)  # (the tool would sleep an hour: the interrupt cuts it)
    got = trace(store, "t1")
    said = {(m.kind, m.summary) for m in got.messages if m.receiver == "history/t1"}
    assert ("RecordInterruption", "tool slow (call call_0_0) interrupted by client/test") in said
    assert ("RecordTermination", "task terminated by client/test: enough") in said
    marks = [(m.type, m.author, m.summary) for m in got.marks if m.type is MarkType.PAUSE]
    assert marks == [(MarkType.PAUSE, "engine/t1", "tool slow (call call_0_0) interrupted by client/test"),
                     (MarkType.PAUSE, "engine/t1", "task terminated by client/test: enough")]

"""A user's test of a system of agents under many interleavings: alice and bob each leave a
question on a shared desk and ask the oracle (examples/explore). Each seed schedules the
agents' messages in another order; whichever way the two asks cross, no question may be lost.
A seed that fails prints the command that runs it alone, the same way every time."""

from pathlib import Path

import pytest

from livecontext.protocol.history import ModelOutputEntry, ToolResultsEntry

DESK = Path(__file__).resolve().parent.parent / "explore" / "desk-fixed.toml"


@pytest.mark.lc_seeds(200)
async def test_no_question_is_lost_whichever_way_the_asks_cross(lc_system, lc_seed):
    system = await lc_system(DESK)
    run = await system.run_inputs()
    assert all(answer.reason == "no_input" for answer in run.answers.values()), run.answers
    entries = {agent.name: agent.entries for agent in (await system.status()).agents}
    left = [call.arguments for found in entries.values() for entry in found
            if isinstance(entry, ModelOutputEntry) for call in entry.tool_calls if call.name == "leave_question"]
    taken = " ".join(result.content.live.text for entry in entries["oracle"]
                     if isinstance(entry, ToolResultsEntry) for result in entry.results)
    lost = [question for question in left if question.split('"question": ')[-1].strip('"}') not in taken]
    assert len(left) == 2 and not lost, f"questions lost on the desk: {lost}"

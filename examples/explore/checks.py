"""The invariant of examples/explore/desk.toml, for ``livecontext explore --check checks:every_question_answered``."""

from __future__ import annotations

from livecontext.protocol.history import ModelOutputEntry, ToolResultsEntry


def every_question_answered(outcome) -> None:  # type: ignore[no-untyped-def]
    """Every question an agent left on the desk was taken by the oracle (none lost)."""
    left = []
    for agent in outcome.agents.values():
        for entry in agent.entries:
            if isinstance(entry, ModelOutputEntry):
                left += [c.arguments for c in entry.tool_calls if c.name == "leave_question"]
    taken = [r.content.live.text for e in outcome.agents["oracle"].entries
             if isinstance(e, ToolResultsEntry) for r in e.results if r.name == "take_question"]
    lost = [q for q in left if not any(_question(q) in t for t in taken)]
    assert not lost, f"questions left on the desk and never taken by the oracle: {lost}"


def _question(arguments: str) -> str:
    import json

    return json.loads(arguments)["question"]

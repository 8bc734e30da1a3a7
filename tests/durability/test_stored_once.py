"""Each text of a step is stored once: a tool's output is in one record, whatever its levels."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path
from typing import ClassVar

from livecontext.actors import AgentSettings
from livecontext.actors.apps import App, ToolOutcome, tool
from livecontext.actors.agent._session import open_session, run_until_idle
from livecontext.actors.history import load_state
from livecontext.protocol.history import ToolResultsEntry
from livecontext.protocol.wire import make_converter
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import open_store
from livecontext.runtime.persistence.sqlite._compression import DICTIONARY


from tests.support.command import url_for

FILLER = [f"src/pkg/mod_{n}.py:{n * 7}:    return helper(value_{n}, config)" for n in range(80)]
"""Output lines (80 of them: far more than a RECENT excerpt keeps)."""
OUTPUTS = {
    # a short output is its own RECENT
    "short": "MARKER-short-7f3a ran here\n3 passed in 0.10s",
    # a long one: RECENT keeps its head and tail lines, the middle is elided
    "head": "\n".join(["MARKER-head-91c2 first line", *FILLER, "1 failed, 9 passed in 2.00s"]),
    "middle": "\n".join([*FILLER[:40], "MARKER-middle-0b8e here", *FILLER[40:], "2 passed in 1.00s"]),
    "tail": "\n".join([*FILLER, "MARKER-tail-c4d1 near the end", "4 passed in 3.00s"]),
}


class Shell(App):
    """``bash`` returns the prepared output named by its command, as plain text."""

    name = "shell"
    ran: ClassVar[list[str]] = []

    @tool(idempotent=True)
    def bash(self, command: str) -> ToolOutcome:
        """Run a command.

        Args:
            command: Which prepared output to print.
        """
        return ToolOutcome.ok(OUTPUTS[command])


def stored_payloads(backend: str, root: Path) -> str:
    """Every record's payload as stored (JSONL: the records file as it is on disk; SQLite:
    each payload's text, decompressed by zlib with the store's dictionary if a BLOB)."""
    if backend == "sqlite":
        with sqlite3.connect(root / "store.db") as conn:
            payloads = [p for (p,) in conn.execute("SELECT payload FROM records")]
        # the long outputs are stored compressed: the markers are counted in what zlib gives back
        assert sum(isinstance(p, bytes) for p in payloads) >= len(OUTPUTS)
        return "\n".join(zlib.decompressobj(zdict=DICTIONARY).decompress(p).decode() if isinstance(p, bytes)
                         else p for p in payloads)
    return (root / "store" / "t" / "records.jsonl").read_text(encoding="utf-8")


async def test_a_tool_results_text_is_stored_once_at_every_level_and_read_back_whole(
        backend: str, tmp_path: Path) -> None:
    url = url_for(backend, tmp_path)
    turns = [{"text": "one call per output", "tool_calls": [{"name": "bash", "arguments": {"command": name}}]}
             for name in OUTPUTS]
    turns.append({"text": "two calls in one output", "tool_calls": [
        {"name": "bash", "arguments": {"command": "short"}}, {"name": "bash", "arguments": {"command": "tail"}}]})
    turns.append({"text": "done"})
    async with open_session(url, AgentSettings(thread_id="t"), "scripted", inputs=("go",),
                            model=ScriptedModel.from_turns(turns), apps=[Shell()]) as s:
        await run_until_idle(s, None)
    stored = stored_payloads(backend, tmp_path)
    for name in OUTPUTS:
        marker = f"MARKER-{name}-"
        assert OUTPUTS[name].count(marker) == 1
        # once per call that printed it: "short" and "tail" ran twice
        assert stored.count(marker) == (2 if name in ("short", "tail") else 1), name
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            state = await load_state(reader, make_converter(), "t")
    results = [r for e in state.entries if isinstance(e, ToolResultsEntry) for r in e.results]
    assert [r.content.live.text for r in results] == [*OUTPUTS.values(), OUTPUTS["short"], OUTPUTS["tail"]]
    assert results[0].content.recent == results[0].content.live
    for r in results[1:4]:  # each long output's RECENT is its head and tail, shorter than it
        text = r.content.recent.text
        assert "elided" in text and len(text) < len(r.content.live.text)
        assert r.content.live.text.startswith(text.split("\n")[0]) and r.content.live.text.endswith(text.split("\n")[-1])

"""A sub-agent's thread lives in its parent's store, shows in ``threads`` and ``audit`` with its
parent, and resumes where it stopped when its parent's process is killed with SIGKILL mid-run.

A real process runs a parent agent (scripted) whose first turn spawns a sub-agent; the
sub-agent makes 8 notebook edits, 0.1 s of model latency each, then answers. The process is
killed while the sub-agent works, then the same script is run again to its end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from livecontext.actors.agent._format import apps_json
from livecontext.protocol.history import EngineState, ModelInputEntry, ModelOutputEntry, ToolResultsEntry

from tests.support.command import json_lines, notebook_turns, read_thread, run_cli, run_or_kill, write_script

SUB = "main/sub/call_0_0"
"""The sub-agent spawned by the parent's first model output's first call."""
EDITS = 8

PARENT_PROCESS = textwrap.dedent('''
    import json, sys, trio
    from livecontext.actors import AgentSettings, SubAgents
    from livecontext.actors.apps import Notebook
    from livecontext.actors.agent._session import open_session, run_until_idle
    from livecontext.runtime.models import ScriptedModel

    store, parent_script, sub_script = sys.argv[1:4]

    async def main() -> None:
        apps = [Notebook(), SubAgents(lambda: ScriptedModel.from_file(sub_script), timeout_s=60)]
        async with open_session(store, AgentSettings(thread_id="main"), f"scripted:{parent_script}",
                                inputs=["delegate the lines"], apps=apps) as session:
            idle = await run_until_idle(session, None)
            print(json.dumps({"reason": idle.reason.value, "summary": await session.summary()}))

    trio.run(main)
''')


async def run_parent(root: Path, url: str, *, kill_when_sub_has: int | None) -> subprocess.CompletedProcess[str] | None:
    """Run the parent's process; with ``kill_when_sub_has``, SIGKILL it once the sub-agent's
    thread has that many entries (None: it was killed)."""
    command = [sys.executable, "-c", PARENT_PROCESS, url, str(root / "parent.json"), str(root / "sub.json")]

    async def sub_has_enough() -> bool:
        state = await read_thread(url, SUB)
        return state is not None and len(state.entries) >= (kill_when_sub_has or 0)

    return await run_or_kill(command, root, sub_has_enough if kill_when_sub_has is not None else None)


async def test_a_sub_agent_killed_with_its_parent_resumes_where_it_stopped(tmp_path: Path) -> None:
    write_script(tmp_path / "parent.json", [
        {"tool_calls": [{"name": "spawn_subagent", "arguments": {"task": "write the lines"}}]},
        {"text": "the sub-agent did it"}])
    write_script(tmp_path / "sub.json", notebook_turns(EDITS, delay_s=0.1))
    url = f"sqlite:{tmp_path / 'store.db'}"

    assert await run_parent(tmp_path, url, kill_when_sub_has=5) is None
    parent, sub = await read_thread(url, "main"), await read_thread(url, SUB)
    assert parent is not None and sub is not None
    assert parent.state is EngineState.WAITING_TOOL_RESULTS  # its spawn_subagent call never returned
    assert not any(isinstance(e, ModelOutputEntry) and e.content.live.text.startswith("done") for e in sub.entries)
    kept = [e.id for e in sub.entries]

    done = await run_parent(tmp_path, url, kill_when_sub_has=None)
    assert done is not None and done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reason"] == "no_input"
    parent, sub = await read_thread(url, "main"), await read_thread(url, SUB)
    assert parent is not None and sub is not None
    (result,) = [r for e in parent.entries if isinstance(e, ToolResultsEntry) for r in e.results]
    assert (result.name, result.content.live.text) == ("spawn_subagent", f"done: {EDITS} lines")
    assert parent.entries[-1].content.live.text == "the sub-agent did it"
    # resumed, not started over: the entries before the kill are still its first, the task was
    # fed once, and the notebook holds each line once
    assert [e.id for e in sub.entries][: len(kept)] == kept
    assert [e.text for e in sub.entries if isinstance(e, ModelInputEntry)] == ["write the lines"]
    assert apps_json(sub.app_histories())["notebook"] == "\n".join(f"line {k}" for k in range(EDITS))

    listed = json_lines((await run_cli("threads", "--store", url, "--json")).stdout)
    assert [(t["thread"], t["parent"]) for t in listed] == [("main", None), (SUB, "main")]
    audit = json_lines((await run_cli("audit", "--store", url, "--thread", SUB, "--json")).stdout)
    assert audit and all(line["parent"] == "main" for line in audit)
    assert {line["sender"] for line in audit} == {f"engine/{SUB}", f"history/{SUB}"}
    parent_audit = json_lines((await run_cli("audit", "--store", url, "--thread", "main", "--json")).stdout)
    assert any(f"sub-agent {SUB} answered" in line["summary"] for line in parent_audit)

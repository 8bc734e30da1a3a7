"""A system of agents killed with SIGKILL in the middle of a run resumes as a whole when run again:
every agent ends as in a run never killed, each message delivered once, each question asked once.

A real process runs ``livecontext run team.toml`` (the team of tests/support/systems.py:
the planner tells the critic something, asks the researcher, who asks the critic while the
planner waits, then asks the critic itself; each model turn takes 0.15 s). It is killed when
the store shows it at a given point, then the same command is run again to its end, and
compared with the same team run in this process, never killed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from livecontext.actors import open_system
from livecontext.actors.history import HistoryState
from livecontext.protocol.agent import NotificationPosted
from livecontext.protocol.history import ModelInputEntry, ModelOutputEntry, ToolResultsEntry
from livecontext.runtime.persistence import open_store

from tests.support.systems import AGENTS, payloads, records, transcript, write_team

from tests.support.command import LIVECONTEXT, read_thread, run_cli, run_or_kill


def inputs(state: HistoryState | None) -> int:
    return 0 if state is None else sum(isinstance(e, ModelInputEntry) for e in state.entries)


def outputs(state: HistoryState | None) -> int:
    return 0 if state is None else sum(isinstance(e, ModelOutputEntry) for e in state.entries)


def results(state: HistoryState | None) -> int:
    return 0 if state is None else sum(isinstance(e, ToolResultsEntry) for e in state.entries)


KILL_POINTS = {
    # the planner waits for the researcher, which has read the question and is thinking
    "the researcher answers the planner": ("team.researcher", lambda s: inputs(s) >= 1),
    # the planner waits for the researcher, which waits for the critic, which is thinking
    "the critic answers the researcher": ("team.critic", lambda s: inputs(s) >= 1),
    # both questions answered: the planner is thinking about its notebook
    "the planner writes its plan": ("team.planner", lambda s: results(s) >= 3),
}
HELD = {  # the model turn in progress at each kill point, held until the kill (see write_team)
    "the researcher answers the planner": ("researcher", 0),
    "the critic answers the researcher": ("critic", 0),
    "the planner writes its plan": ("planner", 3),
}


async def run_team(root: Path, url: str, *, kill_when: str | None) -> dict[str, Any] | None:
    """``livecontext run team.toml --json``; with ``kill_when`` (a key of KILL_POINTS), SIGKILL
    it once the store shows that point (``None``: it was killed)."""
    command = [*LIVECONTEXT, "run", str(root / "team.toml"), "--store", url, "--json"]

    async def reached() -> bool:  # (the scribe, alone, is done by then: it must not answer again)
        thread, point = KILL_POINTS[kill_when or ""]
        return bool(point(await read_thread(url, thread)) and outputs(await read_thread(url, "team.scribe")))

    done = await run_or_kill(command, root, reached if kill_when is not None else None, poll_s=0.01)
    if done is None:
        return None
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


async def team_state(url: str, system: str = "team") -> dict[str, Any]:
    """Each agent's transcript, and the notes each received (by key)."""
    out: dict[str, Any] = {}
    async with await open_store(url) as store:
        for name in AGENTS:
            state = await read_thread(url, f"{system}.{name}")
            assert state is not None
            notes = [m.notification.key for _, m in payloads(await records(store, f"{system}.{name}"))
                     if isinstance(m, NotificationPosted)]
            out[name] = (transcript(state.entries), notes)
    return out


@pytest.mark.parametrize("kill_when", list(KILL_POINTS))
async def test_a_system_killed_mid_run_resumes_as_a_whole_and_ends_as_a_run_never_killed(
        kill_when: str, tmp_path: Path) -> None:
    (tmp_path / "whole").mkdir()
    (tmp_path / "killed").mkdir()
    whole_url, killed_url = f"sqlite:{tmp_path / 'whole.db'}", f"sqlite:{tmp_path / 'killed.db'}"
    async with open_system(write_team(tmp_path / "whole"), store=whole_url) as system:  # never killed
        await system.run_inputs()
    write_team(tmp_path / "killed", delay_s=0.15, hold=HELD[kill_when])

    assert await run_team(tmp_path / "killed", killed_url, kill_when=kill_when) is None
    planner = await read_thread(killed_url, "team.planner")
    assert planner is not None and not any(  # killed before the planner's last word
        isinstance(e, ModelOutputEntry) and e.content.live.text == "The plan is in my notebook."
        for e in planner.entries)
    kept = {name: await read_thread(killed_url, f"team.{name}") for name in AGENTS}

    write_team(tmp_path / "killed", delay_s=0.15)  # the held turn no longer waits
    done = await run_team(tmp_path / "killed", killed_url, kill_when=None)
    assert done is not None
    assert [(a["name"], a["status"]) for a in done["agents"]] == [(name, "waiting_user") for name in AGENTS]
    assert done["agents"][0]["apps"]["notebook"] == "Alfama, Belem, Sintra"
    resumed, whole = await team_state(killed_url), await team_state(whole_url)
    assert resumed == whole
    # and resumed, not started over: what each agent had before the kill is still its beginning
    for name, state in kept.items():
        before = [e.id for e in state.entries] if state is not None else []
        after = await read_thread(killed_url, f"team.{name}")
        assert after is not None and [e.id for e in after.entries][: len(before)] == before
    # every record of the resumed system is stamped, each thread's stamps increasing past the kill
    for name in AGENTS:
        audit = [json.loads(line) for line in (await run_cli("audit", "--store", killed_url, "--thread",
                                                             f"team.{name}", "--json")).stdout.splitlines()]
        stamps = [line["system_seq"] for line in audit]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), name

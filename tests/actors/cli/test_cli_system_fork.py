"""``livecontext fork --system NAME --at SYSTEM_SEQ --new-system NAME2`` and ``run SYSTEM.toml
--as NAME2``: the team example forked in the middle of a question runs on to the original's end;
bad input is one line and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from livecontext.actors.cli import main

ROOT = Path(__file__).resolve().parents[3]
TEAM = str(ROOT / "examples" / "team.toml")


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def ok_json(*args: str) -> Any:
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def lines(*args: str) -> list[Any]:
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def agents(run: dict[str, Any]) -> list[tuple[str, str, str, list[str]]]:
    return [(a["name"], a["thread"], a["status"], [e["levels"]["live"] for e in a["entries"]]) for a in run["agents"]]


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A store where the team example ran once."""
    url = f"sqlite:{tmp_path / 'team.db'}"
    ok_json("run", TEAM, "--store", url, "--json")
    return url


def test_audit_lines_of_a_systems_threads_carry_their_system_seq(store: str) -> None:
    seen = {t: [line["system_seq"] for line in lines("audit", "--store", store, "--thread", t, "--json")]
            for t in ("system:team", "team.planner", "team.researcher", "team.critic")}
    assert seen["system:team"][0] == 1  # its declaration, then its run of inputs, begun and done
    assert [line["kind"] for line in lines("audit", "--store", store, "--thread", "system:team", "--json")] == [
        "SystemDeclared", "InputsGiven", "InputsDone"]
    every = sorted(s for stamps in seen.values() for s in stamps)
    assert every == list(range(1, len(every) + 1))
    declared = lines("audit", "--store", store, "--thread", "system:team", "--json")[0]
    assert declared["summary"] == ("system team: agents planner (team.planner), researcher (team.researcher), "
                                   "critic (team.critic)")


def test_a_system_forked_mid_question_runs_as_its_new_name_to_the_originals_end(store: str) -> None:
    original = [[e["levels"]["live"] for e in ok_json("history", "--store", store, "--thread", f"team.{name}", "--json")["entries"]]
                for name in ("planner", "researcher", "critic")]
    researcher = lines("audit", "--store", store, "--thread", "team.researcher", "--json")
    asked = next(line["system_seq"] for line in researcher if line["kind"] == "NotificationPosted")
    made = ok_json("fork", "--store", store, "--system", "team", "--at", str(asked), "--new-system", "team2")
    assert (made["system"], made["forked_from"], made["at"]) == ("team2", "team", asked)
    assert [(t["thread"], t["forked_from"]) for t in made["threads"]] == [
        ("team2.planner", "team.planner"), ("team2.researcher", "team.researcher"), ("team2.critic", "team.critic")]
    assert made["threads"][1]["seq"] == next(line["seq"] for line in researcher if line["kind"] == "NotificationPosted")
    # the planner's question is posted, not yet read: run on, the researcher reads it once
    run = ok_json("run", TEAM, "--store", store, "--as", "team2", "--json")
    assert [(n, t) for n, t, _, _ in agents(run)] == [("planner", "team2.planner"), ("researcher", "team2.researcher"),
                                                      ("critic", "team2.critic")]
    # the same, but for who sent each question (the fork's actors: app/team2.planner)
    assert [[text.replace("app/team2.", "app/team.") for text in e] for _, _, _, e in agents(run)] == original
    assert [s for _, _, s, _ in agents(run)] == ["waiting_user"] * 3
    listed = {row["thread"]: row for row in lines("threads", "--store", store, "--json")}
    assert (listed["system:team2"]["system"], listed["team2.researcher"]["forked_from"]) == ("team2", "team.researcher")
    origin = lines("audit", "--store", store, "--thread", "system:team2", "--json")[0]["summary"]
    assert origin.endswith(f"; forked from system team at system seq {asked}")


@pytest.mark.parametrize("args, message", [
    (["--system", "nope", "--at", "1", "--new-system", "x"],
     "no system named 'nope' in {store} (its log would be thread system:nope); `livecontext threads --store "
     "{store}` lists its threads"),
    (["--system", "team", "--at", "999", "--new-system", "x"],
     "--at 999 is past the end of system team: its last system seq is {end} (`livecontext audit --thread THREAD` "
     "shows each record's system_seq)"),
    (["--system", "team", "--at", "3", "--new-system", "team"],
     "system 'team' exists already in {store}; fork into a new name"),
    (["--system", "team", "--at", "3", "--new-system", "a/b/c"], "invalid system name 'a/b/c': use 1-64 letters, "
     "digits and _ . -, optionally after one NAMESPACE/ of the same (not sub/)"),
    (["--system", "team", "--at", "3"], "a system fork needs --system NAME and --new-system NAME2"),
    (["--system", "team", "--at", "3", "--new-system", "x", "--thread", "team.critic"],
     "fork either a thread (--thread T --new-thread T2) or a system (--system NAME --new-system NAME2), not both"),
])
def test_a_wrong_system_fork_is_one_line_exit_1_and_writes_nothing(store: str, args: list[str], message: str) -> None:
    before = lines("threads", "--store", store, "--json")
    end = max(line["system_seq"] for t in ("system:team", "team.planner", "team.researcher", "team.critic")
              for line in lines("audit", "--store", store, "--thread", t, "--json"))
    result = cli("fork", "--store", store, *args)
    assert (result.exit_code, result.stderr) == (1, f"livecontext: error: {message.format(store=store, end=end)}\n")
    assert lines("threads", "--store", store, "--json") == before


def test_as_names_a_system_and_is_refused_for_one_agent(tmp_path: Path) -> None:
    result = cli("run", "--store", "memory:", "--as", "team2", "--input", "hi")
    assert (result.exit_code, result.stderr) == (1, "livecontext: error: --as names the system a system blueprint "
                                                    "([[agents]]) runs as; an agent without a blueprint describes "
                                                    "one agent\n")

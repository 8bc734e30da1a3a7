"""A thread traced as an agent of its system: every agent is a column, and what passed
between them (questions, answers, notes, the system's inputs) is drawn on the system seq."""

from __future__ import annotations

import pytest

from livecontext.actors.system._system_log import SystemNotFoundError
from livecontext.actors.trace import ActorRole, MessageMode, SeqPastEndError, ThreadMissingError
from tests.actors.trace._runs import audit, cli, run_blueprint, trace


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:{tmp_path_factory.mktemp('team') / 't.db'}"
    run_blueprint("team.toml", url)
    return url


def test_every_agent_of_the_system_is_a_column(team: str) -> None:
    got = trace(team, None, system="team")  # (the system's first agent)
    assert (got.thread, got.system) == ("team.planner", "team")
    roles = {a.id: a.role for a in got.actors}
    assert roles["agent/researcher"] is roles["agent/critic"] is ActorRole.AGENT
    assert roles["system/team"] is ActorRole.SYSTEM and roles["engine/team.planner"] is ActorRole.ENGINE
    other = trace(team, "team.critic", system="team")
    assert {"agent/planner", "agent/researcher", "engine/team.critic"} <= {a.id for a in other.actors}


def test_a_question_goes_to_the_agent_asked_and_its_answer_comes_back_as_the_reply(team: str) -> None:
    got = trace(team, "team.planner", system="team")
    asked = [m for m in got.messages if m.kind == "PostNotification" and m.receiver == "agent/researcher"]
    assert len(asked) == 2  # the question, then the thanks (send_message)
    question = asked[0]
    assert question.sender == "app/team.planner" and question.summary.startswith("planner asks: What should")
    answer = next(m for m in got.messages if m.kind == "Answer")
    assert (answer.sender, answer.receiver, answer.mode, answer.reply_to) == (
        "agent/researcher", "app/team.planner", MessageMode.REPLY, question.i)
    # on the system seq: asked while the planner's tool ran, answered before its result was recorded
    researcher = audit(team, "team.researcher")
    posted = next(r for r in researcher if r["kind"] == "NotificationPosted")
    assert question.seq == posted["system_seq"]
    invoke = got.messages[answer.i + 1].reply_to
    assert invoke is not None and got.messages[invoke].kind == "InvokeTool"
    assert got.messages[invoke].seq < question.seq < answer.seq


def test_the_systems_inputs_and_the_notes_between_other_agents_are_drawn(team: str) -> None:
    got = trace(team, "team.researcher", system="team")
    given = [m for m in got.messages if m.kind == "ProvideInput"]
    assert [(m.sender, m.receiver) for m in given] == [("system/team", "agent/planner")]
    between = [(m.sender, m.receiver, m.kind) for m in got.messages if m.mode is MessageMode.ASK
               and m.sender.startswith("agent/") and m.receiver.startswith("agent/")]
    assert ("agent/planner", "agent/critic", "PostNotification") in between
    into = [m for m in got.messages if m.receiver == "history/team.researcher" and m.kind == "PostNotification"]
    assert {m.sender for m in into} == {"agent/planner"}


def test_at_is_a_system_seq_and_cuts_every_thread_there(team: str) -> None:
    full = trace(team, "team.planner", system="team")
    question = next(m for m in full.messages if m.kind == "PostNotification")
    cut = trace(team, "team.planner", system="team", at=question.seq)
    assert cut.last_seq == question.seq and all(m.seq <= question.seq for m in cut.messages)
    assert not any(m.kind == "Answer" for m in cut.messages)
    planner = audit(team, "team.planner")
    assert len(cut.model_calls) == sum(1 for r in planner if r["system_seq"] <= question.seq
                                       and "ModelOutputEntry" in r["summary"])
    end = max(r["system_seq"] for t in ("system:team", "team.planner", "team.researcher", "team.critic")
              for r in audit(team, t))
    with pytest.raises(SeqPastEndError, match=rf"past the end of system team: its last system seq is {end} "):
        trace(team, "team.planner", system="team", at=end + 1)


def test_a_thread_or_system_that_is_not_there_is_said_in_one_line(team: str, tmp_path: object) -> None:
    with pytest.raises(ThreadMissingError, match="thread 'team.nobody' is not one of system team's: its threads "
                                                 "are team.planner, team.researcher, team.critic"):
        trace(team, "team.nobody", system="team")
    with pytest.raises(SystemNotFoundError, match="no system named 'crew'"):
        trace(team, None, system="crew")
    code, out, err = cli("trace", "--store", team, "--system", "crew", "-o", "/dev/null")
    assert code == 1 and len(err.splitlines()) == 1 and "no system named 'crew'" in err

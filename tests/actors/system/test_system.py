"""Systems of agents: agents reach each other by send_message and ask_agent, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from livecontext.actors.agent._format import apps_json
from livecontext.actors import open_system
from livecontext.actors.apps import describe_tools
from livecontext.actors.blueprint._load import SYSTEM_AGENT_TOOLS
from livecontext.actors.system import Messaging
from livecontext.protocol.agent import NotificationPosted
from livecontext.protocol.history import ModelInputEntry, ModelOutputEntry, TaskStatus, ToolStatus
from livecontext.protocol.records import StepInterrupted
from livecontext.protocol.system import InputsDone, InputsGiven
from livecontext.runtime import UsageError

from tests.support.agent_harness import ProbeModel
from tests.support.clock import PROMPT_S, virtual_seconds
from tests.support.systems import call, entries, payloads, records, results, scripted, team


async def test_a_planner_asks_a_researcher_and_a_critic_and_every_message_names_its_sender() -> None:
    planner = scripted([call("send_message", to="critic", text="a plan is coming"),
                        call("ask_agent", to="researcher", question="What do we know about Lisbon?"),
                        call("ask_agent", to="critic", question="Is three days enough?"),
                        {"text": "Plan: three days in Lisbon."}])
    models = {"planner": planner, "researcher": scripted([{"text": "Lisbon has seven hills."}]),
              "critic": scripted([{"text": "Three days is enough."}])}
    async with open_system(team("planner", "researcher", "critic"), store="memory:", models=models) as system:
        answer = await system.send("planner", "Plan a trip to Lisbon.")
        found = {name: await records(system.store, f"team.{name}") for name in ("planner", "researcher", "critic")}
        planner_results = await results(system.store, "team.planner")
        critic_entries = await entries(system.store, "team.critic")
    assert (answer.text, answer.reason) == ("Plan: three days in Lisbon.", "no_input")
    # the planner's log: its calls and the answers they got
    assert [(r.name, r.status, r.content.live.text) for r in planner_results] == [
        ("send_message", ToolStatus.OK, "message n1 left for critic; it reads it with its next input"),
        ("ask_agent", ToolStatus.OK, "Lisbon has seven hills."),
        ("ask_agent", ToolStatus.OK, "Three days is enough."),
    ]
    # each receiver's log: what the planner sent, sent by the planner's app host
    notes = {name: [(sender, m.notification.text) for sender, m in payloads(found[name])
                    if isinstance(m, NotificationPosted)] for name in ("researcher", "critic")}
    assert notes == {
        "researcher": [("app/team.planner", "planner asks: What do we know about Lisbon?")],
        "critic": [("app/team.planner", "planner says: a plan is coming"),
                   ("app/team.planner", "planner asks: Is three days enough?")],
    }
    # the message waited for the critic's next input, and came with the question
    (asked,) = [e for e in critic_entries if isinstance(e, ModelInputEntry)]
    assert asked.text == "Answer planner's question (the notification below); your reply is sent back to planner."
    assert [n.text for n in asked.notifications] == ["planner says: a plan is coming",
                                                      "planner asks: Is three days enough?"]
    assert all(str(n.sender) == "app/team.planner" for n in asked.notifications)


async def test_each_agent_is_told_who_the_others_are_in_its_system_prompt() -> None:
    bp = team("planner", "researcher")
    async with open_system(bp, store="memory:") as system:
        found = await records(system.store, "team.researcher")
    prompt = next(m.text for _, m in payloads(found) if type(m).__name__ == "SystemPromptSet")  # type: ignore[attr-defined]
    assert prompt.startswith("You are a helpful agent.\n\nYou are researcher, one of the agents of system team.")
    assert prompt.endswith("\n- planner")


async def test_an_ask_cycle_between_two_agents_is_refused_naming_the_cycle_not_a_deadlock() -> None:
    a = scripted([call("ask_agent", to="b", question="what is 2+2?"), {"text": "a is done"}])
    b = scripted([call("ask_agent", to="a", question="what do you think?"), {"text": "4"}])
    async with open_system(team("a", "b"), store="memory:", models={"a": a, "b": b}) as system:
        with trio.fail_after(10):
            answer = await system.send("a", "go")
        b_results = await results(system.store, "team.b")
    assert answer.text == "a is done"
    ((status, text),) = [(r.status, r.content.live.text) for r in b_results]
    assert status is ToolStatus.FAILED
    assert text.startswith("ask_agent refused, it would deadlock: b -> a -> b (each waits for the next one's "
                           "answer, so a cannot answer b now)")


async def test_a_longer_cycle_is_refused_too_and_named_whole() -> None:
    models = {"a": scripted([call("ask_agent", to="b", question="?"), {"text": "a done"}]),
              "b": scripted([call("ask_agent", to="c", question="?"), {"text": "b done"}]),
              "c": scripted([call("ask_agent", to="a", question="?"), {"text": "c done"}])}
    async with open_system(team("a", "b", "c"), store="memory:", models=models) as system:
        with trio.fail_after(10):
            assert (await system.send("a", "go")).text == "a done"
        c_results = await results(system.store, "team.c")
    assert "it would deadlock: c -> a -> b -> c" in c_results[0].content.live.text


async def test_a_question_not_answered_in_time_fails_and_stops_the_receivers_run() -> None:
    slow = scripted([{"text": "too late", "delay_s": 30}])
    asker = scripted([call("ask_agent", to="slow", question="quick?"), {"text": "moved on"}])
    bp = team("asker", "slow")
    bp = type(bp)(bp.path, bp.name, bp.agents, bp.store, ask_timeout_s=0.3)
    async with open_system(bp, store="memory:", models={"asker": asker, "slow": slow}) as system:
        with trio.fail_after(10):
            answer = await system.send("asker", "go")
        asker_results = await results(system.store, "team.asker")
        assert (await system.status()).agents[1].status == "paused"  # its run cancelled mid-turn
    assert answer.text == "moved on"
    assert asker_results[0].status is ToolStatus.FAILED
    assert asker_results[0].content.live.text.startswith("slow did not answer within 0.3 s (the system's ask_timeout_s)")


async def test_a_message_or_question_to_an_unknown_agent_fails_naming_the_agents_there_are() -> None:
    planner = scripted([call("send_message", to="bob", text="hi"), call("ask_agent", to="bob", question="hi?"),
                        call("ask_agent", to="planner", question="me?"), {"text": "ok"}])
    async with open_system(team("planner", "researcher", "critic"), store="memory:",
                           models={"planner": planner}) as system:
        await system.send("planner", "go")
        planner_results = await results(system.store, "team.planner")
    assert [(r.status, r.content.live.text) for r in planner_results] == [
        (ToolStatus.FAILED, "no agent named 'bob' in system 'team'; the agents there are: researcher, critic"),
        (ToolStatus.FAILED, "no agent named 'bob' in system 'team'; the agents there are: researcher, critic"),
        (ToolStatus.FAILED, "'planner' is you: send_message and ask_agent reach the other agents (researcher, critic)"),
    ]


async def test_sending_to_an_agent_the_system_does_not_have_is_a_usage_error() -> None:
    async with open_system(team("a", "b"), store="memory:") as system:
        with pytest.raises(UsageError, match=r"^no agent named 'c' in system 'team'; the agents there are: a, b$"):
            await system.send("c", "hello")


async def test_two_questions_to_one_agent_take_turns() -> None:
    """Each asker gets the answer to its own question, not the other's."""
    answerer = scripted([{"text": "first answer", "delay_s": 0.05}, {"text": "second answer", "delay_s": 0.05}])
    models = {"x": scripted([call("ask_agent", to="z", question="from x"), {"text": "x done"}]),
              "y": scripted([call("ask_agent", to="z", question="from y"), {"text": "y done"}]),
              "z": answerer}
    async with open_system(team("x", "y", "z"), store="memory:", models=models) as system:
        with trio.fail_after(10):
            run = await system.run_inputs({"x": ["go"], "y": ["go"]})
        got = {}
        for name in ("x", "y"):
            got[name] = (await results(system.store, f"team.{name}"))[0].content.live.text
        z_inputs = [e for e in await entries(system.store, "team.z") if isinstance(e, ModelInputEntry)]
    assert {name: a.text for name, a in run.answers.items()} == {"x": "x done", "y": "y done"}
    assert sorted(got.values()) == ["first answer", "second answer"]
    # z answered one question per turn: each input carries exactly its own question
    assert [[n.text for n in e.notifications] for e in z_inputs] in (
        [["x asks: from x"], ["y asks: from y"]], [["y asks: from y"], ["x asks: from x"]])
    first_asker = z_inputs[0].notifications[0].text[0]
    assert got[first_asker] == "first answer"


async def test_a_turn_given_up_while_waiting_is_never_taken(autojump_clock: trio.testing.MockClock) -> None:
    """A caller that stops waiting for a busy agent's turn leaves nothing queued: its input is
    never fed, and the next caller gets the turn as soon as it is free."""
    z = scripted([{"text": "first", "delay_s": 0.3}, {"text": "third"}])
    async with open_system(team("z"), store="memory:", models={"z": z}) as system:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(system.send, "z", "one")
            await trio.testing.wait_all_tasks_blocked()  # z is answering "one" (0.3 s of virtual time)
            with trio.move_on_after(0.05) as gave_up:
                await system.send("z", "two")  # z is busy: this waits, then gives up
            assert gave_up.cancelled_caught
        with trio.fail_after(5):
            answer = await system.send("z", "three")
        z_inputs = [e.text for e in await entries(system.store, "team.z") if isinstance(e, ModelInputEntry)]
    assert (answer.text, z_inputs) == ("third", ["one", "three"])


async def test_an_ask_timeout_the_engine_would_cut_short_is_refused() -> None:
    bp = team("a")
    with pytest.raises(UsageError, match=r"ask_timeout_s must be > 0 and < 300 \(the engine's limit on any tool call\), got 300"):
        type(bp)(bp.path, bp.name, bp.agents, bp.store, ask_timeout_s=300)


async def test_an_agent_stopped_mid_step_finishes_that_work_first_then_takes_its_inputs(tmp_path: Path) -> None:
    turns = [call("notebook_replace", old_text="", new_text="1"), {"text": "done"}, {"text": "again, done"}]
    store = f"sqlite:{tmp_path / 's.db'}"
    async with open_system(team("a", extra="max_steps = 2\n"), store=store, models={"a": scripted(turns)}) as system:
        stopped = await system.send("a", "start")  # the input, then a model call asking for a tool
    assert (stopped.reason, stopped.text, stopped.state.value) == ("max_steps", None, "WaitingToolResults")
    async with open_system(team("a"), store=store, models={"a": scripted(turns)}) as system:
        assert system.agents["a"].resumed_state.value == "WaitingToolResults"
        assert (await system.status()).agents[0].status == "active"
        run = await system.run_inputs({"a": ["again"]})
        inputs = [e.text for e in await entries(system.store, "team.a") if isinstance(e, ModelInputEntry)]
        status = (await system.status()).agents[0]
    assert (run.held, run.resumed) == ({}, False)
    assert (run.answers["a"].text, inputs) == ("again, done", ["start", "again"])
    assert (status.status, apps_json(status.app_histories, status.apps)["notebook"]) == ("waiting_user", "1")


async def test_a_run_stopped_before_each_input_was_taken_is_resumed_by_the_next_each_input_fed_once(
        tmp_path: Path) -> None:
    turns = [{"text": "one, done"}, {"text": "two, done"}]
    store = f"sqlite:{tmp_path / 's.db'}"
    bp = team("a", extra='inputs = ["one", "two"]\nmax_steps = 2\n')
    async with open_system(bp, store=store, models={"a": scripted(turns)}) as system:
        first = await system.run_inputs()  # two steps: the first input and its answer; "two" waits
        again = await system.run_inputs({"a": ["three"]})  # resumes the run: "two" now, "three" held
        found = await entries(system.store, "team.a")
        log = [m for _, m in payloads(await records(system.store, "system:team"))]
    assert (first.answers["a"].reason, first.resumed, again.resumed, again.held) == (
        "max_steps", False, True, {"a": ("three",)})
    # "two" was still buffered from the first run, and fed again by the second: recorded once
    assert [e.text for e in found if isinstance(e, ModelInputEntry)] == ["one", "two"]
    assert [e.content.live.text for e in found if isinstance(e, ModelOutputEntry)] == ["one, done", "two, done"]
    given, done = [m for m in log if isinstance(m, InputsGiven)], [m for m in log if isinstance(m, InputsDone)]
    assert [[(i.agent, i.text) for i in g.inputs] for g in given] == [[("a", "one"), ("a", "two")]]
    assert [d.run for d in done] == [given[0].run]


async def test_a_system_runs_in_one_place_at_a_time(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 's.db'}"
    async with open_system(team("a"), store=store):
        with pytest.raises(UsageError, match=r"^system 'team' is being run by another writer: .*; wait for it to "
                                             r"finish \(or stop it\) and run again$"):
            async with open_system(team("a"), store=store):
                pass


async def test_an_agent_waiting_on_its_ask_agent_is_waiting_internal_until_the_answer_comes() -> None:
    slow = ProbeModel(scripted([{"text": "Lisbon has seven hills."}]))
    slow.gate = trio.Event()
    asker = scripted([call("ask_agent", to="researcher", question="Lisbon?"), {"text": "noted"}])
    async with open_system(team("planner", "researcher"), store="memory:",
                           models={"planner": asker, "researcher": slow}) as system:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(system.send, "planner", "go")
            await slow.started.wait()  # the researcher is at work on the question
            planner = (await system.status()).agents[0]
            assert (planner.status, planner.task.waiting_on) == ("waiting_internal", "ask_agent call call_0_0")
            slow.gate.set()
        planner = (await system.status()).agents[0]
    assert planner.status == "waiting_user"


async def test_send_message_with_mode_interrupt_cuts_the_receivers_work_and_is_its_next_input(
    autojump_clock: trio.testing.MockClock,
) -> None:
    boss = scripted([call("send_message", to="worker", text="stop, use plan B", mode="interrupt"), {"text": "told"}])
    # the worker's first attempt would take an hour; made again after the cut, it answers at once
    worker = scripted([{"text": "plan B done", "delay_s": 3600, "delay_times": 1}])
    async with open_system(team("boss", "worker"), store="memory:", models={"boss": boss, "worker": worker}) as system:
        answers = []

        async def work() -> None:
            answers.append(await system.send("worker", "do plan A"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(work)
            await trio.testing.wait_all_tasks_blocked()  # the worker is in its model call
            told = await system.send("boss", "switch the worker to plan B")
        assert virtual_seconds() < PROMPT_S
        found = payloads(await records(system.store, "team.worker"))
        worker_entries = await entries(system.store, "team.worker")
        boss_results = await results(system.store, "team.boss")
    assert told.text == "told"
    assert [(r.name, r.status, r.content.live.text) for r in boss_results] == [
        ("send_message", ToolStatus.OK, "worker interrupted, with your message as its next input")]
    (worker_answer,) = answers
    assert (worker_answer.text, worker_answer.reason) == ("plan B done", "no_input")
    assert [e.text for e in worker_entries if isinstance(e, ModelInputEntry)] == [
        "do plan A", "boss says: stop, use plan B"]
    assert ("engine/team.worker", StepInterrupted("model call", "app/team.boss")) in found


async def test_system_send_terminates_or_silently_tells_an_agent_without_a_turn() -> None:
    async with open_system(team("solo"), store="memory:") as system:
        await system.send("solo", "hello")
        silent = await system.send("solo", "the user left", mode="silent")
        ended = await system.send("solo", "no longer needed", mode="terminate")
        status = await system.status()
        found = payloads(await records(system.store, "team.solo"))
    assert (silent.steps, silent.reason, ended.reason) == (0, "silent", "terminated")
    (row,) = status.agents
    assert (row.task.status, row.task.reason) == (TaskStatus.TERMINATED, "no longer needed")
    notes = [m.notification.text for _, m in found if isinstance(m, NotificationPosted)]
    assert notes[0] == "silent input from client/system.team: the user left"


async def test_a_system_agents_call_that_needs_approval_stops_it_and_is_decided_through_the_system() -> None:
    boss = scripted([call("send_message", to="aide", text="book the hall"),
                     call("send_message", to="aide", text="book the hall for 50"),
                     {"text": "done"}])
    bp = team("boss", "aide", extra='approval = ["send_message"]\n')
    async with open_system(bp, store="memory:", models={"boss": boss}) as system:
        stopped = await system.send("boss", "get the hall booked")
        assert stopped.reason == "waiting_approval: approval of send_message call call_0_0"
        denied = await system.deny("boss", "call_0_0", "not that hall", by="ada")
        assert denied.reason == "waiting_approval: approval of send_message call call_1_0"
        done = await system.approve("boss", "call_1_0", by="ada")
        assert (done.text, done.reason) == ("done", "no_input")
        with pytest.raises(UsageError, match="has no pending approval for call id 'call_1_0'"):
            await system.approve("boss", "call_1_0")
        boss_results = await results(system.store, "team.boss")
        aide = await records(system.store, "team.aide")
    assert [(r.status, r.content.live.text.split(".")[0]) for r in boss_results] == [
        (ToolStatus.FAILED, "denied: ada did not approve this call of send_message, so it was not run"),
        (ToolStatus.OK, "message n1 left for aide; it reads it with its next input")]
    notes = [m.notification.text for _, m in payloads(aide) if isinstance(m, NotificationPosted)]
    assert notes == ["boss says: book the hall for 50"]  # the denied message never reached the aide


def test_the_blueprint_knows_the_tools_every_agent_of_a_system_has() -> None:
    # (a blueprint's approval names are checked against them: the two must agree)
    assert sorted(spec.name for spec in describe_tools(Messaging())) == sorted(SYSTEM_AGENT_TOOLS)

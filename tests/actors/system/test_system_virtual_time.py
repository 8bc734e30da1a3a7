"""A system on a VirtualClock under Trio's autojump MockClock: its questions' latency and
timeouts pass in virtual seconds, every record (its own log's included) is stamped in virtual
time, and its run ids come from the clock's seed."""

from __future__ import annotations

import datetime as dt

import trio
import trio.testing

from livecontext.actors import open_system
from livecontext.protocol.history import ToolStatus
from livecontext.protocol.system import InputsGiven
from livecontext.runtime import DEFAULT_EPOCH, VirtualClock

from tests.support.clock import virtual_seconds
from tests.support.systems import call, payloads, records, results, scripted, team


async def test_a_question_between_agents_takes_their_latency_in_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    asker = scripted([{"delay_s": 2, **call("ask_agent", to="expert", question="how long?")},
                      {"delay_s": 2, "text": "it takes a minute"}])
    expert = scripted([{"delay_s": 60, "text": "a minute"}])
    bp = team("asker", "expert")
    bp = type(bp)(bp.path, bp.name, bp.agents, bp.store, ask_timeout_s=120)
    start = virtual_seconds()
    async with open_system(bp, store="memory:", models={"asker": asker, "expert": expert},
                           clock=VirtualClock()) as system:
        answer = await system.send("asker", "ask the expert")
        found = await records(system.store, "team.asker")
    assert answer.text == "it takes a minute"
    assert virtual_seconds() - start == 64.0  # 2 s, the expert's 60 s, then 2 s
    assert found[-1].sent_at == DEFAULT_EPOCH + dt.timedelta(seconds=64)


async def test_a_question_not_answered_in_time_times_out_in_virtual_seconds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    slow = scripted([{"text": "too late", "delay_s": 3600}])
    asker = scripted([call("ask_agent", to="slow", question="quick?"), {"text": "moved on"}])
    bp = team("asker", "slow")
    bp = type(bp)(bp.path, bp.name, bp.agents, bp.store, ask_timeout_s=90)
    async with open_system(bp, store="memory:", models={"asker": asker, "slow": slow},
                           clock=VirtualClock()) as system:
        answer = await system.send("asker", "go")
        failed = (await results(system.store, "team.asker"))[0]
        found = await records(system.store, "team.asker")
    assert answer.text == "moved on"
    assert failed.status is ToolStatus.FAILED
    assert failed.content.live.text.startswith("slow did not answer within 90 s (the system's ask_timeout_s)")
    assert found[-1].sent_at == DEFAULT_EPOCH + dt.timedelta(seconds=90)


async def test_the_systems_own_log_and_its_run_ids_come_from_the_clock(autojump_clock: trio.testing.MockClock) -> None:
    bp = team("a", "b", extra='inputs = ["hello"]')
    async with open_system(bp, store="memory:", clock=VirtualClock(seed=11)) as system:
        await trio.sleep(30)
        await system.run_inputs()
        own = await records(system.store, "system:team")
    [given] = [m for _, m in payloads(own) if isinstance(m, InputsGiven)]
    assert given.run == f"run-{VirtualClock(seed=11).token_hex(6)}"
    assert [r.sent_at for r in own] == [DEFAULT_EPOCH, *[DEFAULT_EPOCH + dt.timedelta(seconds=30)] * (len(own) - 1)]

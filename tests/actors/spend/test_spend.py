"""Spend limits through the Python API: the engine stops, paused with the reason, before the
model call that would pass a limit; reopening with the limit raised goes on from there.

Each test first runs the same script with no limit to learn each call's figures (what it was
sent, what it answered), then sets a limit between two of them: the tests pin the behaviour,
not the token counter's arithmetic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import livecontext
from livecontext import Price, SpendLimits, SpendLimitsError, TaskStatus
from livecontext.actors import SubAgents, open_system
from livecontext.actors.apps import Notebook
from livecontext.actors.history import load_state
from livecontext.protocol.history import ModelOutputEntry, ToolResultsEntry, ToolStatus, UsageTotals
from livecontext.protocol.wire import make_converter
from livecontext.runtime.models import ScriptedModel

from tests.support.systems import entries, system_blueprint

NOTE = {"name": "notebook_replace", "arguments": json.dumps({"old_text": "", "new_text": "- milk"})}
NOTE_MORE = {"name": "notebook_replace", "arguments": json.dumps({"old_text": "- milk", "new_text": "- milk\n- eggs"})}
TURNS: list[dict[str, Any]] = [{"text": "noting milk", "tool_calls": [NOTE]},
                               {"text": "noting eggs", "tool_calls": [NOTE_MORE]},
                               {"text": "both noted"}]
"""Three model calls in one run: two tool calls, then the answer."""

RAISE_INPUT = "raise it with --max-input-tokens ([spend] max_input_tokens) and run again"


def script(turns: Sequence[dict[str, Any]] = TURNS, name: str = "inline") -> ScriptedModel:
    return ScriptedModel.from_turns(list(turns), name=name)


async def outputs(agent: livecontext.Agent) -> list[ModelOutputEntry]:
    return [e for e in await agent.history() if isinstance(e, ModelOutputEntry)]


async def figures(turns: Sequence[dict[str, Any]] = TURNS, **options: Any) -> list[ModelOutputEntry]:
    """Each call of an unlimited run of ``turns``: its usage and the prefix it shared."""
    async with livecontext.open_agent(model=script(turns), store="memory:", **options) as agent:
        await agent.send("buy milk and eggs")
        return await outputs(agent)


async def test_max_input_tokens_stops_before_the_call_that_would_pass_it_and_a_raised_limit_resumes(
        tmp_path: Path) -> None:
    calls = await figures()
    first, second, third = (c.usage.prompt_tokens for c in calls)
    limit = first + second  # room for two calls, not for the third
    model = script()
    store = f"sqlite:{tmp_path / 'spend.db'}"
    async with livecontext.open_agent(model=model, store=store, spend=SpendLimits(max_input_tokens=limit)) as agent:
        reply = await agent.send("buy milk and eggs")
        state = await agent.state()
    assert model.unused_turns() == (2,)  # two calls made; the third never started
    reason = (f"spend limit: max_input_tokens {limit} of agent main would be passed: "
              f"spent {first + second}, this call {third}; {RAISE_INPUT}")
    assert reply.reason == f"paused: {reason}"
    assert (reply.status.status, reply.status.reason) == (TaskStatus.PAUSED, reason)
    assert (state.status.status, state.status.reason) == (TaskStatus.PAUSED, reason)

    async with livecontext.open_agent(model=model, store=store,
                                      spend=SpendLimits(max_input_tokens=limit)) as agent:
        again = await agent.run()
    assert (again.steps, again.status.reason) == (0, reason)  # stopped again at once, no call

    async with livecontext.open_agent(model=model, store=store,
                                      spend=SpendLimits(max_input_tokens=limit + third)) as agent:
        resumed = await agent.run()
        done = await agent.state()
    model.check_all_used()
    assert (resumed.text, resumed.status.status, resumed.status.reason) == ("both noted", TaskStatus.WAITING_USER, None)
    assert done.model_outputs == 3


async def test_max_output_tokens_makes_no_call_once_the_output_spent_reaches_it() -> None:
    calls = await figures()
    spent = calls[0].usage.completion_tokens + calls[1].usage.completion_tokens
    model = script()
    async with livecontext.open_agent(model=model, spend=SpendLimits(max_output_tokens=spent)) as agent:
        reply = await agent.send("buy milk and eggs")
    assert model.unused_turns() == (2,)
    assert reply.status.reason == (f"spend limit: max_output_tokens {spent} of agent main is reached: spent {spent}; "
                                   "raise it with --max-output-tokens ([spend] max_output_tokens) and run again")


async def test_max_cost_stops_before_the_call_whose_input_would_pass_it_and_a_raised_limit_resumes(
        tmp_path: Path) -> None:
    price = Price(input=1000.0, cached_input=100.0, output=2000.0)  # money per million tokens
    prices = {"scripted": price}
    calls = await figures()
    spent = sum((c.usage.prompt_tokens * 1000 + c.usage.completion_tokens * 2000) / 1e6 for c in calls[:2])
    third = calls[2]
    this_call = ((third.usage.prompt_tokens - third.shared_tokens) * 1000 + third.shared_tokens * 100) / 1e6
    limit = spent + this_call / 2
    model = script()
    store = f"sqlite:{tmp_path / 'spend.db'}"
    async with livecontext.open_agent(model=model, store=store,
                                      spend=SpendLimits(max_cost=limit, prices=prices)) as agent:
        reply = await agent.send("buy milk and eggs")
    assert model.unused_turns() == (2,)
    assert reply.status.status is TaskStatus.PAUSED
    assert reply.status.reason is not None
    assert reply.status.reason.startswith(f"spend limit: max_cost {limit:g} of agent main would be passed: ")
    assert reply.status.reason.endswith(f"spent {spent:.4f}, this call {this_call:.4f}; "
                                        "raise it with --max-cost ([spend] max_cost) and run again")

    async with livecontext.open_agent(model=model, store=store,
                                      spend=SpendLimits(max_cost=limit * 2, prices=prices)) as agent:
        resumed = await agent.run()
    model.check_all_used()
    assert resumed.text == "both noted"


def test_a_price_charges_cached_input_at_the_cached_price() -> None:
    price = Price(input=2.0, cached_input=0.5, output=8.0)
    assert price.of_input(1_000_000, 400_000) == pytest.approx(600_000 * 2e-6 + 400_000 * 0.5e-6)
    assert price.of_usage(UsageTotals(input_tokens=1_000_000, cached_input_tokens=400_000, output_tokens=500_000,
                                      model_calls=3)) == pytest.approx(1.2 + 0.2 + 4.0)


async def test_offline_models_cost_nothing_unless_priced() -> None:
    model = script()
    async with livecontext.open_agent(model=model, spend=SpendLimits(max_cost=0.000001)) as agent:
        reply = await agent.send("buy milk and eggs")
    model.check_all_used()
    assert reply.text == "both noted"


async def test_a_max_cost_for_a_model_with_no_known_price_is_refused_when_the_agent_opens(tmp_path: Path) -> None:
    store = tmp_path / "never.db"
    with pytest.raises(SpendLimitsError, match=(
            r"^max_cost needs the price of model 'openai:my-own-model', and none is known: add it to the "
            r"blueprint \(\[spend\.prices\.\"my-own-model\"\] input = \.\.\., cached_input = \.\.\., "
            r"output = \.\.\., in money per million tokens\) or to SpendLimits\(prices=\{\"my-own-model\": "
            r"Price\(input, cached_input, output\)\}\), or limit tokens \(max_input_tokens, "
            r"max_output_tokens\) instead$")):
        async with livecontext.open_agent(model="openai:my-own-model", store=f"sqlite:{store}",
                                          api_key="unused", spend=SpendLimits(max_cost=1.0)):
            pass
    assert not store.exists()  # refused before anything was opened


async def test_a_priced_model_with_a_max_cost_opens() -> None:
    limits = SpendLimits(max_cost=1.0, prices={"my-own-model": Price(0.1, 0.01, 0.2)})
    limits.check_model("openai:my-own-model")
    assert limits.price_of("openai:my-own-model") == Price(0.1, 0.01, 0.2)


@pytest.mark.parametrize(("given", "message"), [
    ({"max_input_tokens": 0}, "max_input_tokens must be a whole number of tokens > 0, got 0; leave it out for no limit"),
    ({"max_output_tokens": -5}, "max_output_tokens must be a whole number of tokens > 0, got -5; leave it out for no limit"),
    ({"max_input_tokens": 1.5}, "max_input_tokens must be a whole number of tokens > 0, got 1.5; leave it out for no limit"),
    ({"max_cost": 0}, "max_cost must be an amount of money > 0, got 0; leave it out for no limit"),
    ({"max_cost": -1.0}, "max_cost must be an amount of money > 0, got -1.0; leave it out for no limit"),
    ({"max_cost": float("nan")}, "max_cost must be an amount of money > 0, got nan; leave it out for no limit"),
    ({}, "spend limits set none of max_input_tokens, max_output_tokens and max_cost; set one, or give no spend limits"),
])
def test_spend_limits_refuse_values_that_are_not_above_zero(given: dict[str, Any], message: str) -> None:
    with pytest.raises(SpendLimitsError, match=f"^{message}$"):
        SpendLimits(**given)


def test_a_negative_price_is_refused() -> None:
    with pytest.raises(livecontext.UsageError,
                       match=r"^a price's cached_input must be a number >= 0 \(money per million tokens\), got -1$"):
        Price(1.0, -1, 2.0)


async def test_a_systems_limit_covers_all_its_agents() -> None:
    text = 'system = "team"\n{spend}\n[[agents]]\nname = "a"\n\n[[agents]]\nname = "b"\n'

    def models() -> dict[str, ScriptedModel]:
        return {"a": script([{"text": "a answers"}], "a"), "b": script([{"text": "b answers"}], "b")}

    async with open_system(system_blueprint(text.format(spend="")), store="memory:", models=models()) as system:
        await system.send("a", "hello")
        await system.send("b", "hello")
        used = {name: [e for e in await entries(system.store, f"team.{name}") if isinstance(e, ModelOutputEntry)]
                for name in ("a", "b")}
    a_in, b_in = used["a"][0].usage.prompt_tokens, used["b"][0].usage.prompt_tokens
    limit = a_in + b_in - 1  # room for either call alone, not for both
    assert limit >= max(a_in, b_in)
    limited = models()
    bp = system_blueprint(text.format(spend=f"[spend]\nmax_input_tokens = {limit}\n"))
    async with open_system(bp, store="memory:", models=limited) as system:
        a = await system.send("a", "hello")
        b = await system.send("b", "hello")
        status = await system.status()
    limited["a"].check_all_used()
    assert limited["b"].unused_turns() == (0,)
    assert a.text == "a answers"
    reason = (f"spend limit: max_input_tokens {limit} of system team would be passed: spent {a_in}, "
              f"this call {b_in}; {RAISE_INPUT}")
    assert b.reason == f"paused: {reason}"
    assert [(s.name, s.status, s.task.reason) for s in status.agents] == [("a", "waiting_user", None),
                                                                         ("b", "paused", reason)]


async def test_a_call_that_failed_no_longer_counts_against_a_shared_limit() -> None:
    text = 'system = "team"\n{spend}\n[[agents]]\nname = "a"\n\n[[agents]]\nname = "b"\n'
    async with open_system(system_blueprint(text.format(spend="")), store="memory:",
                           models={"a": script([{"text": "a answers"}], "a"),
                                   "b": script([{"text": "b answers"}], "b")}) as system:
        await system.send("a", "hello")
        await system.send("b", "hello")
        a_in, b_in = [[e for e in await entries(system.store, f"team.{name}") if isinstance(e, ModelOutputEntry)][0]
                      .usage.prompt_tokens for name in ("a", "b")]
    limit = a_in + b_in - 1
    failing, b = script([], "a"), script([{"text": "b answers"}], "b")  # a's model has no turn: its call fails
    bp = system_blueprint(text.format(spend=f"[spend]\nmax_input_tokens = {limit}\n"))
    async with open_system(bp, store="memory:", models={"a": failing, "b": b}) as system:
        failed = await system.send("a", "hello")
        answered = await system.send("b", "hello")
    assert failed.reason.startswith("failed: ")
    assert answered.text == "b answers"  # a's call, allowed then failed, is not counted as spent
    b.check_all_used()


SPAWN = [{"tool_calls": [{"name": "spawn_subagent", "arguments": json.dumps({"task": "count to three"})}]},
         {"text": "the sub-agent counted"}]
SUB = [{"text": "one, two, three"}]


def sub_agents(turns: Sequence[dict[str, Any]], made: list[ScriptedModel]) -> SubAgents:
    def factory() -> ScriptedModel:
        made.append(script(turns, "sub"))
        return made[-1]
    return SubAgents(factory)


async def test_a_sub_agent_spends_from_its_parents_limit() -> None:
    made: list[ScriptedModel] = []
    async with livecontext.open_agent(model=script(SPAWN), apps=[Notebook(), sub_agents(SUB, made)]) as agent:
        await agent.send("delegate it")
        parent_calls = await outputs(agent)
        async with await agent.store.open_reader("main/sub/call_0_0") as reader:
            sub = await load_state(reader, make_converter(), "main/sub/call_0_0")
    first, second = (c.usage.prompt_tokens for c in parent_calls)
    assert sub.usage.model_calls == 1
    limit = first + sub.usage.input_tokens + second - 1  # room for the parent's own calls, not its sub-agent's too
    assert first + second <= limit
    model, made = script(SPAWN), []
    async with livecontext.open_agent(model=model, apps=[Notebook(), sub_agents(SUB, made)],
                                      spend=SpendLimits(max_input_tokens=limit)) as agent:
        reply = await agent.send("delegate it")
        results = [e for e in await agent.history() if isinstance(e, ToolResultsEntry)]
    made[0].check_all_used()  # the sub-agent ran
    assert results[0].results[0].status is ToolStatus.OK
    assert model.unused_turns() == (1,)
    assert reply.status.reason == (f"spend limit: max_input_tokens {limit} of agent main would be passed: "
                                   f"spent {first + sub.usage.input_tokens}, this call {second}; {RAISE_INPUT}")


async def test_a_sub_agent_stopped_by_its_parents_limit_gives_a_failed_result() -> None:
    made: list[ScriptedModel] = []
    async with livecontext.open_agent(model=script(SPAWN), apps=[Notebook(), sub_agents(SUB, made)]) as agent:
        await agent.send("delegate it")
        first = (await outputs(agent))[0].usage.prompt_tokens
    model, made = script([SPAWN[0]]), []
    async with livecontext.open_agent(model=model, apps=[Notebook(), sub_agents(SUB, made)],
                                      spend=SpendLimits(max_input_tokens=first + 1)) as agent:
        reply = await agent.send("delegate it")
        results = [e for e in await agent.history() if isinstance(e, ToolResultsEntry)]
    assert made[0].unused_turns() == (0,)  # the sub-agent made no call
    (result,) = results[0].results
    assert result.status is ToolStatus.FAILED
    assert result.content.live.text.startswith(
        f"sub-agent main/sub/call_0_0 stopped before its next model call: spend limit: max_input_tokens "
        f"{first + 1} of agent main would be passed: spent {first}, this call ")
    model.check_all_used()
    assert reply.status.status is TaskStatus.PAUSED  # and the parent stops before its next call too

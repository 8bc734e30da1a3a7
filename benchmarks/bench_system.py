"""A system of 100 three-agent teams in one runtime (issue 15, "Show").

Run it from the repository root::

    .venv/bin/python benchmarks/bench_system.py              # 100 teams, 3 rounds: a few seconds
    .venv/bin/python benchmarks/bench_system.py --teams 10   # smaller

One system of 300 agents (a planner, a researcher and a critic per team, one thread each) on a
``memory:`` store, in one runtime. Every planner is given a task at once; it asks its researcher,
then its critic, then its researcher again (3 rounds of ``ask_agent``), then answers. Every
model call sleeps 50 ms (``trio.sleep``) before its scripted answer, so a team's chain of calls
(4 of the planner's, 3 answers) cannot take less than 7 x 50 ms: that is the latency floor.

It prints, in one run: the wall time of the whole run against the floor, the CPU time spent
(the process's), and the CPU per message, counting the agents' messages (a question and its
answer are two) and the runtime's envelopes (every tell, ask and reply between actors).
Opening the system (300 agents spawned, 300 threads opened) is timed apart.

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from typing import Any

import trio

from livecontext.actors import AgentSettings, open_system
from livecontext.actors.blueprint import AgentBlueprint, Blueprint, SystemBlueprint
from livecontext.protocol.history import ModelReply, ModelRequest
from livecontext.runtime.models import ModelClient, ScriptedModel, TextCallback

LATENCY_S = 0.05
ROUNDS = ("researcher", "critic", "researcher")
"""Whom each planner asks, in turn."""


class Latent(ModelClient):
    """A scripted model that waits ``LATENCY_S`` (``trio.sleep``) before each answer."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.calls += 1
        await trio.sleep(LATENCY_S)
        return await self.inner.complete(request, on_text)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _ask(to: str, question: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "ask_agent", "arguments": {"to": to, "question": question}}]}


def team_system(teams: int) -> tuple[SystemBlueprint, dict[str, ModelClient], list[Latent]]:
    """The blueprint of ``teams`` teams, and the models by agent name (one client for all the
    researchers, one for all the critics: a scripted model answers by the thread's count)."""
    agents: list[AgentBlueprint] = []
    models: dict[str, ModelClient] = {}
    researchers = Latent(ScriptedModel.from_turns([{"text": "fact one"}, {"text": "fact two"}], name="researcher"))
    critics = Latent(ScriptedModel.from_turns([{"text": "change one thing"}], name="critic"))
    clients = [researchers, critics]
    for k in range(teams):
        turns = [_ask(f"{role}{k}", f"round {i + 1}: what do you say?") for i, role in enumerate(ROUNDS)]
        planner = Latent(ScriptedModel.from_turns([*turns, {"text": f"team {k}: the plan"}], name=f"planner{k}"))
        clients.append(planner)
        for role, model in (("planner", planner), ("researcher", researchers), ("critic", critics)):
            name = f"{role}{k}"
            bp = Blueprint(path="<bench>", settings=AgentSettings(thread_id=f"bench.{name}"), apps=())
            agents.append(AgentBlueprint(name, bp, f"the {role} of team {k}"))
            models[name] = model
    return SystemBlueprint("<bench>", "bench", tuple(agents), ask_timeout_s=120.0), models, clients


async def run(teams: int) -> dict[str, float]:
    bp, models, clients = team_system(teams)
    out: dict[str, float] = {}
    w0, c0 = time.perf_counter(), time.process_time()
    async with open_system(bp, store="memory:", models=models) as system:
        out["open_s"], out["open_cpu_s"] = time.perf_counter() - w0, time.process_time() - c0
        delivered0 = system.runtime.statistics().delivered
        inputs: Mapping[str, Sequence[str]] = {f"planner{k}": ["make the plan"] for k in range(teams)}
        w0, c0 = time.perf_counter(), time.process_time()
        ran = await system.run_inputs(inputs)
        out["run_s"], out["run_cpu_s"] = time.perf_counter() - w0, time.process_time() - c0
        out["envelopes"] = system.runtime.statistics().delivered - delivered0
    answered = [a for a in ran.answers.values() if a.text == f"team {a.agent.removeprefix('planner')}: the plan"]
    assert len(answered) == teams, [a for a in ran.answers.values() if a not in answered][:3]
    out["model_calls"] = sum(c.calls for c in clients)
    assert out["model_calls"] == teams * (len(ROUNDS) * 2 + 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=100)
    args = parser.parse_args()
    teams = args.teams
    figures = trio.run(run, teams)
    messages = teams * len(ROUNDS) * 2  # a question and its answer per round
    floor = (len(ROUNDS) * 2 + 1) * LATENCY_S
    print(f"{teams} teams, {teams * 3} agents in one runtime, {len(ROUNDS)} rounds of ask/answer each, "
          f"{LATENCY_S * 1e3:.0f} ms a model call")
    print(f"  open the system:   {figures['open_s'] * 1e3:8.0f} ms wall, {figures['open_cpu_s'] * 1e3:.0f} ms CPU "
          f"({figures['open_cpu_s'] / (teams * 3) * 1e3:.2f} ms an agent)")
    print(f"  run:               {figures['run_s'] * 1e3:8.0f} ms wall; latency floor {floor * 1e3:.0f} ms "
          f"(7 model calls in a row a team): {figures['run_s'] / floor:.2f}x the floor")
    print(f"  CPU:               {figures['run_cpu_s'] * 1e3:8.0f} ms for {messages} agent messages "
          f"({figures['model_calls']:.0f} model calls, {figures['envelopes']:.0f} runtime envelopes)")
    print(f"  CPU per message:   {figures['run_cpu_s'] / messages * 1e3:8.2f} ms an agent message (a question or an "
          f"answer), {figures['run_cpu_s'] / figures['envelopes'] * 1e6:.1f} µs a runtime envelope")


if __name__ == "__main__":
    main()

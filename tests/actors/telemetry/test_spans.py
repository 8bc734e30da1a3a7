"""The spans of a traced run (issue 18, point 3): names, attributes and parent links per the
OpenTelemetry GenAI conventions, read with the SDK's in-memory exporter."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import livecontext
from livecontext.actors import SubAgents
from livecontext.actors.apps import Notebook
from livecontext.actors.telemetry import open_tracing
from livecontext.protocol.context import AccessDenied, Capability, EditHistory, EntryRef, ReplaceContent
from livecontext.protocol.history import Level
from livecontext.runtime.models import ScriptedModel
from tests.support.agent_harness import open_agent as open_harness
from tests.support import function_tools as ft

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exported = InMemorySpanExporter()
    yield exported
    exported.shutdown()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    made = TracerProvider()  # (never the global one: every test gets its own)
    made.add_span_processor(SimpleSpanProcessor(exporter))
    return made


def scripted(*turns: dict[str, Any], name: str = "inline") -> ScriptedModel:
    return ScriptedModel.from_turns(list(turns), name=name)


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": json.dumps(arguments)}


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


async def test_a_scripted_run_makes_turn_model_and_tool_spans_with_the_genai_names_and_parents(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    model = scripted({"tool_calls": [call("add", a=2, b=3)]}, {"text": "five"}, {"text": "bye"})
    async with livecontext.open_agent(model=model, tools=[ft.add], tracer_provider=provider) as agent:
        await agent.send("add 2 and 3")
        await agent.send("thanks")
    spans = exporter.get_finished_spans()

    (session,) = named(spans, "invoke_workflow main")
    turns = named(spans, "invoke_agent main")
    chats = named(spans, "chat scripted")
    (tool,) = named(spans, "execute_tool add")
    assert len(spans) == 1 + 2 + 3 + 1 and len(turns) == 2 and len(chats) == 3
    first, second = sorted(turns, key=lambda s: s.start_time or 0)

    # the session's turns share its trace; model and tool calls are children of their turn
    assert {trace_id(s) for s in spans} == {trace_id(session)}
    assert [parent_of(t) for t in turns] == [span_id(session)] * 2
    assert sorted(parent_of(c) for c in chats) == sorted([span_id(first)] * 2 + [span_id(second)])
    assert parent_of(tool) == span_id(first)

    assert dict(first.attributes or {}).items() >= {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "main", "gen_ai.agent.id": "main",
        "gen_ai.conversation.id": "main", "livecontext.turn.model_calls": 2, "livecontext.turn.tool_calls": 1}.items()
    call_attrs = dict(sorted(chats, key=lambda s: s.start_time or 0)[0].attributes or {})
    assert call_attrs["gen_ai.operation.name"] == "chat"
    assert call_attrs["gen_ai.request.model"] == call_attrs["gen_ai.response.model"] == "scripted"
    assert call_attrs["gen_ai.response.finish_reasons"] == ("tool_calls",)
    # the script reports no usage: the tokens are our own counts, and say so
    assert call_attrs["gen_ai.usage.input_tokens"] == call_attrs["livecontext.context.tokens"] > 0
    assert call_attrs["gen_ai.usage.output_tokens"] > 0 and call_attrs["livecontext.usage.reported"] is False
    assert dict(tool.attributes or {}).items() >= {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.call.id": "call_0_0",
        "livecontext.tool.status": "ok"}.items()
    assert [s.kind for s in (session, first, chats[0], tool)] == [
        SpanKind.INTERNAL, SpanKind.INTERNAL, SpanKind.CLIENT, SpanKind.INTERNAL]
    # a turn's events trace the engine through its states, from the input to the answer
    moves = [(e.attributes or {})["livecontext.state.to"] for e in first.events if e.name == "livecontext.engine.state"]
    assert moves == ["PendingInput", "WaitingToolResults", "ToolResultsReady", "PendingToolResults", "WaitingInput"]
    assert first.end_time is not None and tool.end_time is not None and first.end_time >= tool.end_time


async def test_a_sub_agents_turn_is_a_child_of_the_tool_call_that_spawned_it(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    model = scripted({"tool_calls": [call("spawn_subagent", task="count to three")]}, {"text": "it counted"})
    sub = SubAgents(lambda: scripted({"text": "one, two, three"}, name="sub"))
    async with livecontext.open_agent(model=model, apps=[Notebook(), sub], tracer_provider=provider) as agent:
        reply = await agent.send("delegate the counting")
    assert reply.text == "it counted"
    spans = exporter.get_finished_spans()

    (spawn,) = named(spans, "execute_tool spawn_subagent")
    (sub_turn,) = named(spans, "invoke_agent main/sub/call_0_0")
    (parent_turn,) = named(spans, "invoke_agent main")
    (sub_chat,) = [s for s in named(spans, "chat scripted") if parent_of(s) == span_id(sub_turn)]
    assert parent_of(spawn) == span_id(parent_turn)
    assert parent_of(sub_turn) == span_id(spawn)
    assert (sub_chat.attributes or {})["gen_ai.conversation.id"] == "main/sub/call_0_0"
    assert len({trace_id(s) for s in spans}) == 1


async def test_a_recap_fold_is_an_event_naming_the_recap_maintainer(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    model = scripted(*({"text": f"answer {n}"} for n in range(6)))
    async with livecontext.open_agent(model=model, tracer_provider=provider,
                                      recap=livecontext.RecapSettings(window=1, batch=1),
                                      limits=livecontext.HistoryLimits(max_entries=4)) as agent:
        for n in range(6):
            await agent.send(f"question {n}")
    folds = [e for s in exporter.get_finished_spans() for e in s.events if e.name == "livecontext.history.fold"]
    assert folds
    assert {(e.attributes or {})["livecontext.author"] for e in folds} == {"recap/main"}
    assert {(e.attributes or {})["livecontext.edit.outcome"] for e in folds} == {"applied"}
    assert {(e.attributes or {})["livecontext.fold.strategy"] for e in folds} == {"simple_extract"}
    assert all(str((e.attributes or {})["livecontext.recap.id"]).startswith("e") for e in folds)


async def test_a_failed_model_call_ends_its_span_and_its_turn_in_error(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    model = scripted({"text": "never", "fail": {"error": "server", "times": 1}})
    async with livecontext.open_agent(model=model, tracer_provider=provider) as agent:
        reply = await agent.send("hello")
    assert reply.reason.startswith("failed")
    spans = exporter.get_finished_spans()
    (chat,) = named(spans, "chat")  # (its model never answered: the name has none)
    (turn,) = named(spans, "invoke_agent main")
    assert chat.status.status_code is StatusCode.ERROR and turn.status.status_code is StatusCode.ERROR
    assert "server" in (turn.status.description or "")
    assert (turn.attributes or {})["livecontext.turn.stopped"] == "failed"


async def test_a_run_stopped_mid_turn_ends_its_turn_span_and_the_next_run_opens_one_where_it_stopped(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    model = scripted({"tool_calls": [call("add", a=2, b=3)]}, {"text": "five"})
    async with livecontext.open_agent(model=model, tools=[ft.add], tracer_provider=provider) as agent:
        stopped = await agent.send("add 2 and 3", max_steps=2)  # the input, then the model call
        finished = await agent.run()
    assert (stopped.reason, finished.text) == ("max_steps", "five")
    first, second = sorted(named(exporter.get_finished_spans(), "invoke_agent main"), key=lambda s: s.start_time or 0)
    assert (first.attributes or {})["livecontext.turn.stopped"] == "max_steps"
    assert (first.attributes or {})["livecontext.turn.model_calls"] == 1
    assert (second.attributes or {})["livecontext.turn.first_state"] == "WaitingToolResults"
    assert "livecontext.turn.stopped" not in (second.attributes or {})
    assert first.status.status_code is second.status.status_code is StatusCode.UNSET


async def test_a_denied_edit_is_an_event_with_its_author_and_the_capability_it_lacked(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    async with open_harness([{"text": "hi"}], inputs=["hello"], listen=False) as h:
        async with open_tracing(h.rt, "edits", tracer_provider=provider):
            await h.run_until_idle()
            reader = h.rt.client("reader", capabilities={Capability.READ})
            first = (await h.entries())[0]
            edit = ReplaceContent(EntryRef(first.id, first.revision), Level.LIVE, "mine now")
            denied = await reader.ask(h.agent.history, EditHistory((edit,)))
            assert isinstance(denied, AccessDenied)
    (session,) = named(exporter.get_finished_spans(), "invoke_workflow edits")
    (event,) = [e for e in session.events if e.name == "livecontext.history.edit"]
    assert dict(event.attributes or {}) == {
        "livecontext.author": "client/reader", "livecontext.edit.kind": "EditHistory",
        "livecontext.edit.edits": ("ReplaceContent",),
        "livecontext.edit.entries": 1, "livecontext.edit.outcome": "denied",
        "livecontext.denied.capability": "edit"}


async def test_a_system_is_one_trace_and_an_asked_agents_turn_is_a_child_of_the_ask(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    async with livecontext.open_system(EXAMPLES / "team.toml", store="memory:", tracer_provider=provider) as system:
        await system.run_inputs()
    spans = exporter.get_finished_spans()
    (session,) = named(spans, "invoke_workflow team")
    (planner,) = named(spans, "invoke_agent team.planner")
    asks = {str((s.attributes or {})["gen_ai.tool.call.id"]): s for s in named(spans, "execute_tool ask_agent")}
    (researcher,) = named(spans, "invoke_agent team.researcher")
    (critic,) = named(spans, "invoke_agent team.critic")
    assert parent_of(planner) == span_id(session)
    assert {parent_of(ask) for ask in asks.values()} == {span_id(planner)}
    # the planner asks the researcher first (its call 0), then the critic (call 1)
    assert (parent_of(researcher), parent_of(critic)) == (span_id(asks["call_0_0"]), span_id(asks["call_1_0"]))
    assert {trace_id(s) for s in spans} == {trace_id(session)}

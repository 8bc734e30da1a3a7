"""Opening a store, a thread, a model and a runtime with one agent in it."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio
from attrs import frozen

from livecontext.protocol import (
    AppEffects,
    Entries,
    GetAppEffects,
    Idle,
    Message,
    NotificationPosted,
    ProtocolConverter,
    ReadEntries,
    RunUntilIdle,
    Tail,
    GetTail,
    make_converter,
)
from livecontext.runtime import Runtime, open_runtime
from livecontext.runtime.models import ModelClient, open_model_client
from livecontext.runtime.persistence import EventStore, ThreadLog, open_store
from livecontext.runtime.tokens import TokenCounter

from .._agent import Agent, AgentSettings, spawn_agent
from ..apps import App
from ._format import apps_json, entry_json, event_json


def owner_string() -> str:
    """Who holds a thread's writer lease: this process on this host."""
    return f"pid {os.getpid()} on {socket.gethostname()}"


@frozen
class Session:
    """A running agent and what it runs on."""

    rt: Runtime
    agent: Agent
    store: EventStore
    log: ThreadLog
    converter: ProtocolConverter

    async def summary(self) -> dict[str, Any]:
        """The ``run --json`` object: thread, state, entries, apps."""
        client = self.rt.client(f"summary-{trio.current_time():.6f}")
        entries = await client.ask(self.agent.history, ReadEntries())
        tail = await client.ask(self.agent.history, GetTail())
        effects = await client.ask(self.agent.history, GetAppEffects())
        assert isinstance(entries, Entries) and isinstance(tail, Tail) and isinstance(effects, AppEffects)
        return {
            "thread": self.agent.thread_id,
            "state": tail.state.value,
            "entries": [entry_json(e) for e in entries.entries],
            "apps": apps_json(effects.effects),
        }


@asynccontextmanager
async def open_session(
    store_url: str, settings: AgentSettings, model_spec: str, *, inputs: Sequence[str] = (),
    base_url: str | None = None, api_key: str | None = None, auto: bool = False,
    apps: Sequence[App] | None = None, model: ModelClient | None = None,
) -> AsyncIterator[Session]:
    """Everything needed to run one thread, closed in order on exit."""
    converter = make_converter()
    counter = TokenCounter.from_env()
    store = await open_store(store_url)
    async with store:
        log = await store.open_thread(settings.thread_id, create=True, owner=owner_string())
        async with log:
            async with _model(model, model_spec, base_url, api_key) as client:
                async with open_runtime() as rt:
                    agent = await spawn_agent(rt, log, client, settings, converter=converter,
                                              counter=counter, inputs=inputs, apps=apps, auto=auto)
                    yield Session(rt, agent, store, log, converter)


@asynccontextmanager
async def _model(given: ModelClient | None, spec: str, base_url: str | None,
                 api_key: str | None) -> AsyncIterator[ModelClient]:
    if given is not None:
        async with given:
            yield given
        return
    async with open_model_client(spec, base_url=base_url, api_key=api_key) as client:
        yield client


async def run_until_idle(session: Session, max_steps: int | None,
                         on_event: Callable[[Message], None] | None = None,
                         events_path: str | None = None) -> Idle:
    """Run the engine until it waits for input with none left (or ``max_steps``); stream events."""
    client = session.rt.client("run")
    events_file = open(events_path, "a", encoding="utf-8") if events_path else None  # noqa: SIM115

    def handle(event: Message) -> None:
        # synchronous on purpose: a cancelled pump never loses half an event
        if events_file is not None:
            events_file.write(json.dumps(event_json(session.converter, event), ensure_ascii=False) + "\n")
            events_file.flush()
        if on_event is not None:
            on_event(event)

    try:
        async with session.rt.open_subscription(session.agent.events, buffer=1024) as events, \
                session.rt.open_subscription(session.agent.history_events, buffer=1024) as changes:
            async with trio.open_nursery() as nursery:
                async def pump() -> None:
                    async for env in events:
                        handle(env.payload)

                async def notes() -> None:
                    async for env in changes:
                        if on_event is not None and isinstance(env.payload, NotificationPosted):
                            on_event(env.payload)

                nursery.start_soon(pump)
                nursery.start_soon(notes)
                idle = await client.ask(session.agent.engine, RunUntilIdle(max_steps), timeout=None)
                nursery.cancel_scope.cancel()
            # every event was published before the reply: take what the pump had not yet read
            while True:
                try:
                    handle(events.receive_nowait().payload)
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
    finally:
        if events_file is not None:
            events_file.close()
    assert isinstance(idle, Idle)
    return idle



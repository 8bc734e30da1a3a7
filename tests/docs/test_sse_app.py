"""examples/sse_app.py under a real uvicorn server on 127.0.0.1, read by a real HTTP client: an
agent opened in the app's lifespan (``livecontext.aio``, a Trio guest of uvicorn's asyncio
loop) streams each request's run as server-sent events, the reply last; requests in flight at
once share the one agent, each run after the other; the server stops cleanly."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import trio

from tests.support.command import LIVECONTEXT, cli_env, write_script

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
READY = re.compile(rb"Uvicorn running on http://127\.0\.0\.1:(\d+)")


def add_turns(*pairs: tuple[int, int]) -> list[dict[str, Any]]:
    """A scripted model's turns: for each pair, a call of ``add`` then a sentence with the sum."""
    turns: list[dict[str, Any]] = []
    for a, b in pairs:
        turns.append({"tool_calls": [{"name": "add", "arguments": json.dumps({"a": a, "b": b})}]})
        turns.append({"text": f"{a} + {b} = {a + b}."})
    return turns


class Server:
    """The example's server process, its address and what it logged."""

    def __init__(self, process: trio.Process, url: str, store: Path) -> None:
        self.process = process
        self.url = url
        self.store = store
        self.log = b""


@asynccontextmanager
async def serving(tmp_path: Path, turns: list[dict[str, Any]]) -> AsyncIterator[Server]:
    """Run ``uvicorn --app-dir examples sse_app:app`` on a free port of 127.0.0.1 (the agent's
    model scripted with ``turns``, its store a SQLite file); stop it with Ctrl-C at the end."""
    store = tmp_path / "web.db"
    env = {**cli_env(), "SSE_APP_MODEL": f"scripted:{write_script(tmp_path / 'turns.json', turns)}",
           "LIVECONTEXT_STORE": f"sqlite:{store}"}
    command = [sys.executable, "-m", "uvicorn", "--app-dir", str(EXAMPLES), "--host", "127.0.0.1", "--port", "0",
               "sse_app:app"]
    process = await trio.lowlevel.open_process(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        log = b""
        with trio.fail_after(120):  # (a guard against a server that never starts; not a speed bound)
            while not (ready := READY.search(log)):
                chunk = await process.stderr.receive_some()
                assert chunk, f"the server exited before it was ready:\n{log.decode()}"
                log += chunk
        server = Server(process, f"http://127.0.0.1:{int(ready.group(1))}", store)
        server.log = log
        async with trio.open_nursery() as nursery:
            async def keep_reading() -> None:
                assert process.stderr is not None
                while chunk := await process.stderr.receive_some():
                    server.log += chunk

            nursery.start_soon(keep_reading)
            yield server
            process.send_signal(signal.SIGINT)
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def leases(store: Path) -> list[tuple[str]]:
    """The threads whose writer's lease a SQLite store holds."""
    with contextlib.closing(sqlite3.connect(store)) as conn:
        return conn.execute("SELECT thread_id FROM leases").fetchall()


async def ask(client: httpx2.AsyncClient, question: str) -> list[tuple[str, Any]]:
    """Ask the server, reading its answer as server-sent events: (event, decoded data) pairs."""
    async with client.stream("GET", "/ask", params={"q": question}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return [(event.event, event.json()) async for event in httpx2.EventSource(response)]


def tool_and_reply(events: list[tuple[str, Any]]) -> tuple[str, str]:
    """What the run's tool gave (its gist) and the reply's text, checking their order: the tool
    call's events come before the reply, which is the last event."""
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "Reply" and kinds.count("Reply") == 1
    assert kinds.index("BeforeToolExecute") < kinds.index("AfterToolExecute") < kinds.index("Reply")
    (gist,) = [data["gist"] for kind, data in events if kind == "AfterToolExecute"]
    return gist, events[-1][1]["text"]


async def test_a_request_streams_its_runs_events_as_server_sent_events_the_reply_last(tmp_path: Path) -> None:
    async with serving(tmp_path, add_turns((2, 3))) as server:
        async with httpx2.AsyncClient(base_url=server.url, timeout=None) as client:
            events = await ask(client, "what is 2 + 3?")
            refused = await client.get("/ask")
    assert tool_and_reply(events) == ("add ok: 5", "2 + 3 = 5.")
    assert ("StateTransition", {"thread_id": "web", "from_state": "WaitingInput", "to_state": "PendingInput",
                                "type": "StateTransition"}) == events[0]
    assert "".join(data["text"] for kind, data in events if kind == "ModelTextDelta") == "2 + 3 = 5."
    assert events[-1][1]["state"] == "WaitingInput"
    assert (refused.status_code, refused.text) == (400, "ask with a question: /ask?q=...\n")


async def test_two_requests_at_once_share_the_agent_each_streaming_its_own_whole_run(tmp_path: Path) -> None:
    async with serving(tmp_path, add_turns((1, 1), (5, 5))) as server:
        async with httpx2.AsyncClient(base_url=server.url, timeout=None) as client:
            answers: dict[str, list[tuple[str, Any]]] = {}

            async def asking(question: str) -> None:
                answers[question] = await ask(client, question)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(asking, "first")
                nursery.start_soon(asking, "second")
    # one agent: the runs are queued, whichever came first took the script's first turns; each
    # stream holds its own run's events only, whole
    assert sorted(tool_and_reply(events) for events in answers.values()) == [
        ("add ok: 10", "5 + 5 = 10."), ("add ok: 2", "1 + 1 = 2.")]
    assert [sum(kind == "BeforeModelCall" for kind, _ in events) for events in answers.values()] == [2, 2]


async def test_the_server_stops_cleanly_closing_the_agents_thread_in_its_store(tmp_path: Path) -> None:
    async with serving(tmp_path, add_turns((2, 3))) as server:
        async with httpx2.AsyncClient(base_url=server.url, timeout=None) as client:
            await ask(client, "what is 2 + 3?")
        assert leases(server.store) == [("web",)]  # (while it runs, the agent holds its thread)
    log = server.log.decode()
    assert server.process.returncode == 0, log
    assert "Application shutdown complete." in log and "Traceback" not in log, log
    assert not Path(f"{server.store}-wal").exists()  # the store was closed (by its last connection) ...
    assert leases(server.store) == []  # ... after the agent closed its thread (its lease released)
    history = subprocess.run([*LIVECONTEXT, "history", "--store", f"sqlite:{server.store}", "--thread", "web",
                              "--json"], capture_output=True, text=True, check=True, env=cli_env()).stdout
    entries = [(entry["kind"], entry["levels"]["live"]) for entry in json.loads(history)["entries"]]
    assert entries == [("model_input", "what is 2 + 3?"), ("model_output", ""), ("tool_results", ""),
                       ("model_output", "2 + 3 = 5.")]  # the exchange was kept


async def test_a_client_that_disconnects_mid_run_cancels_the_agents_step_and_the_next_request_is_answered(
        tmp_path: Path) -> None:
    # the first model call would take an hour the first time it is made: it is answered only if
    # the disconnection cut it (the next run would queue behind it otherwise)
    slow = [{"text": "at last", "delay_s": 3600, "delay_times": 1}, {"text": "next"}]
    async with serving(tmp_path, slow) as server:
        async with httpx2.AsyncClient(base_url=server.url, timeout=None) as client:
            async with client.stream("GET", "/ask", params={"q": "slow one"}) as response:
                async for event in httpx2.EventSource(response):
                    if event.event == "BeforeModelCall":
                        break  # the model call is under way: hang up
            with trio.fail_after(120):  # (a guard against the cut that never came; not a speed bound)
                events = await ask(client, "after the hang-up")
    # the cut call is made again (without its hour, the second time), then this request's own
    assert [data["call_index"] for kind, data in events if kind == "BeforeModelCall"] == [0, 1]
    assert [data["text"] for kind, data in events if kind == "AfterModelCall"] == ["at last", "next"]
    assert events[-1][0] == "Reply" and events[-1][1]["text"] == "next"

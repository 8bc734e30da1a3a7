"""``livecontext mcp``: an agent served as MCP tools, driven by the ``mcp`` package's own client
over stdio and streamable HTTP (real processes): the tools and their schemas, a reply, the
thread's history and state, each session's own thread, a thread durable across restarts, a
system's entry agent, and the one-line errors."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client, StdioServerParameters

from tests.support.command import LIVECONTEXT, cli_env, run_cli, write_script

HANG_S = 120
"""How long a test waits for a server at most (a guard against a hang, not a bound it checks)."""


def agent_blueprint(tmp_path: Path, *answers: str, name: str = "helper") -> Path:
    """A blueprint of an agent whose scripted model gives ``answers``, one per model call of
    its thread (by the call's index: a resumed thread gets the next one)."""
    script = write_script(tmp_path / f"{name}.json", [{"text": text} for text in answers])
    path = tmp_path / f"{name}.toml"
    path.write_text(f'model = "scripted:{script}"\nsystem_prompt = "You help."\n', encoding="utf-8")
    return path


def stdio(blueprint: Path, *args: str) -> Client:
    """An MCP client of ``livecontext mcp BLUEPRINT ARGS`` on stdio, spawned by the client."""
    return Client(StdioServerParameters(command=LIVECONTEXT[0], args=[*LIVECONTEXT[1:], "mcp", str(blueprint), *args],
                                        env=cli_env()))


@contextlib.asynccontextmanager
async def http_server(blueprint: Path, *args: str) -> AsyncIterator[tuple[str, str, trio.Process]]:
    """``livecontext mcp BLUEPRINT --port 0 ARGS`` running; its URL and the line that says it,
    read off its stderr."""
    proc = await trio.lowlevel.open_process([*LIVECONTEXT, "mcp", str(blueprint), "--port", "0", *args],
                                            stderr=subprocess.PIPE, env=cli_env())
    try:
        said = b""
        assert proc.stderr is not None
        with trio.fail_after(HANG_S):
            while b"/mcp" not in said:
                chunk = await proc.stderr.receive_some()
                assert chunk, said.decode()
                said += chunk
        found = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", said.decode())
        assert found is not None, said.decode()
        yield found.group(1), said.decode(), proc
    finally:
        if proc.returncode is None:
            proc.kill()
            with trio.CancelScope(shield=True):
                await proc.wait()


def text_of(result: Any) -> str:
    (content,) = result.content
    return str(content.text)


def exchange(history: dict[str, Any]) -> list[tuple[str, str]]:
    """The (kind, text) of each entry of a ``history`` result."""
    return [(e["kind"], e["levels"]["live"]) for e in history["entries"]]


async def test_stdio_lists_the_three_tools_and_send_history_state_work_on_the_thread(tmp_path: Path) -> None:
    bp = agent_blueprint(tmp_path, "Lisbon has seven hills.")
    with trio.fail_after(HANG_S):
        async with stdio(bp, "--store", f"sqlite:{tmp_path / 'db'}", "--thread", "trip") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert sorted(tools) == ["history", "send", "state"]
            assert tools["send"].input_schema["required"] == ["text"]
            assert set(tools["send"].input_schema["properties"]) == {"text", "thread"}
            assert set(tools["history"].input_schema["properties"]) == {"thread", "last"}
            assert tools["send"].description and "durable" in tools["send"].description
            assert tools["send"].output_schema is not None
            assert set(tools["send"].output_schema["required"]) == {"thread", "text", "status", "state", "steps",
                                                                    "reason"}

            sent = await client.call_tool("send", {"text": "Tell me about Lisbon."})
            assert not sent.is_error
            assert text_of(sent) == "Lisbon has seven hills."
            assert sent.structured_content is not None
            assert sent.structured_content["thread"] == "trip"
            assert sent.structured_content["status"] == "waiting_user"

            history = await client.call_tool("history", {})
            assert history.structured_content is not None and history.structured_content["thread"] == "trip"
            assert exchange(history.structured_content) == [("model_input", "Tell me about Lisbon."),
                                                            ("model_output", "Lisbon has seven hills.")]
            assert "Lisbon has seven hills." in text_of(history)
            last = await client.call_tool("history", {"last": 1})
            assert last.structured_content is not None
            assert exchange(last.structured_content) == [("model_output", "Lisbon has seven hills.")]

            state = await client.call_tool("state", {"thread": "trip"})
            assert not state.is_error and state.structured_content is not None
            assert (state.structured_content["state"], state.structured_content["status"]) == ("WaitingInput",
                                                                                               "waiting_user")
            assert state.structured_content["entries"] == 2
            assert json.loads(text_of(state))["thread"] == "trip"


async def test_a_stdio_session_given_no_thread_talks_in_a_new_one_of_its_own(tmp_path: Path) -> None:
    bp = agent_blueprint(tmp_path, "Hello.", "Hello again.")
    store = f"sqlite:{tmp_path / 'db'}"
    with trio.fail_after(HANG_S):
        async with stdio(bp, "--store", store) as client:
            first = await client.call_tool("send", {"text": "hi"})
        async with stdio(bp, "--store", store) as client:
            second = await client.call_tool("send", {"text": "hi"})
    assert first.structured_content is not None and second.structured_content is not None
    ids = first.structured_content["thread"], second.structured_content["thread"]
    assert all(thread.startswith("mcp-") for thread in ids) and ids[0] != ids[1]
    assert text_of(first) == text_of(second) == "Hello."  # (each a new thread: its first model call)


async def test_a_thread_outlives_the_server_and_send_continues_it_after_a_restart(tmp_path: Path) -> None:
    bp = agent_blueprint(tmp_path, "First answer.", "Second answer.")
    args = ("--store", f"sqlite:{tmp_path / 'db'}", "--thread", "kept")
    with trio.fail_after(HANG_S):
        async with stdio(bp, *args) as client:
            assert text_of(await client.call_tool("send", {"text": "one"})) == "First answer."
        async with stdio(bp, *args) as client:
            before = await client.call_tool("history", {"thread": "kept"})
            assert before.structured_content is not None
            assert exchange(before.structured_content) == [("model_input", "one"), ("model_output", "First answer.")]
            # the model's second call: the thread resumed (a new one would get the first answer again)
            again = await client.call_tool("send", {"text": "two"})
            assert text_of(again) == "Second answer."
            after = await client.call_tool("history", {})
    assert after.structured_content is not None
    assert exchange(after.structured_content) == [("model_input", "one"), ("model_output", "First answer."),
                                                  ("model_input", "two"), ("model_output", "Second answer.")]
    # what the model is sent holds the turn from before the restart
    rendered = await run_cli("render", "--store", f"sqlite:{tmp_path / 'db'}", "--thread", "kept", "--json")
    assert rendered.returncode == 0, rendered.stderr
    said = [(m["role"], m["content"]) for m in json.loads(rendered.stdout)["messages"]]
    assert said[1:5] == [("user", "one"), ("assistant", "First answer."), ("user", "two"), ("assistant", "Second answer.")]


async def test_calls_at_once_on_one_thread_run_one_after_the_other(tmp_path: Path) -> None:
    bp = agent_blueprint(tmp_path, "Answer A.", "Answer B.")
    replies: dict[str, str] = {}
    with trio.fail_after(HANG_S):
        async with stdio(bp, "--store", f"sqlite:{tmp_path / 'db'}", "--thread", "busy") as client:
            async def send(text: str) -> None:
                replies[text] = text_of(await client.call_tool("send", {"text": text}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(send, "first")
                nursery.start_soon(send, "second")
            history = await client.call_tool("history", {})
    assert sorted(replies.values()) == ["Answer A.", "Answer B."]
    assert history.structured_content is not None
    kinds = exchange(history.structured_content)
    # each input answered before the next one is taken: never two inputs in a row
    assert [kind for kind, _ in kinds] == ["model_input", "model_output", "model_input", "model_output"]
    for (_, asked), (_, answered) in zip(kinds[::2], kinds[1::2], strict=True):
        assert replies[asked] == answered


async def test_a_send_the_client_cancels_cancels_the_agents_step_and_pauses_it(tmp_path: Path) -> None:
    script = write_script(tmp_path / "slow.json", [{"text": "too late", "delay_s": 3600}])
    bp = tmp_path / "slow.toml"
    bp.write_text(f'model = "scripted:{script}"\n', encoding="utf-8")

    async def state(client: Client) -> dict[str, Any]:
        found = await client.call_tool("state", {})  # (an error until the send made the thread)
        return {} if found.is_error or found.structured_content is None else found.structured_content

    with trio.fail_after(HANG_S):
        async with stdio(bp, "--store", f"sqlite:{tmp_path / 'db'}", "--thread", "slow") as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "send", {"text": "take your time"})
                while (await state(client)).get("status") != "active":  # (the run took the input)
                    await trio.sleep(0.05)
                nursery.cancel_scope.cancel()
            while (await state(client)).get("status") != "paused":  # (the model call of an hour is not waited for)
                await trio.sleep(0.05)
            history = await client.call_tool("history", {})
    assert history.structured_content is not None
    assert exchange(history.structured_content) == [("model_input", "take your time")]


async def test_over_http_each_session_gets_its_own_thread_and_a_named_one_is_shared(tmp_path: Path) -> None:
    bp = agent_blueprint(tmp_path, "Answer one.", "Answer two.")
    store = f"sqlite:{tmp_path / 'db'}"
    with trio.fail_after(HANG_S):
        async with http_server(bp, "--store", store) as (url, said, proc):
            threads = []
            for text in ("from the first session", "from the second session"):
                async with Client(url, mode="legacy") as client:  # (the handshake: a session id)
                    tools = {t.name for t in (await client.list_tools()).tools}
                    assert tools == {"send", "history", "state"}
                    sent = await client.call_tool("send", {"text": text})
                    assert text_of(sent) == "Answer one."
                    assert sent.structured_content is not None
                    thread = sent.structured_content["thread"]
                    history = await client.call_tool("history", {})
                    assert history.structured_content is not None
                    assert exchange(history.structured_content) == [("model_input", text),
                                                                    ("model_output", "Answer one.")]
                    state = await client.call_tool("state", {})
                    assert state.structured_content is not None and state.structured_content["state"] == "WaitingInput"
                    threads.append(thread)
            assert threads[0] != threads[1] and all(t.startswith("mcp-") for t in threads)
            async with Client(url) as client:  # (the newest protocol, sessionless: a named thread)
                shared = await client.call_tool("send", {"text": "me too", "thread": threads[0]})
                assert text_of(shared) == "Answer two."
                # one that names none goes to the server's thread, said when it started
                unnamed = await client.call_tool("send", {"text": "no session"})
                assert unnamed.structured_content is not None
                assert f"sessionless ones to {unnamed.structured_content['thread']} " in said
            proc.send_signal(signal.SIGINT)
            assert await proc.wait() == 130
    listed = await run_cli("threads", "--store", store, "--json")
    assert listed.returncode == 0, listed.stderr
    assert set(threads) <= {json.loads(line)["thread"] for line in listed.stdout.splitlines()}


async def test_a_system_blueprint_serves_its_entry_agent(tmp_path: Path) -> None:
    planner = write_script(tmp_path / "planner.json", [{"text": "Plan: three days."}])
    critic = write_script(tmp_path / "critic.json", [{"text": "Too long."}])
    bp = tmp_path / "team.toml"
    bp.write_text(f'system = "team"\n\n[[agents]]\nname = "planner"\nmodel = "scripted:{planner}"\n\n'
                  f'[[agents]]\nname = "critic"\nmodel = "scripted:{critic}"\n', encoding="utf-8")
    store = f"sqlite:{tmp_path / 'db'}"
    with trio.fail_after(HANG_S):
        async with stdio(bp, "--store", store, "--thread", "lisbon") as client:
            sent = await client.call_tool("send", {"text": "Plan Lisbon."})
            assert not sent.is_error, text_of(sent)
            assert text_of(sent) == "Plan: three days."
            state = await client.call_tool("state", {})
            assert state.structured_content is not None
            assert (state.structured_content["agent"], state.structured_content["agent_thread"]) == (
                "planner", "lisbon.planner")
            history = await client.call_tool("history", {})
            assert history.structured_content is not None
            assert exchange(history.structured_content)[-1] == ("model_output", "Plan: three days.")
        async with stdio(bp, "--store", store, "--thread", "other", "--agent", "critic") as client:
            assert text_of(await client.call_tool("send", {"text": "Is a week too long?"})) == "Too long."


async def test_history_or_state_of_a_thread_never_sent_to_is_a_tool_error_of_one_line(tmp_path: Path) -> None:
    bp = agent_blueprint(tmp_path, "unused")
    with trio.fail_after(HANG_S):
        async with stdio(bp, "--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t") as client:
            for tool in ("history", "state"):
                result = await client.call_tool(tool, {"thread": "nowhere"})
                assert result.is_error
                assert "no thread 'nowhere' in the store: `send` to it first" in text_of(result)
                assert "\n" not in text_of(result)
            bad = await client.call_tool("send", {"text": "hi", "thread": "no spaces allowed"})
            assert bad.is_error and "\n" not in text_of(bad)
            assert "thread" in text_of(bad)


@pytest.mark.parametrize(("args", "said"), [
    (["missing.toml"], "missing.toml"),
    (["BP", "--store", "memory:"], "--store memory: keeps nothing"),
    (["BP", "--http", "0.0.0.0:8765"], "add --allow-remote"),
    (["BP", "--http", "nonsense"], "give HOST:PORT"),
    (["BP", "--port", "0", "--http", "127.0.0.1:1"], "not both"),
    (["BP", "--agent", "critic"], "--agent names an agent of a system blueprint"),
    (["BP", "--thread", "a b"], "invalid thread id"),
    (["NO_SCRIPT"], "script"),
    (["SYSTEM", "--agent", "nobody"], "no agent named 'nobody'"),
    (["BROKEN"], "broken.toml:1:"),
])
async def test_a_bad_start_exits_2_with_one_line_before_serving(tmp_path: Path, args: Sequence[str], said: str) -> None:
    bp = agent_blueprint(tmp_path, "unused")
    no_script = tmp_path / "no_script.toml"
    no_script.write_text(f'model = "scripted:{tmp_path / "absent.json"}"\n', encoding="utf-8")
    system = tmp_path / "team.toml"
    system.write_text('system = "team"\n\n[[agents]]\nname = "planner"\nmodel = "echo"\n', encoding="utf-8")
    broken = tmp_path / "broken.toml"
    broken.write_text('modle = "echo"\n', encoding="utf-8")
    files = {"BP": bp, "NO_SCRIPT": no_script, "SYSTEM": system, "BROKEN": broken}
    given = [str(files[a]) if a in files else a for a in args]
    done = await run_cli("mcp", *given, "--store", f"sqlite:{tmp_path / 'db'}", cwd=tmp_path) \
        if "--store" not in given else await run_cli("mcp", *given, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("livecontext: error: ") and said in line
    assert done.stdout == ""


async def test_a_port_in_use_exits_2_with_one_line(tmp_path: Path) -> None:
    bp = agent_blueprint(tmp_path, "unused")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = await run_cli("mcp", str(bp), "--store", f"sqlite:{tmp_path / 'db'}", "--port", str(port))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"livecontext: error: cannot listen at 127.0.0.1:{port}: ")


async def test_without_the_mcp_package_the_command_says_what_to_install(tmp_path: Path) -> None:
    bp = agent_blueprint(tmp_path, "unused")
    code = "import sys; sys.modules['mcp'] = None; from livecontext._command import main; main()"
    done = await trio.run_process([sys.executable, "-c", code, "mcp", str(bp)], capture_stdout=True,
                                  capture_stderr=True, check=False, env=cli_env(), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "livecontext: error: `livecontext mcp` needs the mcp package: pip install 'livecontext[mcp]'"]

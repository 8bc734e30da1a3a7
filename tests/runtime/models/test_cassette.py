"""Cassettes: a model's answers recorded into one readable file, replayed offline, and a
request the file lacks told as a diff against the nearest recorded one."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

import livecontext
from livecontext.protocol.history import ChatMessage, ModelReply, ModelRequest, Role, ToolCall, ToolSpec, Usage
from livecontext.runtime import UsageError
from livecontext.runtime.models import (
    CASSETTE_ENV,
    CassetteError,
    CassetteMissError,
    CassetteMode,
    CassetteModel,
    ModelClient,
    RetryingModel,
    ScriptedModel,
    TextCallback,
    cassette_mode,
    default_prices,
    find_price,
    make_model_client,
    open_model_client,
    split_cassette_spec,
)
from tests.support.openai_server import OpenAIServer, serve_openai, text_stream

pytestmark = [
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2\\.:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2\\.:ResourceWarning"),
]

ROOT = Path(__file__).resolve().parents[3]
SYSTEM = "You are a careful assistant.\nAnswer in one line."
ADD = ToolSpec("add", "Add two numbers.", '{"type": "object", "properties": {"a": {"type": "integer"}}}')


def request(system: str = SYSTEM, user: str = "hello", tools: tuple[ToolSpec, ...] = (ADD,),
            **extra: Any) -> ModelRequest:
    return ModelRequest(messages=(ChatMessage(Role.SYSTEM, system), ChatMessage(Role.USER, user)), tools=tools,
                        **extra)


class Fixed(ModelClient):
    """Answers every call with the next of ``replies``, streamed as the given pieces."""

    def __init__(self, *replies: tuple[ModelReply, list[str]], name: str = "openai:fixed") -> None:
        self.name = name
        self.replies = list(replies)
        self.calls = 0

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        reply, pieces = self.replies[self.calls]
        self.calls += 1
        for piece in pieces:
            await trio.lowlevel.checkpoint()
            if on_text is not None:
                on_text(piece)
        return reply


class Untouchable(ModelClient):
    """A client that must not be asked: replay answers from the file alone."""

    name = "openai:fixed"

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        raise AssertionError("replay asked the wrapped model")


@pytest.fixture
def no_cassette_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CASSETTE_ENV, raising=False)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with serve_openai() as running:
        yield running


def network_off(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


async def record(path: Path, *calls: tuple[ModelRequest, ModelReply, list[str]]) -> None:
    model = CassetteModel(path, Fixed(*[(reply, pieces) for _, reply, pieces in calls]), mode="record")
    for req, _, _ in calls:
        await model.complete(req)


# --- record and replay ---------------------------------------------------------------------


async def test_a_streamed_answer_recorded_from_a_real_server_replays_offline_with_the_same_chunks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.json"
    recorded: list[str] = []
    monkeypatch.setenv(CASSETTE_ENV, "record")
    with serve_openai() as server:
        server.script(text_stream("Hel", "lo", ", world", usage=(11, 7)))
        async with open_model_client(f"cassette:{path}:openai:test-model", base_url=server.base_url,
                                     api_key="sk-test-key-123456") as model:
            assert isinstance(model.inner, CassetteModel) and model.inner.mode is CassetteMode.RECORD
            first = await model.complete(request(), recorded.append)
        assert len(server.requests) == 1
    assert recorded == ["Hel", "lo", ", world"]

    # the server is gone, the network off, no key: replay answers from the file alone
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    network_off(monkeypatch)
    monkeypatch.setenv(CASSETTE_ENV, "replay")
    replayed: list[str] = []
    async with open_model_client(f"cassette:{path}:openai:test-model", base_url=server.base_url) as model:
        assert isinstance(model.inner, CassetteModel) and model.inner.inner is None  # never made
        again = await model.complete(request(), replayed.append)
    assert replayed == recorded
    assert again == first == ModelReply("Hello, world", (), "test-model", Usage(11, 7))


async def test_replay_never_asks_the_wrapped_model(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    reply = ModelReply("sum", (ToolCall("c1", "add", '{"a": 1}'),), "m", Usage(5, 2, 1))
    await record(path, (request(), reply, ["s", "um"]))
    pieces: list[str] = []
    replayed = await CassetteModel(path, Untouchable(), mode="replay").complete(request(), pieces.append)
    assert replayed == reply and pieces == ["s", "um"]


async def test_the_file_is_readable_json_with_each_request_its_answer_and_its_pieces(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(), ModelReply("line one\nline two", model="m"), ["line one\n", "line two"]))
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert text.startswith('{\n  "format": "livecontext-cassette",\n  "version": 1')
    [interaction] = data["interactions"]
    assert interaction["request"]["settings"] == {"model": "openai:fixed"}
    assert interaction["request"]["messages"][0] == {
        "role": "system", "content": ["You are a careful assistant.", "Answer in one line."]}
    assert interaction["request"]["tools"][0]["parameters"]["type"] == "object"  # a schema, not a string
    assert interaction["reply"]["text"] == ["line one", "line two"]
    assert interaction["chunks"] == ["line one\n", "line two"]
    assert interaction["sequence"] == 0 and len(interaction["key"]) == 64


async def test_each_answer_is_on_disk_before_the_next_call(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    model = CassetteModel(path, Fixed((ModelReply("one"), []), (ModelReply("two"), [])), mode="record")
    await model.complete(request(user="first"))
    assert len(json.loads(path.read_text())["interactions"]) == 1  # a crash now loses nothing answered
    await model.complete(request(user="second"))
    assert len(json.loads(path.read_text())["interactions"]) == 2
    assert not [p for p in tmp_path.iterdir() if p.name != "c.json"]  # no temporary file left


async def test_the_same_request_twice_replays_its_answers_in_order_then_the_last_again(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(), ModelReply("first"), []), (request(), ModelReply("second"), []))
    model = CassetteModel(path, Untouchable(), mode="replay")
    answers = [(await model.complete(request())).text for _ in range(3)]
    assert answers == ["first", "second", "second"]
    assert [i["sequence"] for i in json.loads(path.read_text())["interactions"]] == [0, 1]


async def test_the_thread_and_the_call_index_are_not_part_of_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(thread_id="run-1", call_index=0), ModelReply("yes"), []))
    model = CassetteModel(path, Untouchable(), mode="replay")
    assert (await model.complete(request(thread_id="run-2", call_index=7))).text == "yes"


async def test_a_failed_attempt_is_not_recorded_and_the_retry_is(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    script = ScriptedModel.from_turns([{"text": "after a retry", "fail": {"error": "server", "times": 1}}])
    model = RetryingModel(CassetteModel(path, script, mode="record"))
    model.policy = type(model.policy)(base_delay_s=0.0, jitter=0.0)
    assert (await model.complete(request())).text == "after a retry"
    assert len(json.loads(path.read_text())["interactions"]) == 1


async def test_a_recording_replaces_what_the_file_held_and_clients_recording_into_it_share_it(
        tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(user="old"), ModelReply("old"), []))
    fresh = tmp_path / "fresh.json"
    fresh.write_text(path.read_text())  # a cassette from an earlier run: re-recorded from scratch
    parent = CassetteModel(fresh, Fixed((ModelReply("parent"), ["par", "ent"])), mode="record")
    child = CassetteModel(fresh, Fixed((ModelReply("child"), ["child"])), mode="record")
    async with trio.open_nursery() as nursery:  # (a sub-agent's calls go on beside its parent's)
        nursery.start_soon(parent.complete, request(user="plan"))
        nursery.start_soon(child.complete, request(user="do a part"))
    texts = sorted(i["reply"]["text"] for i in json.loads(fresh.read_text())["interactions"])
    assert texts == ["child", "parent"]


# --- a miss ----------------------------------------------------------------------------------


async def test_a_changed_system_prompt_fails_with_a_diff_naming_the_system_prompt_and_its_line(
        tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(), ModelReply("ok"), []),
                 (request(system="Something else entirely.", user="bye", tools=()), ModelReply("no"), []))
    model = CassetteModel(path, Untouchable(), mode="replay")
    changed = "You are a careless assistant.\nAnswer in one line."
    with pytest.raises(CassetteMissError) as caught:
        await model.complete(request(system=changed))
    first_line, *details = str(caught.value).splitlines()
    assert f"cassette {path} has no recording of this request" in first_line
    assert "nearest recorded request (number 0 of 2)" in first_line  # the one with most in common
    assert "message 0 (system prompt) changed" in first_line
    assert "LIVECONTEXT_CASSETTE=record" in first_line
    assert details == ["message 0 (system prompt): its text changed (48 -> 49 chars)", "    @ line 1",
                       "    - You are a careful assistant.", "    + You are a careless assistant."]
    assert model.misses == [caught.value]


async def test_a_miss_is_logged_whole_with_the_error_on_its_record(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(), ModelReply("ok"), []))
    with caplog.at_level(logging.WARNING, logger="livecontext"), pytest.raises(CassetteMissError) as caught:
        await CassetteModel(path, Untouchable(), mode="replay").complete(request(user="changed"))
    [logged] = [r for r in caplog.records if hasattr(r, "cassette_miss")]
    assert logged.cassette_miss is caught.value and logged.getMessage() == str(caught.value)


async def test_an_added_tool_fails_naming_the_tool(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(), ModelReply("ok"), []))
    search = ToolSpec("search", "Search the web.", '{"type": "object"}')
    with pytest.raises(CassetteMissError, match=r"tool 'search' added"):
        await CassetteModel(path, Untouchable(), mode="replay").complete(request(tools=(ADD, search)))


async def test_a_changed_window_is_named_with_the_message_it_is_in(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    windows = "plan the trip\n\n[Window: notebook]\n(the notebook is empty)\n\n[Window: clock]\nnoon"
    await record(path, (request(user=windows), ModelReply("ok"), []))
    with pytest.raises(CassetteMissError) as caught:
        await CassetteModel(path, Untouchable(), mode="replay").complete(
            request(user=windows.replace("(the notebook is empty)", "- book a train")))
    assert "message 1 (user input): its window notebook changed" in str(caught.value).splitlines()[0]
    assert "    - (the notebook is empty)" in str(caught.value).splitlines()
    assert "    + - book a train" in str(caught.value).splitlines()


async def test_an_added_message_and_another_model_are_named(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(), ModelReply("ok"), []))
    longer = ModelRequest(request().messages + (ChatMessage(Role.ASSISTANT, "ok"), ChatMessage(Role.USER, "more")),
                          tools=(ADD,))
    model = CassetteModel(path, Untouchable(), mode="replay", model="openai:other")
    with pytest.raises(CassetteMissError) as caught:
        await model.complete(longer)
    first = str(caught.value).splitlines()[0]
    assert "message 2 (model output) added; message 3 (user input) added" in first
    assert "setting model: 'openai:fixed' -> 'openai:other'" in first


async def test_a_long_diff_is_cut_and_says_how_many_lines_are_left(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    before = "\n".join(f"line {n}" for n in range(100))
    await record(path, (request(user=before), ModelReply("ok"), []))
    after = "\n".join(f"line {n}" if n % 2 else f"changed {n}" for n in range(100))
    with pytest.raises(CassetteMissError) as caught:
        await CassetteModel(path, Untouchable(), mode="replay").complete(request(user=after))
    lines = str(caught.value).splitlines()
    assert len(lines) == 1 + 40 + 1 and lines[-1].startswith("(and ") and lines[-1].endswith(" more lines)")


async def test_an_empty_cassette_says_it_holds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": "livecontext-cassette", "version": 1, "interactions": []}))
    with pytest.raises(CassetteMissError, match="the cassette holds no recorded request"):
        await CassetteModel(path, Untouchable(), mode="replay").complete(request())


async def test_a_miss_is_not_retried(tmp_path: Path, no_cassette_env: None) -> None:
    path = tmp_path / "c.json"
    await record(path, (request(), ModelReply("ok"), []))
    async with open_model_client(f"cassette:{path}:openai:fixed") as model:
        with pytest.raises(CassetteMissError):
            await model.complete(request(user="other"))
        assert isinstance(model.inner, CassetteModel) and len(model.inner.misses) == 1


# --- secrets ---------------------------------------------------------------------------------


async def test_the_api_key_and_secret_env_values_are_never_written(
        tmp_path: Path, server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.json"
    key, token = "sk-live-abcdef0123456789", "ghp_tokenvalue0123456789"
    monkeypatch.setenv("MY_SERVICE_TOKEN", token)
    monkeypatch.setenv(CASSETTE_ENV, "record")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # (short: no secret)
    leaky = f"my key is {key}, my token {token}, see https://user:pa55word@example.com/x; false"
    server.script(text_stream(f"you said {key[:10]}", f"{key[10:]} and Bearer abcdefghijklmnop"))
    async with open_model_client(f"cassette:{path}:openai:test-model", base_url=server.base_url,
                                 api_key=key) as model:
        await model.complete(request(user=leaky))
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"  # the server got it
    text = path.read_text(encoding="utf-8")
    for secret in (key, token, "pa55word", "abcdefghijklmnop"):
        assert secret not in text
    assert "[redacted api key]" in text and "[redacted MY_SERVICE_TOKEN]" in text
    assert "https://[redacted]@example.com/x; false" in text
    data = json.loads(text)["interactions"][0]
    assert "".join(data["chunks"]) == data["reply"]["text"]  # (the key spanned two pieces)
    # the key was made of the request as sent: replaying the same request still finds it
    replay = CassetteModel(path, Untouchable(), mode="replay", model="openai:test-model")
    assert (await replay.complete(request(user=leaky))).text.startswith("you said [redacted api key]")


# --- the key ---------------------------------------------------------------------------------


def test_the_key_is_the_same_in_another_process() -> None:
    code = ("from livecontext.protocol.history import ChatMessage, ModelRequest, Role, ToolSpec\n"
            "from livecontext.runtime.models import CassetteModel, EchoModel\n"
            "r = ModelRequest((ChatMessage(Role.SYSTEM, 's\\u00e9'), ChatMessage(Role.USER, 'hi')),"
            " (ToolSpec('add', 'Add.', '{\"type\": \"object\", \"b\": 1}'),), 3, 'x')\n"
            "print(CassetteModel('unused.json', EchoModel(), mode='record').key(r))\n")
    here = CassetteModel("unused.json", livecontext.runtime.models.EchoModel(), mode="record").key(ModelRequest(
        (ChatMessage(Role.SYSTEM, "s\u00e9"), ChatMessage(Role.USER, "hi")),
        (ToolSpec("add", "Add.", '{"b": 1, "type": "object"}'),)))  # (the schema's key order does not count)
    env = {"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          check=True)
    assert done.stdout.strip() == here


def test_a_script_is_keyed_by_its_file_name_not_its_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "s.json").write_text(json.dumps({"turns": [{"text": "x"}]}))
    keys = {CassetteModel("c.json", ScriptedModel.from_file(tmp_path / f / "s.json"), mode="record").key(request())
            for f in ("a", "b")}
    assert len(keys) == 1


# --- specs and modes -------------------------------------------------------------------------


def test_the_spec_path_ends_where_a_model_spec_begins() -> None:
    assert split_cassette_spec("cassette:tests/c.json:openai:gpt-4o") == ("tests/c.json", "openai:gpt-4o")
    assert split_cassette_spec("cassette:C:/work/c.json:scripted:C:/s.json") == ("C:/work/c.json", "scripted:C:/s.json")
    assert split_cassette_spec("cassette:c.json:echo") == ("c.json", "echo")
    for bad in ("cassette:c.json", "cassette::echo", "cassette:c.json:openai:", "cassette:c.json:claude:x"):
        with pytest.raises(UsageError, match="is not cassette:PATH:SPEC"):
            split_cassette_spec(bad)


def test_a_cassette_of_a_cassette_is_refused() -> None:
    with pytest.raises(UsageError, match="records a cassette into a cassette"):
        make_model_client("cassette:a.json:cassette:b.json:echo")


def test_the_mode_comes_from_the_argument_else_the_environment_else_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CASSETTE_ENV, raising=False)
    assert cassette_mode() is CassetteMode.REPLAY
    monkeypatch.setenv(CASSETTE_ENV, "Record")
    assert cassette_mode() is CassetteMode.RECORD
    assert cassette_mode("replay") is CassetteMode.REPLAY
    monkeypatch.setenv(CASSETTE_ENV, "none")  # (pytest's --lc-record=none)
    assert cassette_mode() is CassetteMode.REPLAY
    monkeypatch.setenv(CASSETTE_ENV, "sometimes")
    with pytest.raises(UsageError, match="LIVECONTEXT_CASSETTE='sometimes' names no cassette mode: use record, "
                                         "replay or once"):
        cassette_mode()


def test_replaying_a_missing_cassette_is_refused_when_the_model_is_made(tmp_path: Path, no_cassette_env: None) -> None:
    with pytest.raises(CassetteError, match=r"no such file; record it first with LIVECONTEXT_CASSETTE=record"):
        make_model_client(f"cassette:{tmp_path / 'none.json'}:openai:gpt-4o")


@pytest.mark.parametrize(("content", "problem"), [
    ("{", "cannot be read as JSON"),
    ('{"interactions": []}', "not a cassette"),
    ('{"format": "livecontext-cassette", "version": 99, "interactions": []}', "format version 99"),
    ('{"format": "livecontext-cassette", "version": 1, "interactions": [{"key": "k"}]}', "lacks its key"),
])
def test_a_malformed_cassette_is_refused_in_a_line(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(CassetteError, match=problem):
        CassetteModel(path, Untouchable(), mode="replay")


def test_replay_needs_no_key_and_record_needs_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": "livecontext-cassette", "version": 1, "interactions": []}))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv(CASSETTE_ENV, "replay")
    assert isinstance(make_model_client(f"cassette:{path}:openai:gpt-4o"), CassetteModel)
    monkeypatch.setenv(CASSETTE_ENV, "record")
    with pytest.raises(UsageError, match="no API key"):  # told when the model is made
        make_model_client(f"cassette:{path}:openai:gpt-4o")


async def test_once_records_a_missing_cassette_then_replays_it(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    first = CassetteModel(path, Fixed((ModelReply("recorded"), [])), mode="once")
    assert first.mode is CassetteMode.RECORD
    await first.complete(request())
    later = CassetteModel(tmp_path / "other.json", Untouchable(), mode="once")
    assert later.mode is CassetteMode.RECORD
    again = CassetteModel(path, Untouchable(), mode="once")
    assert again.mode is CassetteMode.RECORD  # (this process records it: a sub-agent adds to it)
    fresh_process_code = (f"from livecontext.runtime.models import CassetteModel, EchoModel\n"
                          f"print(CassetteModel({str(path)!r}, EchoModel(), mode='once').mode.value)\n")
    done = subprocess.run([sys.executable, "-c", fresh_process_code], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    assert done.stdout.strip() == "replay"


def test_a_cassette_costs_what_the_model_it_records_costs() -> None:
    prices = default_prices()
    assert find_price("cassette:c.json:openai:gpt-4o", prices) == find_price("openai:gpt-4o", prices)


# --- through a whole agent ---------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_an_agent_run_records_then_replays_without_its_script(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "It is 3."}, {"text": "Bye."}]}))
    spec = f"cassette:{tmp_path / 'agent.json'}:scripted:{script}"

    async def run(system: str = "Be brief.") -> list[livecontext.Reply]:
        async with livecontext.open_agent(model=spec, tools=[add], system=system) as agent:
            return [await agent.send("add 1 and 2"), await agent.send("thanks")]

    monkeypatch.setenv(CASSETTE_ENV, "record")
    recorded = await run()
    assert [r.text for r in recorded] == ["It is 3.", "Bye."]
    script.unlink()  # replay needs no script: the answers come from the cassette
    monkeypatch.setenv(CASSETTE_ENV, "replay")
    replayed = await run()
    assert [(r.text, r.steps, r.reason) for r in replayed] == [(r.text, r.steps, r.reason) for r in recorded]
    # the engine's requests are the same run to run: a second replay finds them all again
    assert [r.text for r in await run()] == ["It is 3.", "Bye."]

    with caplog.at_level(logging.WARNING, logger="livecontext"):
        failed = (await run(system="Be verbose."))[0]
    assert failed.reason.startswith(f"failed: cassette {tmp_path / 'agent.json'} has no recording")
    assert "message 0 (system prompt) changed" in failed.reason
    assert "    - Be brief.\n    + Be verbose." in caplog.text  # the whole diff is logged


# --- any request and reply survive the file ------------------------------------------------------

_texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
_calls = st.builds(ToolCall, _texts, _texts, _texts)
_messages = st.one_of(
    st.builds(ChatMessage, st.sampled_from([Role.SYSTEM, Role.USER]), _texts),
    st.builds(ChatMessage, st.just(Role.ASSISTANT), _texts, st.lists(_calls, max_size=2).map(tuple)),
    st.builds(ChatMessage, st.just(Role.TOOL), _texts, st.just(()), _texts),
)
_tools = st.builds(ToolSpec, _texts, _texts, st.one_of(_texts, st.just('{"type": "object"}')))
_requests = st.builds(ModelRequest, st.lists(_messages, min_size=1, max_size=4).map(tuple),
                      st.lists(_tools, max_size=2, unique_by=lambda t: t.name).map(tuple))
_counts = st.integers(min_value=0, max_value=10**9)
_replies = st.builds(ModelReply, _texts, st.lists(_calls, max_size=2).map(tuple), _texts,
                     st.builds(Usage, _counts, _counts, _counts, st.booleans()))


@given(st.lists(st.tuples(_requests, _replies, st.lists(_texts, max_size=3)), min_size=1, max_size=3))
def test_any_requests_and_replies_come_back_from_the_file_as_they_were(
        calls: list[tuple[ModelRequest, ModelReply, list[str]]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.json"

        async def main() -> list[tuple[ModelReply, list[str]]]:
            await record(path, *calls)
            model = CassetteModel(path, Untouchable(), mode="replay")
            out = []
            for req, _, _ in calls:
                pieces: list[str] = []
                out.append((await model.complete(req, pieces.append), pieces))
            return out

        replayed = trio.run(main)
    expected: dict[str, list[tuple[ModelReply, list[str]]]] = {}
    model = CassetteModel("unused.json", Untouchable(), mode="record")
    for req, reply, pieces in calls:  # (the same request twice: its answers in order)
        expected.setdefault(model.key(req), []).append((reply, pieces))
    served: dict[str, int] = {}
    for (req, _, _), got in zip(calls, replayed):
        key = model.key(req)
        assert got == expected[key][served.get(key, 0)]
        served[key] = served.get(key, 0) + 1

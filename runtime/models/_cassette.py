"""Cassettes: a model's answers recorded once, replayed offline (``cassette:PATH:SPEC``).

A :class:`CassetteModel` wraps another client. Recording, it passes each request on and
stores the request with its answer (the streamed pieces included) in one readable JSON file;
replaying, it answers from the file alone and never makes the client it wraps, so a test
runs offline, without a key. A request the file does not hold fails with a
:class:`CassetteMissError` whose message is a diff against the nearest recorded request.

The key of a request is a SHA-256 of its canonical JSON: the messages (roles, text, tool
calls, tool results), the tools' names, descriptions and schemas, and the model settings (the
model spec). Nothing that changes from run to run is in it: not the thread id, not the call's
index. Identical requests get the recorded answers in order (a sequence per key).
"""

from __future__ import annotations

import contextlib
import difflib
import enum
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import trio

from livecontext.protocol.history import ChatMessage, ModelReply, ModelRequest, Role, ToolCall, ToolSpec, Usage

from .. import UsageError
from ._client import ModelClient, TextCallback

log = logging.getLogger("livecontext")

CASSETTE_ENV = "LIVECONTEXT_CASSETTE"
"""The environment variable that says whether cassettes record or replay."""

FORMAT = "livecontext-cassette"
VERSION = 1
"""The cassette file's format version; a file of another version is refused."""

SPEC_KINDS = ("echo", "scripted:", "openai:")
"""What may follow the path in ``cassette:PATH:SPEC``: the path ends at the first ``:`` that
one of these follows."""

_MAX_DETAIL_LINES = 40
_MAX_SUMMARY_ITEMS = 4
_MIN_SECRET_LEN = 8
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@")
_BEARER = re.compile(r"(?i)\b(?P<word>bearer|authorization:)\s+[A-Za-z0-9._~+/=-]{8,}")
_WINDOW = re.compile(r"^\[Window: (?P<name>[^\]]+)\]$")
_HEADER = re.compile(r"^\[[^\]\n]+\]$")


class CassetteMode(enum.Enum):
    """Whether a cassette records or replays."""

    RECORD = "record"
    """Pass every request to the wrapped model and record it with its answer (the file is
    written afresh: the first recording of a file in a process replaces what it held)."""
    REPLAY = "replay"
    """Answer from the file only; a request it does not hold fails (the default)."""
    ONCE = "once"
    """Record when the file does not exist yet (or is being recorded by this process), else replay."""


def cassette_mode(given: CassetteMode | str | None = None) -> CassetteMode:
    """The mode ``given``, else the one ``LIVECONTEXT_CASSETTE`` names, else ``REPLAY``.

    Accepted names: ``record``, ``replay``, ``once``, and ``none`` (record none: replay), in
    any case.

    Raises:
        UsageError: the name is none of those.
    """
    if isinstance(given, CassetteMode):
        return given
    source = "mode"
    if given is None:
        given = os.environ.get(CASSETTE_ENV, "").strip()
        source = CASSETTE_ENV
        if not given:
            return CassetteMode.REPLAY
    name = given.strip().lower()
    if name == "none":
        return CassetteMode.REPLAY
    try:
        return CassetteMode(name)
    except ValueError:
        raise UsageError(f"{source}={given!r} names no cassette mode: use record, replay or once") from None


def split_cassette_spec(spec: str) -> tuple[str, str]:
    """``(PATH, SPEC)`` of ``cassette:PATH:SPEC``.

    The path ends at the first ``:`` followed by a model spec's kind (``echo``,
    ``scripted:``, ``openai:``), so it may hold colons itself (``C:/...``) as long as no part
    of it looks like one.

    Raises:
        UsageError: ``spec`` is not of that form.
    """
    body = spec.removeprefix("cassette:")
    start = 0
    while (colon := body.find(":", start)) != -1:
        rest = body[colon + 1 :]
        # (cassette: too, so that a cassette of a cassette is found, and refused)
        if colon > 0 and (rest == "echo" or any(rest.startswith(k) and len(rest) > len(k)
                                                 for k in (*SPEC_KINDS, "cassette:") if k.endswith(":"))):
            return body[:colon], rest
        start = colon + 1
    raise UsageError(
        f"model spec {spec!r} is not cassette:PATH:SPEC: give a file and the model it records, "
        "e.g. cassette:tests/cassettes/greet.json:openai:gpt-4o-mini (SPEC is echo, scripted:PATH or openai:MODEL)"
    )


def model_identity(spec: str) -> str:
    """The model setting a request's key holds for the client ``spec``: the spec itself, but
    a script's file by its name only (its folder is where the test runs, not the model)."""
    kind, colon, rest = spec.partition(":")
    if kind == "scripted" and colon:
        return f"scripted:{os.path.basename(rest)}"
    return spec


class CassetteError(UsageError):
    """A cassette file cannot be read: missing (in replay), not JSON, or not a cassette."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"cassette {path}: {problem}")
        self.path = path
        """The cassette file."""


class CassetteMissError(UsageError):
    """A replaying cassette holds no recording of the request it was asked.

    Its first line says which cassette, and what differs from the nearest recorded request
    (the engine reports a failed call by that line); the lines after it show each difference
    (a message's first changed lines, a tool, a setting). Not transient: it is never retried.
    Each one is also logged whole, as a warning of the ``livecontext`` logger whose record
    carries it as ``record.cassette_miss`` (a miss in an analyzer's or a recap's call, which
    fails no run, is found there).
    """

    def __init__(self, path: str, summary: str, details: Sequence[str], key: str) -> None:
        advice = (f"re-record it with {CASSETTE_ENV}=record (pytest: --lc-record) if the change is meant")
        text = f"cassette {path} has no recording of this request: {summary}; {advice}"
        if details:
            text += "\n" + "\n".join(details)
        super().__init__(text)
        self.path = path
        """The cassette file."""
        self.summary = summary
        """What differs from the nearest recorded request, in a line."""
        self.details = tuple(details)
        """The differences, one line each (capped; the last line says how many more)."""
        self.key = key
        """The key of the request that missed."""


# --- the request as data -------------------------------------------------------------------


def request_data(request: ModelRequest, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the model sees it, as plain JSON data: its settings, messages and tools
    (no thread id, no call index)."""
    return {
        "settings": dict(settings),
        "messages": [_message_data(m) for m in request.messages],
        "tools": [_tool_data(t) for t in request.tools],
    }


def request_key(data: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of ``data``'s canonical JSON: sorted keys, no spaces, ASCII."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _message_data(message: ChatMessage) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role.value, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [_call_data(c) for c in message.tool_calls]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    return data


def _call_data(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _tool_data(tool: ToolSpec) -> dict[str, Any]:
    try:
        parameters: Any = json.loads(tool.parameters_json)
    except json.JSONDecodeError:
        parameters = tool.parameters_json  # (kept as written: the wire refuses it anyway)
    return {"name": tool.name, "description": tool.description, "parameters": parameters}


def _reply_data(reply: ModelReply) -> dict[str, Any]:
    usage = reply.usage
    return {
        "text": reply.text,
        "tool_calls": [_call_data(c) for c in reply.tool_calls],
        "model": reply.model,
        "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                  "cached_tokens": usage.cached_tokens, "counted": usage.counted},
    }


def _reply_from(data: Mapping[str, Any]) -> ModelReply:
    usage = data.get("usage") or {}
    return ModelReply(
        text=data["text"],
        tool_calls=tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in data.get("tool_calls", ())),
        model=data.get("model", ""),
        usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                    int(usage.get("cached_tokens", 0)), bool(usage.get("counted", False))),
    )


# --- the file: readable text in, plain data out -------------------------------------------


def _readable(text: str) -> str | list[str]:
    """A text of several lines as its list of lines (read as a diff reads), else itself."""
    return text.split("\n") if "\n" in text else text


def _plain(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    raise ValueError(f"{where} is neither a text nor a list of lines")


def _to_file(interaction: Mapping[str, Any]) -> dict[str, Any]:
    request = interaction["request"]
    reply = interaction["reply"]
    return {
        "key": interaction["key"],
        "sequence": interaction["sequence"],
        "request": {
            "settings": request["settings"],
            "messages": [{**m, "content": _readable(m["content"])} for m in request["messages"]],
            "tools": [{**t, "description": _readable(t["description"])} for t in request["tools"]],
        },
        "reply": {**reply, "text": _readable(reply["text"])},
        "chunks": list(interaction["chunks"]),
    }


def _from_file(item: Any, number: int) -> dict[str, Any]:
    where = f"interaction {number}"
    if not isinstance(item, dict):
        raise ValueError(f"{where} is not an object")
    request, reply = item.get("request"), item.get("reply")
    if not isinstance(request, dict) or not isinstance(reply, dict) or not isinstance(item.get("key"), str):
        raise ValueError(f"{where} lacks its key, request or reply")
    messages = [{**m, "content": _plain(m.get("content", ""), f"{where}'s message {i} content")}
                for i, m in enumerate(request.get("messages", []))]
    tools = [{**t, "description": _plain(t.get("description", ""), f"{where}'s tool {i} description")}
             for i, t in enumerate(request.get("tools", []))]
    chunks = item.get("chunks", [])
    if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
        raise ValueError(f"{where}'s chunks are not a list of texts")
    plain_reply = {**reply, "text": _plain(reply.get("text", ""), f"{where}'s reply text")}
    _reply_from(plain_reply)  # (its shape is checked here, not at the call that replays it)
    return {
        "key": item["key"],
        "sequence": int(item.get("sequence", 0)),
        "request": {"settings": request.get("settings", {}), "messages": messages, "tools": tools},
        "reply": plain_reply,
        "chunks": chunks,
    }


def load_cassette(path: str) -> list[dict[str, Any]]:
    """The interactions recorded in the cassette at ``path``, as plain data.

    Raises:
        CassetteError: the file is missing, is not JSON, or is not a cassette of this version.
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise CassetteError(path, f"no such file; record it first with {CASSETTE_ENV}=record "
                                  "(pytest: --lc-record)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CassetteError(path, f"cannot be read as JSON ({exc}); record it again with {CASSETTE_ENV}=record") \
            from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CassetteError(path, f"not a cassette (no \"format\": \"{FORMAT}\"); record it again with "
                                  f"{CASSETTE_ENV}=record")
    if data.get("version") != VERSION:
        raise CassetteError(path, f"format version {data.get('version')!r}, this livecontext reads version "
                                  f"{VERSION}; record it again with {CASSETTE_ENV}=record")
    items = data.get("interactions")
    if not isinstance(items, list):
        raise CassetteError(path, "its \"interactions\" is not a list")
    try:
        return [_from_file(item, n) for n, item in enumerate(items)]
    except (ValueError, KeyError, TypeError) as exc:
        raise CassetteError(path, f"{exc}; record it again with {CASSETTE_ENV}=record") from None


def _file_text(interactions: Sequence[Mapping[str, Any]]) -> str:
    data = {"format": FORMAT, "version": VERSION, "interactions": [_to_file(i) for i in interactions]}
    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, still JSON
        text = json.dumps(data, indent=2, ensure_ascii=True)
    return text + "\n"


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# --- secrets -------------------------------------------------------------------------------


def _secrets(given: Iterable[str]) -> list[tuple[str, str]]:
    """``(value, label)`` of every secret to keep out of a file: those given, and the values
    of environment variables named like a key, token, secret or password (long ones only:
    ``TOKENIZERS_PARALLELISM=false`` is no secret)."""
    found = [(value, "api key") for value in given if value and len(value) >= 4]
    found += [(value, name) for name, value in os.environ.items()
              if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET_LEN]
    return sorted(found, key=lambda pair: -len(pair[0]))  # (a longer one first: it may hold a shorter)


def _redact_text(text: str, secrets: Sequence[tuple[str, str]]) -> str:
    for value, label in secrets:
        if value in text:
            text = text.replace(value, f"[redacted {label}]")
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}[redacted]@", text)
    return _BEARER.sub(lambda m: f"{m['word']} [redacted]", text)


def _redact(value: Any, secrets: Sequence[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        return _redact_text(value, secrets)
    if isinstance(value, list):
        return [_redact(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _redact(v, secrets) for k, v in value.items()}
    return value


def _redact_interaction(interaction: dict[str, Any], secrets: Sequence[tuple[str, str]]) -> dict[str, Any]:
    chunks = interaction["chunks"]
    joined = "".join(chunks)
    redacted = _redact_text(joined, secrets)
    return {
        **interaction,
        "request": _redact(interaction["request"], secrets),
        "reply": _redact(interaction["reply"], secrets),
        # a secret may span pieces: then the pieces are one, redacted
        "chunks": [_redact_text(c, secrets) for c in chunks] if redacted == joined else [redacted],
    }


# --- recordings shared by the clients of one process ---------------------------------------


class _Recording:
    """What this process recorded into one cassette file: every client recording into the
    file adds to it (an agent's model and its sub-agents' share a cassette), and the whole of
    it is written after each call."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.interactions: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._written = 0  # the number of interactions of the newest text written

    def add(self, interaction: dict[str, Any]) -> tuple[int, str]:
        self.interactions.append(interaction)
        return len(self.interactions), _file_text(self.interactions)

    def write(self, version: int, text: str) -> None:
        # (calls write from threads at once: an older text never replaces a newer one)
        with self._lock:
            if version <= self._written:
                return
            _write_atomically(self.path, text)
            self._written = version


_RECORDINGS: dict[str, _Recording] = {}
_RECORDINGS_LOCK = threading.Lock()


def _recording(path: str) -> _Recording:
    where = os.path.abspath(path)
    with _RECORDINGS_LOCK:
        found = _RECORDINGS.get(where)
        if found is None:
            found = _RECORDINGS[where] = _Recording(path)
        return found


def _recorded_here(path: str) -> bool:
    with _RECORDINGS_LOCK:
        return os.path.abspath(path) in _RECORDINGS


# --- the client ----------------------------------------------------------------------------


class CassetteModel(ModelClient):
    """Records a model's answers into a cassette file, or replays them from it.

    Args:
        path: The cassette file (JSON; made with its folder when recording).
        inner: The client to record (or a function that makes it: called only when
            recording, so that replaying needs no key and no network).
        mode: ``record``, ``replay`` or ``once`` (default: :func:`cassette_mode`, which reads
            ``LIVECONTEXT_CASSETTE``, else replay).
        model: The model spec that the requests' key holds (default: ``inner``'s name;
            required when ``inner`` is a function).
        secrets: Values never written to the file (the API key), besides those of environment
            variables named like a key, token, secret or password.

    In replay, the file is read when the client is made, and a missing or malformed file is
    refused at once (:class:`CassetteError`). A request asked more times than it was recorded
    gets its last recorded answer again.

    Raises:
        CassetteError: replaying, and the file is missing or is not a cassette.
        UsageError: the mode names no mode; no model spec for a function ``inner``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        inner: ModelClient | Callable[[], ModelClient],
        *,
        mode: CassetteMode | str | None = None,
        model: str | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self.path = os.fspath(path)
        """The cassette file."""
        if model is None:
            if not isinstance(inner, ModelClient):
                raise UsageError("CassetteModel needs model= (the model spec) when inner is a function")
            model = inner.name
        self.model = model
        """The spec of the model recorded."""
        self.name = f"cassette:{self.path}:{model}"
        self.settings: dict[str, Any] = {"model": model_identity(model)}
        """The model settings every request's key holds."""
        chosen = cassette_mode(mode)
        if chosen is CassetteMode.ONCE:
            recording = not os.path.exists(self.path) or _recorded_here(self.path)
            chosen = CassetteMode.RECORD if recording else CassetteMode.REPLAY
        self.mode = chosen
        """``RECORD`` or ``REPLAY`` (``once`` resolved when the client was made)."""
        self._secrets = tuple(secrets)
        self._factory = inner if not isinstance(inner, ModelClient) else None
        self._inner: ModelClient | None = inner if isinstance(inner, ModelClient) else None
        self._replay: dict[str, list[dict[str, Any]]] = {}
        self._recorded: list[dict[str, Any]] = []
        self._served: dict[str, int] = {}
        self.misses: list[CassetteMissError] = []
        """Every miss this client raised, in order (a test can check there was none even where
        the error was reported as a failed run, or logged)."""
        if self.mode is CassetteMode.REPLAY:
            self._recorded = load_cassette(self.path)
            for interaction in self._recorded:
                self._replay.setdefault(interaction["key"], []).append(interaction)
        elif self._inner is None:
            assert self._factory is not None
            self._inner = self._factory()  # (now: a missing key is told at once, not at the first call)

    @property
    def inner(self) -> ModelClient | None:
        """The client recorded (``None`` in replay: it is never made)."""
        return self._inner

    def key(self, request: ModelRequest) -> str:
        """The key ``request`` is recorded under."""
        return request_key(request_data(request, self.settings))

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        """Answer from the cassette (replay), or ask the wrapped model and record (record).

        Raises:
            CassetteMissError: replaying, and the cassette holds no recording of ``request``.
            ModelError: recording, and the wrapped model failed (nothing is recorded).
        """
        data = request_data(request, self.settings)
        key = request_key(data)
        if self.mode is CassetteMode.REPLAY:
            return await self._play(key, data, on_text)
        return await self._record(key, data, request, on_text)

    async def _play(self, key: str, data: dict[str, Any], on_text: TextCallback | None) -> ModelReply:
        takes = self._replay.get(key)
        if not takes:
            miss = _miss(self.path, key, data, self._recorded, _secrets(self._secrets))
            self.misses.append(miss)
            # whole, where a failed run is told by its first line only (the engine's reason),
            # and findable: a test runner can fail a test on any record that carries one
            log.warning("%s", miss, extra={"cassette_miss": miss})
            raise miss
        served = self._served.get(key, 0)
        self._served[key] = served + 1
        take = takes[min(served, len(takes) - 1)]
        await trio.lowlevel.checkpoint()  # (a call is a cancel point, as a real one is)
        for piece in take["chunks"]:
            if on_text is not None:
                on_text(piece)
            await trio.lowlevel.checkpoint()
        return _reply_from(take["reply"])

    async def _record(self, key: str, data: dict[str, Any], request: ModelRequest,
                      on_text: TextCallback | None) -> ModelReply:
        assert self._inner is not None
        chunks: list[str] = []

        def collect(piece: str) -> None:
            chunks.append(piece)
            if on_text is not None:
                on_text(piece)

        reply = await self._inner.complete(request, collect)
        recording = _recording(self.path)
        sequence = sum(1 for i in recording.interactions if i["key"] == key)
        interaction = _redact_interaction(
            {"key": key, "sequence": sequence, "request": data, "reply": _reply_data(reply), "chunks": chunks},
            _secrets(self._secrets))
        version, text = recording.add(interaction)
        # shielded: a call answered is on disk before the caller may be cancelled
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(recording.write, version, text)
        return reply

    async def aclose(self) -> None:
        """Close the wrapped client, if it was made."""
        if self._inner is not None:
            await self._inner.aclose()


# --- the diff of a miss --------------------------------------------------------------------


def _message_text(message: Mapping[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=True)


def _nearest(data: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]]) -> int:
    """The index of the recorded request nearest to ``data``: most messages in common, then
    the same tools and settings, then the most text in common."""
    live = [_message_text(m) for m in data["messages"]]

    def common(request: Mapping[str, Any]) -> int:
        theirs = [_message_text(m) for m in request["messages"]]
        matcher = difflib.SequenceMatcher(None, live, theirs, autojunk=False)
        return sum(block.size for block in matcher.get_matching_blocks())

    scored = [(common(r["request"]), r["request"]["tools"] == data["tools"],
               r["request"]["settings"] == data["settings"], -i) for i, r in enumerate(recorded)]
    best = max(scored)
    ties = [i for i, score in enumerate(scored) if score[:3] == best[:3]]
    if len(ties) == 1:
        return ties[0]
    text = "\n".join(live)

    def closeness(i: int) -> float:
        theirs = "\n".join(_message_text(m) for m in recorded[i]["request"]["messages"])
        return difflib.SequenceMatcher(None, text, theirs, autojunk=False).ratio()

    return max(ties, key=lambda i: (closeness(i), -i))


def _kind(messages: Sequence[Mapping[str, Any]], position: int) -> str:
    """What the message at ``position`` is, in words: ``system prompt``, ``user input``, ``tool
    result of add``..."""
    message = messages[position]
    role = message["role"]
    if role == Role.SYSTEM.value:
        return "system prompt" if position == 0 else "system message"
    if role == Role.TOOL.value:
        call_id = message.get("tool_call_id")
        for earlier in reversed(messages[:position]):
            for call in earlier.get("tool_calls", ()):
                if call["id"] == call_id:
                    return f"tool result of {call['name']}"
        return "tool result"
    if role == Role.ASSISTANT.value:
        calls = [c["name"] for c in message.get("tool_calls", ())]
        return f"model output calling {', '.join(calls)}" if calls else "model output"
    first = message["content"].split("\n", 1)[0]
    if _WINDOW.match(first):
        return "the apps' windows"
    if _HEADER.match(first):
        return f"user message {first}"
    return "user input"


def _segments(text: str) -> list[tuple[str, list[str]]]:
    """``text`` cut at its ``[Window: NAME]`` lines: ``("text", lines)`` first, then one
    ``("window NAME", lines)`` per window."""
    found: list[tuple[str, list[str]]] = [("text", [])]
    for line in text.split("\n"):
        window = _WINDOW.match(line)
        if window:
            found.append((f"window {window['name']}", []))
        found[-1][1].append(line)
    return found


def _line_diff(old: Sequence[str], new: Sequence[str], indent: str = "    ") -> list[str]:
    """The changed lines of ``old`` against ``new``, ``-``/``+``, with the first changed line's
    number."""
    out: list[str] = []
    for group in difflib.SequenceMatcher(None, list(old), list(new), autojunk=False).get_grouped_opcodes(0):
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                continue
            out.append(f"{indent}@ line {i1 + 1}")
            out += [f"{indent}- {line}" for line in old[i1:i2]]
            out += [f"{indent}+ {line}" for line in new[j1:j2]]
    return out


def _message_changes(label: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """What changed in one message: ``(summary items, detail lines)``."""
    items: list[str] = []
    details: list[str] = []
    if old["role"] != new["role"]:
        items.append(f"{label}: role {old['role']} -> {new['role']}")
    if old["content"] != new["content"]:
        old_parts, new_parts = dict(_segments(old["content"])), dict(_segments(new["content"]))
        changed = []
        for name in [*old_parts, *[n for n in new_parts if n not in old_parts]]:
            before, after = old_parts.get(name), new_parts.get(name)
            if before == after or (name == "text" and not before and after == [""]):
                continue
            what = ("its text" if name == "text" else f"its {name}")
            if before is None:
                changed.append(f"{what} added")
            elif after is None:
                changed.append(f"{what} removed")
            else:
                changed.append(f"{what} changed")
            size = (f" ({len(chr(10).join(before or []))} -> {len(chr(10).join(after or []))} chars)"
                    if before is not None and after is not None else "")
            details.append(f"{label}: {changed[-1]}{size}")
            details += _line_diff(before or [], after or [])
        items.append(f"{label} changed" if changed == ["its text changed"] else f"{label}: {', '.join(changed)}")
    old_calls, new_calls = old.get("tool_calls", []), new.get("tool_calls", [])
    if old_calls != new_calls:
        items.append(f"{label}: tool calls changed")
        details.append(f"{label}: tool calls changed")
        details += _line_diff([json.dumps(c, ensure_ascii=False) for c in old_calls],
                              [json.dumps(c, ensure_ascii=False) for c in new_calls])
    if old.get("tool_call_id") != new.get("tool_call_id"):
        items.append(f"{label}: answers call {new.get('tool_call_id')} instead of {old.get('tool_call_id')}")
    return items, details


def _describe_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """What differs from the recorded request ``old`` to the live ``new``: ``(summary items,
    detail lines)``."""
    items: list[str] = []
    details: list[str] = []
    before, after = old["messages"], new["messages"]
    matcher = difflib.SequenceMatcher(None, [_message_text(m) for m in before], [_message_text(m) for m in after],
                                      autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            label = f"message {j1 + k} ({_kind(after, j1 + k)})"
            more_items, more_details = _message_changes(label, before[i1 + k], after[j1 + k])
            items += more_items
            details += more_details
        for j in range(j1 + paired, j2):
            label = f"message {j} ({_kind(after, j)}) added"
            items.append(label)
            details.append(label)
            details += [f"    + {line}" for line in after[j]["content"].split("\n")[:3]]
        for i in range(i1 + paired, i2):
            label = f"recorded message {i} ({_kind(before, i)}) removed"
            items.append(label)
            details.append(label)
            details += [f"    - {line}" for line in before[i]["content"].split("\n")[:3]]
    old_tools = {t["name"]: t for t in old["tools"]}
    new_tools = {t["name"]: t for t in new["tools"]}
    for name in sorted(new_tools.keys() - old_tools.keys()):
        items.append(f"tool {name!r} added")
    for name in sorted(old_tools.keys() - new_tools.keys()):
        items.append(f"tool {name!r} removed")
    for name in sorted(old_tools.keys() & new_tools.keys()):
        if old_tools[name] != new_tools[name]:
            parts = [part for part in ("description", "parameters") if old_tools[name][part] != new_tools[name][part]]
            items.append(f"tool {name!r}: {' and '.join(parts)} changed")
    if [t["name"] for t in old["tools"] if t["name"] in new_tools] != \
            [t["name"] for t in new["tools"] if t["name"] in old_tools]:
        items.append("the tools' order changed")
    for setting in sorted(old["settings"].keys() | new["settings"].keys()):
        was, now = old["settings"].get(setting), new["settings"].get(setting)
        if was != now:
            items.append(f"setting {setting}: {was!r} -> {now!r}")
    return items, details


def _miss(path: str, key: str, data: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]],
          secrets: Sequence[tuple[str, str]]) -> CassetteMissError:
    live = _redact(dict(data), secrets)
    shape = f"{len(data['messages'])} messages, {len(data['tools'])} tools, model {data['settings'].get('model')}"
    if not recorded:
        return CassetteMissError(path, f"the cassette holds no recorded request (this one: {shape})", [], key)
    nearest = _nearest(live, recorded)
    items, details = _describe_changes(recorded[nearest]["request"], live)
    if not items:  # (only a redacted secret differs)
        items = ["it differs only in a value the cassette holds redacted"]
    shown = "; ".join(items[:_MAX_SUMMARY_ITEMS])
    if len(items) > _MAX_SUMMARY_ITEMS:
        shown += f"; and {len(items) - _MAX_SUMMARY_ITEMS} more"
    summary = (f"against the nearest recorded request (number {nearest} of {len(recorded)}), "
               f"{shown}")
    if len(details) > _MAX_DETAIL_LINES:
        left = len(details) - _MAX_DETAIL_LINES
        details = [*details[:_MAX_DETAIL_LINES], f"(and {left} more lines)"]
    return CassetteMissError(path, summary, details, key)

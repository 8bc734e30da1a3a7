"""A real, local, scripted OpenAI-compatible HTTP server for tests.

The real ``openai`` client talks HTTP to it: nothing is mocked below the socket. Each test
scripts the replies, one per request, in order, and reads back the requests received::

    with serve_openai() as server:
        server.script(text_stream("Hel", "lo"))
        async with open_model_client("openai:test-model", base_url=server.base_url, ...) as m:
            ...
        assert server.requests[0].body["messages"] == [...]

Replies:

- :class:`Stream`: a ``200 text/event-stream`` body of server-sent events
  (``data: {...}\\n\\n`` in the ``chat.completion.chunk`` format, then ``data: [DONE]``),
  sent with chunked transfer encoding like real servers do. It can also be slow (a delay before
  the headers or before each event), end without ``[DONE]``, or be cut mid-way (the socket is
  closed without ending the chunked body).
- :class:`Status`: an error status with an OpenAI-style JSON error body (429, 500, 400...).
- :class:`Garbage`: a 200 whose body is not what an OpenAI-compatible server sends.

It runs a stdlib :class:`http.server.ThreadingHTTPServer` in a thread, on 127.0.0.1 and an
ephemeral port. Delays wait on an event set when the server closes, so a test never waits for a
slow reply it has stopped caring about.
"""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from attrs import field, frozen

__all__ = [
    "Garbage",
    "OpenAIServer",
    "ReceivedRequest",
    "Reply",
    "Status",
    "Stream",
    "chunk",
    "serve_openai",
    "text_stream",
    "tool_call_delta",
    "usage_chunk",
]

MODEL = "test-model"


@frozen
class Stream:
    """A streamed ``200`` reply: one server-sent event per chunk."""

    chunks: Sequence[dict[str, Any]]
    """The ``chat.completion.chunk`` objects, sent in order."""
    done: bool = True
    """Send ``data: [DONE]`` after the chunks (real servers do)."""
    cut: bool = False
    """Close the socket after the chunks without ending the body (a connection lost mid-way)."""
    headers_delay_s: float = 0.0
    """Wait this long before sending the status line (a server slow to answer)."""
    chunk_delay_s: float = 0.0
    """Wait this long before each chunk (a slow stream)."""


@frozen
class Status:
    """An error reply: ``code`` with an OpenAI-style JSON error body."""

    code: int
    message: str = "scripted error"
    error_type: str = "server_error"
    retry_after: str | None = None
    """The ``retry-after`` header to send, if any."""


@frozen
class Garbage:
    """A ``200`` reply whose body is not an OpenAI chat-completion stream."""

    body: bytes
    content_type: str = "text/event-stream"


Reply = Stream | Status | Garbage


@frozen
class ReceivedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The JSON body, decoded (``None`` if there was none)."""


def chunk(
    *,
    content: str | None = None,
    role: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    model: str = MODEL,
) -> dict[str, Any]:
    """Build one ``chat.completion.chunk`` with a single choice."""
    delta: dict[str, Any] = {}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def usage_chunk(
    prompt_tokens: int, completion_tokens: int, model: str = MODEL, *, cached_tokens: int | None = None
) -> dict[str, Any]:
    """Build the final chunk sent with ``stream_options.include_usage``: no choices, a usage
    (with ``prompt_tokens_details.cached_tokens`` when ``cached_tokens`` is given)."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [],
        "usage": usage,
    }


def tool_call_delta(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    """One entry of ``delta.tool_calls``: a piece of the tool call at ``index``."""
    entry: dict[str, Any] = {"index": index}
    if id is not None:
        entry["id"] = id
        entry["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        entry["function"] = function
    return entry


def text_stream(*pieces: str, usage: tuple[int, int] | None = (11, 7), **options: Any) -> Stream:
    """A complete streamed text answer: a role chunk, one chunk per piece, ``stop``, usage."""
    chunks = [chunk(role="assistant", content="")]
    chunks += [chunk(content=piece) for piece in pieces]
    chunks.append(chunk(finish_reason="stop"))
    if usage is not None:
        chunks.append(usage_chunk(*usage))
    return Stream(chunks, **options)


@frozen
class _Scripted:
    replies: collections.deque[Reply] = field(factory=collections.deque)
    requests: list[ReceivedRequest] = field(factory=list)
    lock: threading.Lock = field(factory=threading.Lock)
    closing: threading.Event = field(factory=threading.Event)


class OpenAIServer:
    """The running server: script replies with :meth:`script`, read :attr:`requests`."""

    def __init__(self, httpd: ThreadingHTTPServer, scripted: _Scripted) -> None:
        self._httpd = httpd
        self._scripted = scripted

    @property
    def base_url(self) -> str:
        """The URL to give the client, ending in ``/v1``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies: the next requests get them, one each, in order."""
        with self._scripted.lock:
            self._scripted.replies.extend(replies)

    @property
    def requests(self) -> list[ReceivedRequest]:
        """The requests received so far (a copy)."""
        with self._scripted.lock:
            return list(self._scripted.requests)

    @property
    def unused_replies(self) -> int:
        """How many scripted replies no request has taken yet."""
        with self._scripted.lock:
            return len(self._scripted.replies)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Httpd
    timeout = 10  # an idle keep-alive connection does not keep its thread forever

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        pass  # keep the test output quiet

    def do_POST(self) -> None:
        scripted = self.server.scripted
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with scripted.lock:
            scripted.requests.append(
                ReceivedRequest(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
            )
            number = len(scripted.requests)
            reply = scripted.replies.popleft() if scripted.replies else None
        try:
            if reply is None:
                self._send_status(Status(400, f"openai_server: no reply scripted for request #{number}"))
            elif isinstance(reply, Status):
                self._send_status(reply)
            elif isinstance(reply, Garbage):
                self._send_body(200, reply.content_type, reply.body)
            else:
                self._send_stream(reply)
        except OSError:
            # The client went away (a cancelled call): nothing left to answer.
            self.close_connection = True

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self.server.scripted.closing.wait(seconds)

    def _send_body(
        self, code: int, content_type: str, payload: bytes, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("content-type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_status(self, reply: Status) -> None:
        payload = {"error": {"message": reply.message, "type": reply.error_type, "code": None}}
        headers = {"retry-after": reply.retry_after} if reply.retry_after is not None else None
        self._send_body(reply.code, "application/json", json.dumps(payload).encode(), headers)

    def _send_stream(self, reply: Stream) -> None:
        self._wait(reply.headers_delay_s)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for data in reply.chunks:
            self._wait(reply.chunk_delay_s)
            self._write_chunk(f"data: {json.dumps(data)}\n\n".encode())
        if reply.cut:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.done:
            self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler stuck on a dead client must not block the test's exit

    def __init__(self, scripted: _Scripted) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scripted = scripted


@contextlib.contextmanager
def serve_openai() -> Iterator[OpenAIServer]:
    """Run a scripted OpenAI-compatible server for the duration of the ``with`` block."""
    scripted = _Scripted()
    httpd = _Httpd(scripted)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, name="openai-test-server", daemon=True
    )
    thread.start()
    try:
        yield OpenAIServer(httpd, scripted)
    finally:
        scripted.closing.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()

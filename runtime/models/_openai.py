"""A client for OpenAI and every server that speaks its chat-completions API.

It uses the ``openai`` package's ``AsyncOpenAI``, which runs on trio (through anyio and
httpx). Two things differ from asyncio use: the client must be closed explicitly
(:meth:`OpenAIModel.aclose`), because its garbage-collection fallback schedules the close on
an asyncio loop that does not exist under trio; and the package's own retries are turned off
(``max_retries=0``), because :class:`RetryingModel` retries for every client alike.
"""

from __future__ import annotations

import json
import typing
import os

import openai
import trio
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletionChunk

from livecontext.protocol import ModelReply, ModelRequest

from .. import ModelError, UsageError
from ._client import ModelClient, TextCallback
from ._errors import FailureKind, IncompatibleServerError, ModelRequestRejected, TransientModelError
from ._openai_wire import ChunkAccumulator, UnreadableChunk, to_openai_messages, to_openai_tools

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_CLOSE_TIMEOUT_S = 1.0
"""Closing a response or the client never holds up a cancelled caller for longer."""


class OpenAIModel(ModelClient):
    """Streams chat completions from an OpenAI-compatible server.

    One :meth:`complete` call is one HTTP request (no retries here). Text is passed to
    ``on_text`` as it streams; tool calls are assembled from their streamed pieces. A call can
    be cancelled at any point with a trio cancel scope.

    Args:
        model: The model name the server knows, e.g. ``"gpt-4o-mini"``.
        base_url: The API's base URL (ending in ``/v1``); else ``OPENAI_BASE_URL``; else
            OpenAI's.
        api_key: The key; else ``OPENAI_API_KEY``. Local servers that ignore keys still need
            some value.
        timeout_s: The longest wait for a connection, or for the next bytes of an answer.
        include_usage: Ask for token usage at the end of the stream
            (``stream_options.include_usage``); turn off for servers that refuse the option.
        send_cache_key: Send the request's thread id as ``prompt_cache_key``, so a provider
            that shards its prompt cache by key sends a thread's calls where its prefix is
            cached; turn off for servers that refuse the parameter.

    Raises:
        UsageError: No model name, no API key, or a base URL that is not http(s).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        include_usage: bool = True,
        send_cache_key: bool = True,
    ) -> None:
        if not model:
            raise UsageError("no model name: write the spec as openai:MODEL, e.g. openai:gpt-4o-mini")
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise UsageError(
                f"no API key for openai:{model}: set the OPENAI_API_KEY environment variable, or give one "
                "(--api-key on the command line, api_key= in Python; for a local server that ignores keys, "
                "any value will do)"
            )
        self.name = f"openai:{model}"
        self.model = model
        """The model name sent to the server."""
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        """Where requests go."""
        if not self.base_url.lower().startswith(("http://", "https://")):
            # (else every call fails the same way, and is retried as if the network were down)
            raise UsageError(
                f"the base URL {self.base_url!r} is not an http:// or https:// URL: give one such as "
                "http://localhost:8000/v1 (--base-url or OPENAI_BASE_URL)"
            )
        self._include_usage = include_usage
        self._send_cache_key = send_cache_key
        self._client = AsyncOpenAI(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=timeout_s)

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        """Make one streamed chat-completion request.

        Raises:
            TransientModelError: Rate limited (429), a server error (5xx), a connection
                failure, a stream cut mid-way, or a timeout.
            ModelRequestRejected: The server refused the request (another 4xx).
            IncompatibleServerError: The answer is not an OpenAI chat-completion stream (or
                not UTF-8).
            UsageError: The request cannot be expressed (a tool message without its call id,
                a tool schema that is not JSON).
        """
        messages = to_openai_messages(request.messages)
        tools = to_openai_tools(request.tools)
        accumulator = ChunkAccumulator(request.call_index)
        try:
            stream = await self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]  # plain dicts of the documented shape
                tools=tools if tools else openai.omit,  # type: ignore[arg-type]
                stream=True,
                stream_options={"include_usage": True} if self._include_usage else openai.omit,
                prompt_cache_key=request.thread_id if self._send_cache_key and request.thread_id else openai.omit,
            )
            # (stream=True makes it a stream; the ignores above hide that from the overloads)
            stream = typing.cast(AsyncStream[ChatCompletionChunk], stream)
            try:
                await self._read(stream, accumulator, on_text)
            finally:
                await _close(stream)
            return accumulator.reply(self.model)
        except openai.APIError as exc:
            raise self._translate(exc) from exc
        except UnreadableChunk as exc:
            raise IncompatibleServerError(self.base_url, str(exc)) from exc
        except UnicodeDecodeError as exc:  # (only the server's bytes are decoded in here)
            bad = exc.object[exc.start : exc.start + 1]
            raise IncompatibleServerError(
                self.base_url, f"its answer is not valid UTF-8 (byte 0x{bad.hex()} at offset {exc.start} of a line)"
            ) from exc

    async def _read(
        self,
        stream: AsyncStream[ChatCompletionChunk],
        accumulator: ChunkAccumulator,
        on_text: TextCallback | None,
    ) -> None:
        # Pull with __anext__ rather than `async for`: AsyncStream.__aiter__ is one more async
        # generator that, left unfinished, trio reports when it is garbage-collected.
        while True:
            try:
                chunk = await stream.__anext__()
            except StopAsyncIteration:
                return
            except json.JSONDecodeError as exc:
                raise UnreadableChunk(f"an event's data is not JSON ({exc.msg})") from exc
            text = accumulator.add(chunk)
            if text and on_text is not None:
                on_text(text)

    def _translate(self, exc: openai.APIError) -> ModelError:
        """The error of ours that ``exc`` means: transient or not, and what to do."""
        if isinstance(exc, openai.APITimeoutError):
            return TransientModelError(FailureKind.TIMEOUT, f"{self.base_url} did not answer in time")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            return TransientModelError(FailureKind.SERVER, f"the connection to {self.base_url} failed: {cause}")
        if isinstance(exc, openai.APIStatusError):
            return self._translate_status(exc)
        if isinstance(exc, openai.APIResponseValidationError):
            return IncompatibleServerError(self.base_url, exc.message)
        # A plain APIError: the server sent an error event in the middle of the stream.
        return TransientModelError(FailureKind.SERVER, f"the server reported an error mid-stream: {exc.message}")

    def _translate_status(self, exc: openai.APIStatusError) -> ModelError:
        status = exc.status_code
        message = _server_message(exc)
        if status == 429:
            return TransientModelError(
                FailureKind.RATE_LIMIT, f"HTTP 429: {message}", retry_after_s=_retry_after_s(exc)
            )
        if status == 408:
            return TransientModelError(FailureKind.TIMEOUT, f"HTTP 408: {message}")
        if status == 409 or status >= 500:
            return TransientModelError(FailureKind.SERVER, f"HTTP {status}: {message}")
        if status == 401:
            hint = "check the API key (OPENAI_API_KEY, --api-key or api_key=)"
        elif status == 403:
            hint = f"check that the API key may use the model {self.model!r}"
        elif status == 404:
            hint = f"check the model name {self.model!r} and the base URL {self.base_url}"
        elif "stream_options" in message:
            hint = "this server may not support stream_options: use OpenAIModel(..., include_usage=False)"
        elif "prompt_cache_key" in message:
            hint = "this server may not support prompt_cache_key: use OpenAIModel(..., send_cache_key=False)"
        else:
            hint = "the server's message says what it did not accept"
        return ModelRequestRejected(status, message, hint)

    async def aclose(self) -> None:
        """Close the HTTP client and its connections (also when the caller is cancelled)."""
        with trio.CancelScope(shield=True, deadline=trio.current_time() + _CLOSE_TIMEOUT_S):
            await self._client.close()


async def _close(stream: AsyncStream[ChatCompletionChunk]) -> None:
    # Shielded so a cancelled call still releases its connection, bounded so it cannot hang.
    with trio.CancelScope(shield=True, deadline=trio.current_time() + _CLOSE_TIMEOUT_S):
        await stream.close()


def _server_message(exc: openai.APIStatusError, limit: int = 300) -> str:
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message:
        message = exc.message
    return message if len(message) <= limit else message[: limit - 3] + "..."


def _retry_after_s(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000
        if "retry-after" in headers:
            return float(headers["retry-after"])
    except ValueError:
        pass  # an HTTP date, or junk: fall back to our own backoff
    return None

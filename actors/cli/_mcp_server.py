"""``livecontext mcp``: an agent (or a system's entry agent) served as MCP tools, ``send``,
``history`` and ``state``, over stdio or streamable HTTP.

Everything of ours runs on the command's Trio run: the store, and one agent (or system) per
thread, opened on its first use by a task of :class:`Threads` that holds it open until the
server stops. On stdio the MCP server runs on that Trio run too (it is anyio-based). Over
HTTP the MCP server's ASGI app is served by uvicorn, which runs on asyncio only: it runs in a
worker thread, and each tool call crosses into the Trio run through an anyio
:class:`~anyio.from_thread.BlockingPortal` (an asyncio caller cancelled cancels its call
there). The agents stay on the main thread, Ctrl-C included, for either transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import attrs
import click
import trio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field
from typing_extensions import TypedDict

from livecontext.runtime import LivecontextError, UsageError

from ..agent import apps_json, check_thread_id, entry_json, status_json, usage_json
from ..blueprint import AgentSpec, Blueprint, SystemBlueprint
from ..front import Agent, open_agent
from ..system import SYSTEM_LOG_PREFIX, System, SystemAgentStatus, check_system_name, open_system
from ._interrupt import Interrupt

if TYPE_CHECKING:
    from livecontext.runtime.persistence import EventStore

T = TypeVar("T")

log = logging.getLogger("livecontext")

CANCEL_WAIT_S = 2.0
"""How long a cancelled ``send`` waits for its agent to cancel its step (it may be closing)."""

SEND_HELP = """Send a message to the livecontext agent {name} and wait for its reply.

The agent keeps a durable conversation per thread (its history is stored, and a later call,
even after a restart, continues it). Leave `thread` out to talk in this session's own thread
(the reply says its id); give a thread id to open or resume that thread. Calls on one thread
run one after another. The reply is the agent's answer (or the question it asks back); the
structured result adds the thread, its status (waiting_user, completed, failed, ...), the
engine state and the steps the run took."""

HISTORY_HELP = """Read the conversation of a thread of the livecontext agent {name}: every entry,
oldest first (inputs, the agent's outputs, tool calls and their results), or the `last` ones.
Leave `thread` out for this session's own thread. A thread that was never sent anything is an
error."""

STATE_HELP = """Where a thread of the livecontext agent {name} stands: its engine state
(WaitingInput when idle), its task's status (with its result, question or error, and the tool
calls waiting for a person's approval), its entry count, its apps' states (the notebook's
text) and its model usage. Leave `thread` out for this session's own thread. A thread that was
never sent anything is an error."""


Thread = Annotated[str | None, Field(
    description="The thread id (letters, digits, _ . -): opened, or resumed from the store. Leave it out for "
                "this session's own thread.")]
Text = Annotated[str, Field(description="The message for the agent.")]
Last = Annotated[int | None, Field(description="Only the last this many entries (leave it out for all).", ge=0)]


class SendResult(TypedDict):
    """What the agent's run on the message ended with."""

    thread: Annotated[str, Field(description="The thread the message went to (give it as `thread` to come back to it).")]
    text: Annotated[str, Field(description="The agent's answer, or the question it asks back.")]
    status: Annotated[str, Field(description="Where its task stands: waiting_user, completed, abandoned, "
                                             "waiting_approval, paused, failed, ...")]
    state: Annotated[str, Field(description="The engine's state: WaitingInput once it answered.")]
    steps: Annotated[int, Field(description="The engine steps the run took.")]
    reason: Annotated[str, Field(description="Why the run stopped: no_input (it answered), max_steps, failed: ..., ...")]


class HistoryResult(TypedDict):
    """A thread's entries, oldest first, as ``livecontext history --json`` gives them."""

    thread: str
    entries: Annotated[list[dict[str, Any]], Field(
        description="Each entry: id, kind (model_input, model_output, tool_results, recap, ...), author, "
                    "levels.live (its text), tool_calls or results, folded.")]


class NoSuchThreadError(UsageError):
    """``history`` or ``state`` named a thread the store does not have."""


@attrs.define
class Served:
    """What one thread is served by: an agent, or a system and its entry agent's name."""

    thread: str
    agent: Agent | None = None
    system: System | None = None
    entry: str = ""
    turn: trio.Lock = attrs.Factory(trio.Lock)
    """Held by the ``send`` whose run is in progress, the others waiting their turn (as they
    would for the agent's own): a cancelled ``send`` that holds it cancels the step, one still
    waiting has nothing to cancel."""


class Threads:
    """The threads this server serves, each opened on first use (by a task of its own, which
    holds it open) and closed at the end of :func:`open_threads`' block.

    A thread of an agent blueprint is that agent's thread; a thread of a system blueprint
    names a system run from that blueprint (``open_system(name=THREAD)``: its agents'
    threads are ``THREAD.AGENT``), whose entry agent is served.
    """

    def __init__(self, blueprint: Blueprint | SystemBlueprint, store: EventStore, nursery: trio.Nursery, *,
                 entry: str | None, base_url: str | None, api_key: str | None) -> None:
        self._bp = blueprint
        self._store = store
        self._nursery = nursery
        self._entry = entry or (blueprint.agents[0].name if isinstance(blueprint, SystemBlueprint) else "")
        self._base_url = base_url
        self._api_key = api_key
        self._served: dict[str, Served] = {}
        self._opening = trio.Lock()

    @property
    def entry(self) -> str:
        """The system's agent that is served (empty for an agent blueprint)."""
        return self._entry

    async def send(self, thread: str, text: str) -> SendResult:
        """Give ``text`` to the thread's agent and run it until it waits again."""
        served = await self._open(thread, create=True)
        if served.agent is not None:
            async with served.turn:
                try:
                    reply = await served.agent.send(text)
                except trio.Cancelled:  # (the client gave up, or the server stops: the step stops too)
                    await _cancel_step(served.agent)
                    raise
            return SendResult(thread=thread, text=reply.text, status=reply.status.status.value,
                              state=reply.state.value, steps=reply.steps, reason=reply.reason)
        assert served.system is not None
        answer = await served.system.send(served.entry, text)
        status = await self._entry_status(served)
        return SendResult(thread=thread, text=answer.text or "", status=status.status, state=answer.state.value,
                          steps=answer.steps, reason=answer.reason)

    async def history(self, thread: str, last: int | None) -> HistoryResult:
        """The thread's entries (its agent's; the entry agent's, for a system), oldest first."""
        served = await self._open(thread, create=False)
        if served.agent is not None:
            entries = await served.agent.history()
        else:
            entries = (await self._entry_status(served)).entries
        if last is not None:
            entries = entries[-last:] if last > 0 else ()
        return HistoryResult(thread=thread, entries=[entry_json(e) for e in entries])

    async def state(self, thread: str) -> dict[str, Any]:
        """The thread's state as ``livecontext state --json`` gives it (and its ``thread``)."""
        served = await self._open(thread, create=False)
        if served.agent is not None:
            return (await served.agent.state()).json()
        status = await self._entry_status(served)
        return {"thread": thread, "agent": served.entry, "agent_thread": status.thread_id,
                "state": status.state.value, **status_json(status.task), "entries": len(status.entries),
                "apps": apps_json(status.app_histories, status.apps), "usage": usage_json(status.usage)}

    async def _entry_status(self, served: Served) -> SystemAgentStatus:
        assert served.system is not None
        return next(a for a in (await served.system.status()).agents if a.name == served.entry)

    async def _open(self, thread: str, *, create: bool) -> Served:
        """The thread's agent or system, opened (resumed from the store) if it is not yet.

        Raises:
            NoSuchThreadError: ``create`` is false and the store has no such thread.
        """
        check_thread(self._bp, thread)
        async with self._opening:  # (two first calls on one thread open it once)
            served = self._served.get(thread)
            if served is not None:
                return served
            system = isinstance(self._bp, SystemBlueprint)
            exists = await self._store.exists(f"{SYSTEM_LOG_PREFIX}{thread}" if system else thread)
            if not exists and not create:
                raise NoSuchThreadError(f"no thread {thread!r} in the store: `send` to it first (or give the id "
                                          "of a thread that exists)")
            opened: Served = await self._nursery.start(self._hold, thread, exists)
            self._served[thread] = opened
            return opened

    async def _hold(self, thread: str, exists: bool, task_status: trio.TaskStatus[Served]) -> None:
        """Open the thread's agent (or system), report it, and keep it open until cancelled."""
        if isinstance(self._bp, SystemBlueprint):
            async with open_system(self._bp, store=self._store, name=thread, base_url=self._base_url,
                                   api_key=self._api_key) as system:
                system.agent(self._entry)
                task_status.started(Served(thread, system=system, entry=self._entry))
                await trio.sleep_forever()
            return
        # the blueprint's inputs are for `run`; its pins go to a new thread only (once)
        spec = attrs.evolve(AgentSpec.from_blueprint(self._bp), inputs=(), pins=() if exists else self._bp.pins)
        async with open_agent(spec=spec, store=self._store, thread=thread, base_url=self._base_url,
                              api_key=self._api_key) as agent:
            task_status.started(Served(thread, agent=agent))
            await trio.sleep_forever()


async def _cancel_step(agent: Agent) -> None:
    """Cancel the agent's step in flight (recorded; it pauses until its next run), for a
    ``send`` cancelled while it ran; bounded, as the agent may be closing too."""
    with trio.CancelScope(shield=True), trio.move_on_after(CANCEL_WAIT_S):
        try:
            await agent.cancel()
        except LivecontextError as exc:
            log.warning("cancelling the step of thread %s for a cancelled call failed: %s", agent.thread, exc)


@contextlib.asynccontextmanager
async def open_threads(blueprint: Blueprint | SystemBlueprint, store: EventStore, *, entry: str | None = None,
                       base_url: str | None = None, api_key: str | None = None) -> AsyncIterator[Threads]:
    """:class:`Threads` for the block; every thread opened in it is closed at its end."""
    async with trio.open_nursery() as nursery:
        yield Threads(blueprint, store, nursery, entry=entry, base_url=base_url, api_key=api_key)
        nursery.cancel_scope.cancel()


Call = Callable[..., Awaitable[Any]]
"""How a tool runs a coroutine function of :class:`Threads` on the Trio run: awaited at once
(stdio: the MCP server runs there), or through the portal (HTTP: it runs on asyncio)."""


async def _direct(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    return await fn(*args)


def make_server(threads: Threads, name: str, *, default_thread: str, per_session: bool = False,
                call: Call = _direct) -> MCPServer:
    """The MCP server with the three tools, over ``threads``.

    A call that names no thread goes to ``default_thread``; with ``per_session``, to its
    session's own thread when it has a session (streamable HTTP with the ``initialize``
    handshake gives each an id: its thread is ``mcp-`` and the id's start), else there too
    (the sessionless HTTP of protocol 2026-07-28).
    """
    server: MCPServer = MCPServer(name=f"livecontext {name}", log_level="WARNING",
                                  instructions=f"The livecontext agent {name}: `send` talks to it; `history` "
                                               "and `state` read a thread of it.")

    def thread_of(given: str | None, ctx: Context) -> str:
        if given is not None and given.strip():
            return given.strip()
        session = (ctx.headers or {}).get("mcp-session-id") if per_session else None
        if not session:
            return default_thread
        return "mcp-" + "".join(c for c in session if c.isalnum())[:12]

    async def run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        try:
            result: T = await call(fn, *args)
        except (LivecontextError, OSError) as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ToolError(text) from None
        return result

    async def send(text: Text, ctx: Context, thread: Thread = None) -> Annotated[CallToolResult, SendResult]:
        sent = await run(threads.send, thread_of(thread, ctx), text)
        return CallToolResult(content=[TextContent(type="text", text=sent["text"])], structured_content=dict(sent),
                              is_error=sent["reason"].startswith("failed"))

    async def history(ctx: Context, thread: Thread = None, last: Last = None) -> Annotated[CallToolResult, HistoryResult]:
        found = await run(threads.history, thread_of(thread, ctx), last)
        return CallToolResult(content=[TextContent(type="text", text=transcript(found))],
                              structured_content=dict(found))

    async def state(ctx: Context, thread: Thread = None) -> Annotated[CallToolResult, dict[str, Any]]:
        data = await run(threads.state, thread_of(thread, ctx))
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(data, indent=1))],
                              structured_content=data)

    server.add_tool(send, name="send", description=_unwrapped(SEND_HELP.format(name=name)))
    server.add_tool(history, name="history", description=_unwrapped(HISTORY_HELP.format(name=name)))
    server.add_tool(state, name="state", description=_unwrapped(STATE_HELP.format(name=name)))
    return server


def _unwrapped(text: str) -> str:
    """``text`` with each paragraph on one line (a model reads it; no editor wraps it)."""
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in text.split("\n\n"))


def transcript(found: HistoryResult) -> str:
    """The entries as lines a model reads: ``ID KIND AUTHOR: TEXT`` (and the tool calls, the
    results)."""
    lines = []
    for e in found["entries"]:
        lines.append(f"{e['id']} {e['kind']} {e['author']}: {e['levels']['live']}")
        lines.extend(f"  call {c['id']}: {c['name']}({c['arguments']})" for c in e.get("tool_calls", ()))
        lines.extend(f"  result {r['call_id']} {r['name']} {r['status']}: {r['content']}" for r in e.get("results", ()))
    return "\n".join(lines) if lines else f"thread {found['thread']} has no entries"


def fresh_thread() -> str:
    """A new thread id for a stdio session that was given none."""
    return f"mcp-{secrets.token_hex(4)}"


async def serve_stdio(server: MCPServer) -> None:
    """Serve MCP on standard input and output until the client closes them."""
    await server.run_stdio_async()


def listen(host: str, port: int) -> socket.socket:
    """A socket listening at ``host:port`` (port 0: a free one).

    Raises:
        OSError: the address cannot be bound (it is in use, or not this machine's).
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


async def serve_http(threads_server: Callable[[Call], MCPServer], sock: socket.socket,
                     listening: Callable[[str], None]) -> None:
    """Serve MCP over streamable HTTP on ``sock`` (at ``http://HOST:PORT/mcp``) until
    cancelled; ``listening`` is called with that URL once it accepts. The socket is closed
    at the end."""
    import anyio.from_thread
    import uvicorn

    host, bound = sock.getsockname()[:2]
    url = f"http://{f'[{host}]' if sock.family == socket.AF_INET6 else host}:{bound}/mcp"
    token = trio.lowlevel.current_trio_token()
    started = trio.Event()

    async with anyio.from_thread.BlockingPortal() as portal:
        async def across(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
            return await asyncio.wrap_future(portal.start_task_soon(fn, *args))

        def app() -> Any:  # (made in uvicorn's asyncio loop: its locks are anyio's for asyncio)
            return threads_server(across).streamable_http_app(host=host)

        class Server(uvicorn.Server):
            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets)
                if not self.should_exit:
                    token.run_sync_soon(started.set)

        config = uvicorn.Config(app, factory=True, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
        web = Server(config)

        async with trio.open_nursery() as nursery:
            async def run_web() -> None:
                try:
                    await trio.to_thread.run_sync(lambda: web.run(sockets=[sock]))
                finally:
                    sock.close()
                    nursery.cancel_scope.cancel()

            async def stop_web() -> None:
                try:
                    await trio.sleep_forever()
                finally:
                    web.should_exit = True

            nursery.start_soon(run_web)
            nursery.start_soon(stop_web)
            await started.wait()
            listening(url)
        if not started.is_set():
            raise UsageError(f"the HTTP server at {url} did not start: see the lines above")


def say(text: str) -> None:
    """One line on stderr (stdout is the MCP transport on stdio)."""
    click.echo(f"livecontext: {text}", err=True)


def describe(bp: Blueprint | SystemBlueprint, entry: str) -> str:
    """How the served agent is named in the tools' descriptions."""
    if isinstance(bp, SystemBlueprint):
        return f"{entry} (the entry agent of system {bp.name})"
    return bp.path.rsplit("/", 1)[-1].removesuffix(".toml") if bp.path else "agent"


def check_thread(bp: Blueprint | SystemBlueprint, thread: str) -> str:
    """``thread`` if it is a usable thread id for ``bp`` (a system name, for a system).

    Raises:
        UsageError: it is not.
    """
    return check_system_name(thread) if isinstance(bp, SystemBlueprint) else check_thread_id(thread)


def interrupt() -> Interrupt:
    """Ctrl-C while serving: the server stops, each thread is closed the ordinary way."""
    made = Interrupt()
    made.hard_message = "interrupted; the server did not stop in time and was stopped at once (its threads' logs are whole)"
    return made


async def serve(bp: Blueprint | SystemBlueprint, store_url: str, *, entry: str | None, thread: str | None,
                host: str | None, port: int, base_url: str | None, api_key: str | None,
                made_folder: str | None) -> None:
    """Serve ``bp`` from the store at ``store_url`` on stdio (``host`` ``None``) or over HTTP,
    until the client goes (stdio) or Ctrl-C."""
    from livecontext.runtime.persistence import open_store

    sock: socket.socket | None = None
    try:  # (what is wrong before serving: one line, exit 2)
        await check_models(bp, base_url=base_url, api_key=api_key)
        if host is not None:
            try:
                sock = listen(host, port)
            except OSError as exc:
                raise UsageError(f"cannot listen at {host}:{port}: {exc.strerror or exc}; give another "
                                 "--port (0: a free one)") from None
        opened = await open_store(store_url)
    except (LivecontextError, OSError) as exc:
        if sock is not None:
            sock.close()
        say(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        raise SystemExit(2) from None
    async with opened as store:
        if made_folder:
            say(f"note: {made_folder}")
        async with open_threads(bp, store, entry=entry, base_url=base_url, api_key=api_key) as threads:
            name = describe(bp, threads.entry)
            default = thread or fresh_thread()
            if host is None:
                say(f"serving {name} over MCP on stdio; thread {default} (store {store_url})")
                await serve_stdio(make_server(threads, name, default_thread=default))
                return

            def listening(url: str) -> None:
                each = (f"each session's calls that name no thread go to its own thread (mcp-SESSION), "
                        f"sessionless ones to {default}" if thread is None else f"thread {default}")
                say(f"serving {name} over MCP at {url}; {each} (store {store_url})")

            assert sock is not None
            await serve_http(lambda call: make_server(threads, name, default_thread=default, per_session=thread is None,
                                                      call=call), sock, listening)


async def check_models(bp: Blueprint | SystemBlueprint, *, base_url: str | None, api_key: str | None) -> None:
    """Open (and close) each model the blueprint names, so that a bad spec (a missing script,
    an unknown provider) fails before serving, not at the first call."""
    from livecontext.runtime.models import open_model_client

    specs = [a.blueprint.model for a in bp.agents] if isinstance(bp, SystemBlueprint) else [bp.model]
    for spec in specs:
        async with open_model_client(spec, base_url=base_url, api_key=api_key):
            pass

"""How an agent is given an MCP server: :class:`McpServer` (``livecontext.McpServer``), made
from Python, a blueprint's ``[[mcp]]`` table or ``run --mcp NAME=CMD``."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import field, frozen

from livecontext.runtime import UsageError

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_KEYS = ("name", "command", "url", "tools", "env", "approval")


class McpServerError(UsageError):
    """An MCP server is not given right (a name, a command or a URL, a tool filter), or it
    cannot be started, or a tool of it cannot be run; the message says which and what to do."""


def _strings(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise McpServerError(f"give a list of strings, not {value!r}")
    if not all(isinstance(v, str) for v in value):
        raise McpServerError(f"give a list of strings, not {list(value)!r}")
    return tuple(value)


@frozen
class McpServer:
    """An MCP server an agent uses the tools of: a command it starts (stdio) or a URL
    (streamable HTTP).

    Its tools are offered to the model as the server describes them (name, description, JSON
    input schema), in one app named ``mcp.NAME``; ``tools`` keeps only those named. The
    connection is an actor of the agent's runtime, started with the agent, restarted if the
    server dies (a note is recorded in the thread's log) and stopped with the agent (a stdio
    server's process ends). A thread records its servers, so resuming it needs them given
    no more. docs/mcp.md tells the whole story.

    Raises:
        McpServerError: no name, a name that is not letters, digits, ``_`` and ``-``; both a
            command and a URL, or neither; an empty command; a URL not ``http(s)://``.
    """

    name: str
    """The server's name: its app is ``mcp.NAME``, its actor ``mcp/THREAD.NAME``."""
    command: tuple[str, ...] | None = field(default=None, converter=_strings)
    """The command that starts a stdio server, as a list (``["python", "server.py"]``)."""
    url: str | None = None
    """The URL of a streamable-HTTP server (``http://127.0.0.1:8000/mcp``)."""
    tools: tuple[str, ...] | None = field(default=None, converter=_strings)
    """The server's tools to offer (``None``: all of them); a name it does not offer is an error."""
    env: Mapping[str, str] | None = None
    """Environment variables of a stdio server's process, besides a safe default set (``PATH``, ``HOME``...)."""
    approval: bool = False
    """Whether each call of its tools waits for a person's approval (see docs/approvals.md)."""

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise McpServerError(f"MCP server name {self.name!r} is not valid: use letters, digits, _ and - "
                                 "(not empty)")
        if self.command is not None and self.url is not None:
            raise McpServerError(f"MCP server {self.name!r} has both a command and a url: give one of them "
                                 "(a command for a stdio server, a url for a streamable-HTTP one)")
        if self.command is None and self.url is None:
            raise McpServerError(f"MCP server {self.name!r} has neither a command nor a url: give one of them")
        if self.command is not None and (not self.command or not self.command[0].strip()):
            raise McpServerError(f"MCP server {self.name!r} has an empty command: give the program and its arguments")
        if self.url is not None and not (isinstance(self.url, str) and re.match(r"^https?://\S+$", self.url)):
            raise McpServerError(f"MCP server {self.name!r}: url {self.url!r} is not an http:// or https:// URL")
        if self.env is not None and not (isinstance(self.env, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.env.items())):
            raise McpServerError(f"MCP server {self.name!r}: env must map names to strings, not {self.env!r}")
        if type(self.approval) is not bool:
            raise McpServerError(f"MCP server {self.name!r}: approval must be true or false, not {self.approval!r}")

    @property
    def app_name(self) -> str:
        """The name of the app that offers its tools: ``mcp.NAME``."""
        return f"mcp.{self.name}"

    def options(self) -> dict[str, Any]:
        """The server as JSON data (what a thread records, and :func:`mcp_server` takes back)."""
        data: dict[str, Any] = {"name": self.name}
        if self.command is not None:
            data["command"] = list(self.command)
        if self.url is not None:
            data["url"] = self.url
        if self.tools is not None:
            data["tools"] = list(self.tools)
        if self.env is not None:
            data["env"] = dict(self.env)
        if self.approval:
            data["approval"] = True
        return data


McpLike = McpServer | Mapping[str, Any]
"""An MCP server: a :class:`McpServer`, or a mapping of its keys (``name``, ``command`` or ``url``,
``tools``, ``env``, ``approval``)."""


def mcp_server(given: McpLike) -> McpServer:
    """``given`` as a :class:`McpServer`.

    Raises:
        McpServerError: it is not one, or a mapping has a key it does not know or lacks ``name``.
    """
    if isinstance(given, McpServer):
        return given
    if not isinstance(given, Mapping):
        raise McpServerError(f"an MCP server is a livecontext.McpServer or a mapping of its keys, not {given!r}")
    unknown = [k for k in given if k not in _KEYS]
    if unknown:
        raise McpServerError(f"MCP server {given.get('name', '?')!r}: unknown key {unknown[0]!r} "
                             f"(the keys: {', '.join(_KEYS)})")
    if "name" not in given:
        raise McpServerError("an MCP server needs a name: give name = \"...\"")
    return McpServer(**dict(given))


def mcp_servers(given: Sequence[McpLike]) -> tuple[McpServer, ...]:
    """Each of ``given`` as a :class:`McpServer`.

    Raises:
        McpServerError: one of them is not valid, or two share a name.
    """
    servers = tuple(mcp_server(g) for g in given)
    names = [s.name for s in servers]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise McpServerError(f"two MCP servers are named {twice!r}: give each its own name")
    return servers


def parse_mcp_flag(text: str) -> McpServer:
    """``run --mcp NAME=CMD`` (the command split as a shell would) or ``NAME=URL``.

    Raises:
        McpServerError: no ``=``, or what is given is not a valid server.
    """
    name, sep, rest = text.partition("=")
    if not sep:
        raise McpServerError(f"--mcp {text!r}: give NAME=COMMAND (a stdio server) or NAME=URL (streamable HTTP)")
    rest = rest.strip()
    if re.match(r"^https?://", rest):
        return McpServer(name.strip(), url=rest)
    try:
        command = shlex.split(rest)
    except ValueError as exc:
        raise McpServerError(f"--mcp {text!r}: the command cannot be split ({exc}); check its quotes") from None
    return McpServer(name.strip(), command=command)

"""Replaying a generated transcript through a real agent: its tools, and the models around it.

- :class:`Workspace` is an app offering the transcript's tools (``bash`` and
  ``str_replace_editor``); each call returns the recorded output as plain text (the runtime
  makes its RECENT and GIST levels), or fails as the recorded call failed.
- :class:`CapturingModel` wraps the agent's model and keeps every request it is given.
- :class:`ExtractiveRecapModel` stands in for a real model behind the ``model_summary`` recap:
  it reads the steps in its prompt and answers with one line per step, merging the oldest
  into id ranges to fit the length it is asked for, and on some calls overshoots that length
  (which the recap must handle).
"""

from __future__ import annotations

import re
from typing import Any

import trio
from attrs import define, field

from livecontext.actors.apps import App, ToolFailure, tool
from livecontext.protocol.history import ModelReply, ModelRequest
from livecontext.runtime.models import ModelClient, TextCallback

from .transcripts import Call


@define
class Replay:
    """The recorded calls, and how many were made (shared by every instance the host makes)."""

    calls: list[Call]
    position: int = 0

    def next(self, name: str, arguments: dict[str, Any]) -> str:
        if self.position >= len(self.calls):
            raise RuntimeError(f"{name} called after the transcript's last call")
        call = self.calls[self.position]
        if call.name != name or dict(call.arguments) != arguments:
            raise RuntimeError(f"call {self.position} is {call.name}({dict(call.arguments)}), not {name}({arguments})")
        self.position += 1
        if call.failed:
            raise ToolFailure(call.output)
        return call.output


class Workspace(App):
    """The repository the transcript's agent works in; its tools replay the recorded outputs."""

    name = "workspace"

    def __init__(self, replay: Replay) -> None:
        self.replay = replay

    def fresh(self) -> Workspace:
        return Workspace(self.replay)

    def view(self) -> str:
        return "cwd: /repo"

    @tool(idempotent=True)
    def bash(self, command: str) -> str:
        """Run a command in a bash shell in /repo and return what it printed.

        Args:
            command: The command line; heredocs and pipes are allowed.
        """
        return self.replay.next("bash", {"command": command})

    @tool(idempotent=True)
    def str_replace_editor(self, command: str, path: str, view_range: list[int] | None = None,
                           old_str: str | None = None, new_str: str | None = None,
                           file_text: str | None = None) -> str:
        """View, create and edit files.

        Args:
            command: One of view, create, str_replace.
            path: The file's absolute path.
            view_range: For view: the first and last line to show.
            old_str: For str_replace: the exact text to replace (it must occur once).
            new_str: For str_replace: the text to put in its place.
            file_text: For create: the file's content.
        """
        given = {"command": command, "path": path, "view_range": view_range, "old_str": old_str,
                 "new_str": new_str, "file_text": file_text}
        return self.replay.next("str_replace_editor", {k: v for k, v in given.items() if v is not None})


class CapturingModel(ModelClient):
    """Wraps a client and keeps every request it is asked to complete."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        return await self.inner.complete(request, on_text)


_LIMIT = re.compile(r"at most (\d+) characters")
_BLOCK = re.compile(r"^\[(e\d+)\] ", re.MULTILINE)
_SAYS = re.compile(r"(\w*(?:Error|Exception)\b.*|\d+ (?:passed|failed)\b.*|has been edited.*|^\$? ?(?:grep|cat|sed|python|git)\b.*)",
                   re.MULTILINE)
_LINE = re.compile(r"^(e\d+)(?:–(e\d+))?: (.*)$")


@define
class ExtractiveRecapModel(ModelClient):
    """A deterministic stand-in for a summarising model (no model is downloaded or called).

    It answers within the ``at most N characters`` its prompt asks for, except every
    ``overshoot_every``-th call, when it answers up to ``overshoot`` times that.
    """

    overshoot_every: int = 4
    overshoot: float = 1.3
    name: str = "stand-in:extractive-summary"
    calls: int = field(default=0, init=False)

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        await trio.lowlevel.checkpoint()
        self.calls += 1
        prompt, body = request.messages[0].content, request.messages[-1].content
        found = _LIMIT.search(prompt)
        limit = int(found.group(1)) if found else 2000
        previous, _, steps = body.partition("Steps:\n")
        lines = [ln for ln in previous.removeprefix("Previous recap:\n").splitlines() if _LINE.match(ln)]
        parts = _BLOCK.split(steps)
        for entry_id, text in zip(parts[1::2], parts[2::2]):
            said = _SAYS.search(text)
            lines.append(f"{entry_id}: {_cut((said.group(0) if said else text.strip().splitlines()[0] if text.strip() else '(empty)'), 90)}")
        over = self.overshoot_every and self.calls % self.overshoot_every == 0
        return ModelReply(text=fit(lines, int(limit * self.overshoot) if over else limit), model=self.name)


def fit(lines: list[str], limit: int) -> str:
    """``lines`` (``eN: text`` or ``eA–eB: text``), the oldest merged pairwise into id ranges
    with shortened texts until the whole is at most ``limit`` characters (or one line is left)."""
    lines = list(lines)
    while len("\n".join(lines)) > limit and len(lines) > 1:
        a, b = _LINE.match(lines[0]), _LINE.match(lines[1])
        if a is None or b is None:
            lines.pop(0)
            continue
        last = b.group(2) or b.group(1)
        lines[:2] = [f"{a.group(1)}–{last}: {_cut(a.group(3), 40)}; {_cut(b.group(3), 40)}"]
    return "\n".join(lines)[:limit]


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

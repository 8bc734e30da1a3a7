"""JSON shapes printed by the CLI (``run --json``, ``history``, ``state``, ``audit``, ``batch``)."""

from __future__ import annotations

import datetime as dt
import enum
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from livecontext.protocol.agent import AgentStatus, StateTransition
from livecontext.protocol.history import (
    ENTRY_KINDS,
    ChatMessage,
    HistoryEntry,
    ModelOutputEntry,
    ToolResultsEntry,
    ToolSpec,
    UsageTotals,
)
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import AppEffect, AppHistory, UndecodedEffect
from livecontext.protocol.wire import ProtocolConverter


def json_data(value: Any) -> Any:
    """``value`` as JSON data: the one encoder of the CLI's JSON output (``run --json``,
    ``state``, ``--events`` ...) and of :meth:`~livecontext.actors.AgentState.json`.

    An enum becomes its value, an attrs instance the object of its fields, a datetime its ISO
    text, a mapping an object and any other sequence a list; whatever else is not JSON data
    becomes its text, so printing a state never fails on a value a shape forgot to convert.
    """
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, enum.Enum):
        return json_data(value.value)
    if isinstance(value, Mapping):
        return {str(key): json_data(item) for key, item in value.items()}
    if attrs.has(type(value)):
        return {field.name: json_data(getattr(value, field.name)) for field in attrs.fields(type(value))}
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple | set | frozenset):
        return [json_data(item) for item in value]
    return str(value)


def dump_json_line(value: Any) -> str:
    """``value`` (through :func:`json_data`) as one line of JSON text."""
    return json.dumps(json_data(value), ensure_ascii=False)


def entry_json(entry: HistoryEntry) -> dict[str, Any]:
    """One entry as the CLI prints it."""
    out: dict[str, Any] = {
        "id": entry.id,
        "kind": ENTRY_KINDS[type(entry)],
        "revision": entry.revision,
        "author": str(entry.author),
        "created_at": entry.created_at.isoformat(),
        "retention": entry.retention.value,
        "folded": entry.folded,
        "levels": {"live": entry.content.live.text, "recent": entry.content.recent.text,
                   "gist": entry.content.gist.text},
        "tokens": {"live": entry.content.live.tokens, "recent": entry.content.recent.tokens,
                   "gist": entry.content.gist.tokens},
    }
    if isinstance(entry, ModelOutputEntry):
        out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in entry.tool_calls]
    if isinstance(entry, ToolResultsEntry):
        out["results"] = [
            {"call_id": r.call_id, "name": r.name, "status": r.status.value, "content": r.content.live.text}
            for r in entry.results
        ]
    notes = getattr(entry, "notifications", ())
    if notes:
        out["notifications"] = [{"id": n.id, "sender": str(n.sender), "text": n.text} for n in notes]
    return out


def apps_json(apps: Sequence[AppHistory], app_names: tuple[str, ...] = ()) -> dict[str, Any]:
    """Each app's ``text`` as its latest committed effect says it (the notebook's: its whole
    text; ``None`` for an app whose effects have none): the apps named (``""`` for one with
    no effect yet) and any other with an effect. ``render`` shows every app's window."""
    out: dict[str, Any] = {name: "" for name in app_names}
    for history in apps:
        latest = history.latest
        out[history.app] = getattr(latest.effect, "text", None) if latest is not None else ""
    return out


def undecoded_json(apps: Sequence[AppHistory]) -> list[dict[str, Any]]:
    """The apps' effects this process cannot decode (their class was never defined here), one
    per app and type: the latest as stored (raw JSON), where its class is defined and what to
    import to decode it."""
    latest: dict[tuple[str, str], AppEffect] = {}
    for history in apps:
        held = (history.last_saved, *history.effects) if history.last_saved is not None else history.effects
        for effect in held:
            if isinstance(effect.effect, UndecodedEffect):
                latest[(history.app, effect.effect.tag)] = effect
    return [{"app": app, "type": tag, "source": effect.source or None, "decode": effect.import_hint(),
             "latest": effect.effect.fields() if isinstance(effect.effect, UndecodedEffect) else None}
            for (app, tag), effect in latest.items()]


def status_json(status: AgentStatus) -> dict[str, Any]:
    """A thread's status as the CLI prints it: ``{"status": ...}``, with ``result``,
    ``question``, ``error``, ``reason`` (a spend limit's pause, an abandoned or terminated
    task), ``by`` (who terminated it) or ``waiting_on`` (``waiting_internal``, ``waiting_approval``)
    when there is one, and ``approvals`` (``waiting_approval``): each call waiting,
    ``{"id", "name", "arguments"}``."""
    out: dict[str, Any] = {"status": status.status.value}
    for key in ("result", "question", "error", "reason", "by", "waiting_on"):
        value = getattr(status, key)
        if value is not None:
            out[key] = value
    if status.approvals:
        out["approvals"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in status.approvals]
    return out


def usage_json(usage: UsageTotals) -> dict[str, int]:
    """The ``usage`` object of the CLI's JSON: input tokens (cached ones included in them),
    cached input tokens, output tokens, model calls."""
    return {"input_tokens": usage.input_tokens, "cached_input_tokens": usage.cached_input_tokens,
            "output_tokens": usage.output_tokens, "model_calls": usage.model_calls}


def tool_json(spec: ToolSpec) -> dict[str, Any]:
    """A tool as a chat API is sent it (name, description, JSON schema of its arguments)."""
    return {"name": spec.name, "description": spec.description, "parameters": json.loads(spec.parameters_json)}


def chat_json(msg: ChatMessage) -> dict[str, Any]:
    """A rendered message in the OpenAI chat-completions shape."""
    out: dict[str, Any] = {"role": msg.role.value, "content": msg.content}
    if msg.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in msg.tool_calls
        ]
    if msg.tool_call_id is not None:
        out["tool_call_id"] = msg.tool_call_id
    return out


def event_json(converter: ProtocolConverter, event: Message) -> dict[str, Any]:
    """An engine event as a JSON line: ``type`` plus its fields (``from``/``to`` for transitions)."""
    data = converter.dump_message(event)
    if isinstance(event, StateTransition):
        data["from"] = data.pop("from_state")
        data["to"] = data.pop("to_state")
    return data

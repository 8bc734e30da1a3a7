"""The engine's control tools (seed note 003): ``task_complete``, ``task_abandon``, ``output``,
and ``wait_user_response`` (a top-level agent's) or ``wait_parent`` (a sub-agent's).

- ``task_complete(result)`` / ``task_abandon(reason)`` end the task (status ``completed`` /
  ``abandoned``); new input starts a new one.
- ``output(text)`` shows the user some text at once (an :class:`~livecontext.protocol.agent.AgentOutput`
  event, published once the result is recorded) and the task goes on: no effect, no stop.
- ``wait_user_response(question)`` stops for the user's answer (``waiting_user``). A sub-agent
  has no user to ask: it is offered ``wait_parent(message)`` instead, which stops it for its
  parent's next message (``waiting_parent``); the parent gets the message as the sub-agent's answer.

Why the engine's and not an app's: they change no app's state but the task's, which the
engine's state machine reads. An app would render a window of nothing into every
observation, show up among the thread's apps, and have its effect applied to it for nothing.
So the engine offers them beside the apps' tools (when the agent's ``lifecycle`` setting is
on) and answers a call itself, without asking the app host; with the setting off the host
answers it as any unknown tool: a FAILED result naming the tools there are.

They follow the apps' rule all the same: a call computes a result and an effect
(:class:`~livecontext.protocol.records.TaskCompleted`, :class:`~livecontext.protocol.records.UserQuestionAsked`)
and changes nothing; the history store commits the effect with the result, in one record,
and applies it to the task's marks. Once the output's tool-results entry is appended, the
engine's state is ``WaitingInput`` (``derive_state``): it takes no step until new input,
which starts a new turn (status ``active``). Nothing is applied to an app.

What the user sees: the status (``state --json``, ``run --json``, :class:`AgentStatus` from
the history store) holds the result or the question, and the tool result's one-line gist,
shown by ``run``'s transcript, says it too. The model reads, on its next turn, that the
task was ended or that the question was put, followed by the user's input.

Bad arguments (not JSON, not an object, a missing, blank, non-string or unknown argument)
give a FAILED result the model can read and act on, as an app tool's do; the task goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from livecontext.protocol.agent import ToolInvoked
from livecontext.protocol.history import (
    OUTPUT,
    TASK_ABANDON,
    TASK_COMPLETE,
    WAIT_PARENT,
    WAIT_USER_RESPONSE,
    ToolCall,
    ToolResult,
    ToolSpec,
    ToolStatus,
)
from livecontext.protocol.kernel import SUB_MARK, Message
from livecontext.protocol.records import ParentAwaited, TaskAbandoned, TaskCompleted, UserQuestionAsked
from livecontext.runtime import UsageError
from livecontext.runtime.tokens import TokenCounter

from ..history import result_content

_GIST_CHARS = 140
"""How much of a result or a question the one-line gist keeps."""


def _spec(name: str, description: str, param: str, about: str) -> ToolSpec:
    schema = {"additionalProperties": False,
              "properties": {param: {"description": about, "type": "string"}},
              "required": [param], "type": "object"}
    return ToolSpec(name, description, json.dumps(schema, separators=(",", ":")), idempotent=True)


CONTROL_TOOLS: tuple[ToolSpec, ...] = (
    _spec(TASK_COMPLETE, "End the task and give the user its result; you then wait for new input.",
          "result", "What was done and what came of it."),
    _spec(TASK_ABANDON, "Give the task up, saying why (it cannot or should not be done); you then wait for new input.",
          "reason", "Why the task is given up, for the user."),
    _spec(OUTPUT, "Show the user some text now (progress, a partial result); you carry on with the task.",
          "text", "What the user should read."),
    _spec(WAIT_USER_RESPONSE, "Ask the user a question and wait: their answer is the next input.",
          "question", "The question, in full."),
)
"""The control tools' specs, as a top-level agent's model is sent them (idempotent: a call
changes only the log)."""

SUB_AGENT_CONTROL_TOOLS: tuple[ToolSpec, ...] = CONTROL_TOOLS[:-1] + (
    _spec(WAIT_PARENT, "Tell the agent that gave you this task something (a question, a report) "
          "and wait for its next message.", "message", "What to tell it, in full."),
)
"""A sub-agent's control tools: ``wait_parent`` instead of ``wait_user_response``."""

_PARAM = {TASK_COMPLETE: "result", TASK_ABANDON: "reason", OUTPUT: "text", WAIT_USER_RESPONSE: "question",
          WAIT_PARENT: "message"}
CONTROL_TOOL_NAMES = frozenset(_PARAM)
"""The names of the control tools."""

_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null", dict: "an object"}


class ToolNameClashError(UsageError):
    """An app offers a tool named like a control tool while the lifecycle tools are on."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"an app offers a tool named {name!r}, which is a control tool of the engine; "
            f"rename the app's tool, or turn the lifecycle tools off (lifecycle = false)"
        )


def control_tools(app_tools: Iterable[ToolSpec], *, sub_agent: bool = False) -> tuple[ToolSpec, ...]:
    """The control tools' specs, to offer beside ``app_tools`` (a sub-agent's if ``sub_agent``).

    Raises:
        ToolNameClashError: one of ``app_tools`` has a control tool's name.
    """
    for spec in app_tools:
        if spec.name in CONTROL_TOOL_NAMES:
            raise ToolNameClashError(spec.name)
    return SUB_AGENT_CONTROL_TOOLS if sub_agent else CONTROL_TOOLS


def run_control_tool(call: ToolCall, counter: TokenCounter) -> ToolInvoked:
    """Answer a call of a control tool: its result and the effect to commit with it, or a
    FAILED result saying what is wrong with the arguments (and no effect)."""
    name = call.name
    value, problem = _argument(call, _PARAM[name])
    if problem:
        content = result_content(name, ToolStatus.FAILED, problem, None, None, counter)
        return ToolInvoked(ToolResult(call.id, name, ToolStatus.FAILED, content))
    effect: Message | None
    if name == TASK_COMPLETE:
        effect = TaskCompleted(value)
        live = (f"Task complete; your result went to the user:\n{value}\n"
                "Anything that follows is a new request.")
        gist = f"task complete: {_line(value)}"
    elif name == TASK_ABANDON:
        effect = TaskAbandoned(value)
        live = (f"Task abandoned; your reason went to the user:\n{value}\n"
                "Anything that follows is a new request.")
        gist = f"task abandoned: {_line(value)}"
    elif name == OUTPUT:
        effect = None
        live = f"Shown to the user:\n{value}\nCarry on with the task."
        gist = f"shown to the user: {_line(value)}"
    elif name == WAIT_PARENT:
        effect = ParentAwaited(value)
        live = f"Your message went to your parent agent:\n{value}\nIts next message is the next input."
        gist = f"told the parent: {_line(value)}"
    else:
        effect = UserQuestionAsked(value)
        live = f"Your question went to the user:\n{value}\nTheir answer is the next input."
        gist = f"asked the user: {_line(value)}"
    return ToolInvoked(ToolResult(call.id, name, ToolStatus.OK, counter.content(live, live, gist)), effect)


def is_sub_agent(thread_id: str) -> bool:
    """Whether ``thread_id`` is a sub-agent's (``PARENT/sub/NAME``): offered ``wait_parent``."""
    return SUB_MARK in thread_id


def _argument(call: ToolCall, param: str) -> tuple[str, str]:
    """The call's one string argument and ``""``, or ``""`` and what is wrong with it."""
    name = call.name
    usage = f'call {name}({{"{param}": "..."}})'
    text = call.arguments
    try:
        data = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        return "", f"arguments of {name} are not valid JSON: {exc}; {usage}"
    if not isinstance(data, dict):
        kind = _JSON_KINDS.get(type(data), type(data).__name__)
        return "", f"arguments of {name} must be a JSON object ({{\"{param}\": ...}}), got {kind}"
    unknown = [key for key in data if key != param]
    if unknown:
        return "", f"invalid arguments for {name}: unknown argument {unknown[0]!r} ({name} takes {param}); {usage}"
    if param not in data:
        return "", f"invalid arguments for {name}: argument {param!r} is missing; {usage}"
    value = data[param]
    if not isinstance(value, str):
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
        return "", f"invalid arguments for {name}: argument {param!r} must be a string, got {kind}"
    if not value.strip():
        return "", f"invalid arguments for {name}: argument {param!r} is empty; the user reads it, so say it in full"
    return value, ""


def _line(text: str) -> str:
    """``text`` on one line, cut to the gist's length."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _GIST_CHARS else flat[: _GIST_CHARS - 1] + "…"

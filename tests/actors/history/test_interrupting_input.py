"""The history store takes an interrupting input before the next model call, and only then;
a termination leaves the thread waiting for input whatever its last entry."""

from __future__ import annotations

import pytest

from livecontext.actors.history import HistoryConflictError
from livecontext.protocol.agent import AppendInput, GetStatus, RecordTermination, Render, Rendered, Tail
from livecontext.protocol.history import EngineState, Role, TaskStatus
from livecontext.runtime import RemoteActorError

from tests.support.context_world import open_history


async def test_an_interrupting_input_is_taken_while_a_model_call_is_pending_and_renders_as_a_second_user_message(
) -> None:
    async with open_history() as world:
        await world.input("write an essay")
        with pytest.raises(RemoteActorError) as refused:  # a plain input waits for the answer
            await world.root.ask(world.history, AppendInput("a haiku instead"))
        assert isinstance(refused.value.__cause__, HistoryConflictError)
        tail = await world.root.ask(world.history, AppendInput("a haiku instead", interrupting=True))
        assert isinstance(tail, Tail) and tail.state is EngineState.PENDING_INPUT
        rendered = await world.root.ask(world.history, Render(4000))
        assert isinstance(rendered, Rendered)
        assert [(m.role, m.content) for m in rendered.messages[1:]] == [
            (Role.USER, "write an essay"), (Role.USER, "a haiku instead")]


async def test_an_interrupting_input_after_tool_results_renders_after_the_tool_messages() -> None:
    async with open_history() as world:
        await world.input("look around")
        await world.output("", "notebook_replace")
        await world.results("interrupted by someone")
        await world.root.ask(world.history, AppendInput("stop looking", interrupting=True))
        rendered = await world.root.ask(world.history, Render(4000))
        assert isinstance(rendered, Rendered)
        assert [m.role for m in rendered.messages[1:]] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER]


async def test_an_interrupting_input_is_refused_while_tool_calls_wait_for_their_results() -> None:
    async with open_history() as world:
        await world.input("look around")
        await world.output("", "notebook_replace")
        with pytest.raises(RemoteActorError, match="cannot append an interrupting input"):
            await world.root.ask(world.history, AppendInput("stop", interrupting=True))
        with pytest.raises(RemoteActorError, match="cannot terminate the task .* tool calls not answered"):
            await world.root.ask(world.history, RecordTermination("stop", "someone"))


async def test_a_termination_leaves_a_thread_whose_model_call_was_pending_waiting_for_input() -> None:
    async with open_history() as world:
        await world.input("write an essay")
        await world.root.ask(world.history, RecordTermination("not needed", "client/x"))
        status = await world.root.ask(world.history, GetStatus())
        assert (status.status, status.reason, status.by) == (TaskStatus.TERMINATED, "not needed", "client/x")
        tail = await world.input("something else")
        assert tail.state is EngineState.PENDING_INPUT
        assert (await world.root.ask(world.history, GetStatus())).status is TaskStatus.ACTIVE
        view = await world.read()
        assert [n.text for n in view.entries[-1].notifications] == ["The task was terminated by client/x: not needed"]

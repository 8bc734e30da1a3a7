"""The app host: windows, tool routing, cancelling a tool, effects applied only once committed."""

from __future__ import annotations

import json

import pytest
import trio

from livecontext.actors.agent import _host
from livecontext.actors.agent._agent import APP_HOST_CAPABILITIES
from livecontext.actors.apps import App, Notebook, ToolOutcome, tool
from livecontext.protocol.agent import (
    ApplyEffect,
    CancelTool,
    GetWindows,
    InvokeTool,
    ListTools,
    ToolInvoked,
    Tools,
    Windows,
)
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.records import AppEffect, NotebookEdited
from livecontext.protocol.history import ToolCall, ToolStatus
from livecontext.runtime import RemoteActorError
from livecontext.runtime.testing import actor_instance
from tests.support.agent_harness import AgentHarness, Probe, ProbeApp, ProbeModel, counter, open_agent, scripted


async def windows(h: AgentHarness) -> str:
    got = await h.client.ask(h.agent.apps, GetWindows())
    assert isinstance(got, Windows)
    return got.text


async def invoke(h: AgentHarness, name: str, arguments: object, call_id: str = "c1") -> ToolInvoked:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    got = await h.client.ask(h.agent.apps, InvokeTool(ToolCall(call_id, name, text)))
    assert isinstance(got, ToolInvoked)
    return got


async def test_the_windows_of_every_app_are_gathered_in_order() -> None:
    async with open_agent(apps=[Notebook(), ProbeApp()]) as h:
        assert await windows(h) == "[Window: notebook]\n(the notebook is empty)\n\n[Window: probe]\nPROBE-WINDOW"


async def test_the_tools_of_every_app_are_listed_with_their_schemas() -> None:
    async with open_agent(apps=[Notebook(), ProbeApp()]) as h:
        tools = await h.client.ask(h.agent.apps, ListTools())
        assert isinstance(tools, Tools)
        names = [s.name for s in tools.specs]
        assert names == ["notebook_replace", "notebook_replace_span", "record", "explode", "slow", "slow_once"]
        replace = tools.specs[0]
        assert replace.idempotent
        schema = json.loads(replace.parameters_json)
        assert schema["required"] == ["old_text", "new_text"]
        assert not tools.specs[-1].idempotent


async def test_a_tool_call_returns_its_effect_and_changes_nothing_until_the_effect_is_applied() -> None:
    async with open_agent(apps=[Notebook()]) as h:
        invoked = await invoke(h, "notebook_replace", {"old_text": "", "new_text": "hello"})
        assert invoked.result.status is ToolStatus.OK
        assert invoked.effect == AppEffect("notebook", NotebookEdited(text="hello"))
        assert "(the notebook is empty)" in await windows(h)
        applied = await h.client.ask(h.agent.apps, ApplyEffect(invoked.effect))
        assert await windows(h) == "[Window: notebook]\nhello"
        assert applied == Windows("[Window: notebook]\nhello")  # the answer: the windows it leaves


async def test_a_call_for_an_unknown_tool_fails_and_names_the_available_tools() -> None:
    async with open_agent(apps=[Notebook()]) as h:
        invoked = await invoke(h, "notebook_erase", {})
        assert invoked.result.status is ToolStatus.FAILED
        assert invoked.result.content.live.text == (
            "unknown tool 'notebook_erase'; available tools: notebook_replace, notebook_replace_span")
        assert invoked.effect is None


async def test_cancel_tool_stops_a_running_tool_and_its_asker_hears_so() -> None:
    probe = Probe()
    async with open_agent(apps=[ProbeApp(probe)]) as h:
        async with trio.open_nursery() as nursery:
            errors: list[BaseException] = []

            async def call() -> None:
                try:
                    await invoke(h, "slow", {"seconds": 30}, call_id="slow-1")
                except RemoteActorError as exc:
                    errors.append(exc)

            nursery.start_soon(call)
            await probe.started.wait()
            with trio.fail_after(1):
                await h.client.ask(h.agent.apps, CancelTool("slow-1"))
        assert probe.cancelled == ["slow"]
        assert probe.finished == []
        (error,) = errors
        assert "tool call slow-1 was cancelled" in str(error)
        await h.client.ask(h.agent.apps, CancelTool("not-running"))  # nothing to cancel: fine


def _broken_sync(apps: object, call: ToolCall, context: object = None) -> object:
    raise KeyError("no such app")


async def _broken_async(apps: object, call: ToolCall, context: object = None) -> object:
    await trio.lowlevel.checkpoint()
    raise KeyError("no such app")


@pytest.mark.parametrize("broken", [_broken_sync, _broken_async], ids=["sync", "async"])
async def test_a_host_failure_inside_a_tool_call_still_answers_with_a_failed_result(
    monkeypatch: pytest.MonkeyPatch, broken: object,
) -> None:
    monkeypatch.setattr(_host, "start_tool", broken)
    async with open_agent(apps=[Notebook()]) as h:
        with trio.fail_after(2):
            invoked = await invoke(h, "notebook_replace", {"old_text": "", "new_text": "x"})
        assert invoked.result.status is ToolStatus.FAILED
        assert invoked.result.content.live.text == "notebook_replace could not be run: KeyError: 'no such app'"


class _Where(ProbeApp):
    """Records the task each tool call ran in."""

    name = "where"

    def __init__(self, tasks: list[trio.lowlevel.Task]) -> None:
        super().__init__()
        self.tasks = tasks

    def fresh(self) -> _Where:
        return _Where(self.tasks)

    @tool(idempotent=True)
    def here(self) -> ToolOutcome:
        """Note the task."""
        self.tasks.append(trio.lowlevel.current_task())
        return ToolOutcome.ok("here", "here", "here")

    @tool(idempotent=True)
    async def there(self) -> ToolOutcome:
        """Note the task, after a checkpoint."""
        await trio.lowlevel.checkpoint()
        self.tasks.append(trio.lowlevel.current_task())
        return ToolOutcome.ok("there", "there", "there")


async def test_a_sync_tool_is_answered_from_the_handler_and_an_async_one_runs_in_a_task_of_the_host() -> None:
    tasks: list[trio.lowlevel.Task] = []
    async with open_agent(apps=[_Where(tasks)]) as h:
        host = actor_instance(h.agent.apps)
        assert (await invoke(h, "here", {}, call_id="s1")).result.content.live.text == "here"
        assert (await invoke(h, "there", {}, call_id="a1")).result.content.live.text == "there"
        sync_task, async_task = tasks
        assert sync_task.parent_nursery is not host.ctx.nursery  # no task of its own
        assert async_task.parent_nursery is host.ctx.nursery  # cancellable by CancelTool
        assert host._running == {}


async def test_a_restarted_host_rebuilds_its_apps_from_the_committed_effects() -> None:
    turns = [{"tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "kept"}}]},
             {"text": "ok"}]
    async with open_agent(turns, inputs=["write"], apps=[Notebook()]) as h:
        await h.run_until_idle()
        await h.rt.stop(h.agent.apps)
        host = await h.rt.spawn(lambda: _host.AppHost([Notebook()], h.agent.history.id, counter()),
                                h.agent.apps.id, capabilities=APP_HOST_CAPABILITIES)
        got = await h.client.ask(host, GetWindows())
        assert got == Windows("[Window: notebook]\nkept")


async def test_a_host_that_may_not_read_the_history_fails_to_start_and_says_why() -> None:
    from livecontext.runtime import UsageError

    async with open_agent(apps=[Notebook()]) as h:
        await h.rt.stop(h.agent.apps)
        with pytest.raises(UsageError, match=r"app/t1 cannot rebuild its apps: history/t1 answered "
                                             r"GetAppEffects with AccessDenied; spawn the host with the read"):
            await h.rt.spawn(lambda: _host.AppHost([Notebook()], h.agent.history.id, counter()),
                             h.agent.apps.id)


async def test_two_apps_with_one_name_are_refused() -> None:
    from livecontext.runtime import UsageError

    with pytest.raises(UsageError, match=r"two apps share a name: \['notebook', 'notebook'\]"):
        _host.AppHost([Notebook(), Notebook()], ActorId("history", "t"), counter())


class Viewed(App):
    """An app that counts how often its window is made, and whose tool (against the rules)
    changes what it shows without an effect, as a tool that counts its own runs does."""

    name = "viewed"

    def __init__(self, views: list[str] | None = None) -> None:
        self.views = views if views is not None else []
        """Every window made, shared with the instance the agent makes again (:meth:`fresh`)."""
        self.bumps = 0

    def fresh(self) -> Viewed:
        return type(self)(self.views)

    def view(self) -> str:
        self.views.append(f"bumped {self.bumps} time(s)")
        return self.views[-1]

    @tool(idempotent=True)
    def bump(self) -> ToolOutcome:
        """Bump the count, with no effect."""
        self.bumps += 1
        return ToolOutcome.ok("bumped")


async def test_the_engine_asks_for_the_windows_once_while_no_tool_runs() -> None:
    app = Viewed()
    model = ProbeModel(scripted([{"text": f"answer {k}"} for k in range(3)]))
    async with open_agent(model=model, inputs=["one"], apps=[app], listen=False) as h:
        await h.run_until_idle()
        for text in ("two", "three"):
            await h.provide(text)
            await h.run_until_idle()
    assert len(model.requests) == 3
    assert len(app.views) == 1  # three model calls, one window made


async def test_a_model_call_after_a_tool_sees_the_window_the_tool_left_even_without_an_effect() -> None:
    app = Viewed()
    turns = [{"tool_calls": [{"name": "bump", "arguments": {}}]}, {"text": "done"}]
    model = ProbeModel(scripted(turns))
    async with open_agent(model=model, inputs=["bump it"], apps=[app], listen=False) as h:
        await h.run_until_idle()
    sent = [request.messages[-1].content for request in model.requests]
    assert sent[0].endswith("[Window: viewed]\nbumped 0 time(s)")
    assert sent[1].endswith("[Window: viewed]\nbumped 1 time(s)")

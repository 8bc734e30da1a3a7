"""``livecontext demo``: a scripted agent at work, offline."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel

from livecontext.protocol import ActorId, AfterToolExecute, PostNotification, ToolStatus, Topic
from livecontext.runtime import Actor, handler

from ._session import open_session, run_until_idle
from ._transcript import Transcript
from .._agent import ANALYZER_CAPABILITIES, AgentSettings

DEMO_INPUTS = (
    "Plan a picnic for Saturday and keep the plan in your notebook.",
    "What is in the plan now?",
)

DEMO_TURNS = [
    {"text": "I'll start a plan in my notebook.",
     "tool_calls": [{"name": "notebook_replace", "arguments": {
         "old_text": "", "new_text": "# Picnic plan\n- sandwiches\n- lemonade\n- when: Saturday noon"}}],
     "delay_s": 0.05},
    {"text": "Adding a blanket after the drinks.",
     "tool_calls": [{"name": "notebook_replace", "arguments": {
         "old_text": "- lemonade", "new_text": "- lemonade\n- a blanket"}}],
     "delay_s": 0.05},
    {"text": "Following the analyzer's note, I'm fixing the time in one edit.",
     "tool_calls": [{"name": "notebook_replace_span", "arguments": {
         "start_anchor": "- when:", "end_anchor": "noon", "new_text": "- when: Saturday 12:30, at the lake"}}],
     "delay_s": 0.05},
    {"text": "The plan is in my notebook: sandwiches, lemonade, a blanket, Saturday 12:30 at the lake.",
     "delay_s": 0.05},
    {"text": "The plan holds sandwiches, lemonade and a blanket, for Saturday 12:30 at the lake.",
     "delay_s": 0.05},
]


class DemoWatcher(Actor):
    """A tiny analyzer: after the first successful notebook edit, it posts a notification."""

    def __init__(self, history: ActorId, events: Topic) -> None:
        self.history = history
        self.events = events
        self.posted = False

    async def on_start(self) -> None:
        self.ctx.subscribe(self.events)

    @handler
    async def on_tool(self, event: AfterToolExecute) -> None:
        if event.status is ToolStatus.OK and not self.posted:
            self.posted = True
            await self.ctx.ask(self.history, PostNotification(
                "The plan has no place yet; add one when you next edit the time."))


async def run_demo(store_url: str, thread_id: str, console: Console) -> None:
    """Run the demo thread and print what each actor does."""
    from livecontext.runtime.models import RetryingModel, ScriptedModel

    console.print(Panel.fit(
        "An agent (engine, history store, app host with a notebook, input source) and an analyzer,\n"
        "all actors exchanging typed messages. The model is scripted, so this runs offline.",
        title="livecontext demo"))
    settings = AgentSettings(thread_id=thread_id, budget=2000)
    model = RetryingModel(ScriptedModel.from_turns(DEMO_TURNS, name="demo"))
    async with open_session(store_url, settings, "echo", inputs=DEMO_INPUTS, model=model) as session:
        agent = session.agent
        await session.rt.spawn(lambda: DemoWatcher(agent.history.id, agent.events), f"analyzer/{thread_id}",
                               capabilities=ANALYZER_CAPABILITIES)
        idle = await run_until_idle(session, 40, Transcript(console, thread_id))
        summary = await session.summary()
    console.print(Panel(summary["apps"]["notebook"], title="notebook (committed state)"))
    console.print(f"{len(summary['entries'])} history entries; thread [bold]{thread_id}[/bold] is "
                  f"{idle.state.value}. The event log lives in [bold]{store_url}[/bold].")
    console.print(f"Look into it: livecontext history --thread {thread_id} --store {store_url}")
    console.print(f"              livecontext audit --thread {thread_id} --store {store_url}")

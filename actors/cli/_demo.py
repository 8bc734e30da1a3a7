"""``livecontext demo``: a scripted agent at work, offline, with every kind of actor."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.panel import Panel

from livecontext.protocol.agent import Idle
from livecontext.runtime import UsageError

from ..agent import AgentSettings
from ..analyzers import AnalyzerSettings
from ..history import HistoryLimits
from ..recap import RecapSettings
from ..agent import open_session, run_until_idle, thread_exists
from ._transcript import Transcript

DEMO_INPUTS = (
    "Plan a picnic for Saturday and keep the plan in your notebook.",
    "Add what we need for games.",
    "What is in the plan now?",
)

_PLAN = "# Picnic plan\n- sandwiches\n- lemonade\n- when: Saturday noon"


def _edit(text: str, name: str, **arguments: str) -> dict[str, object]:
    return {"text": text, "tool_calls": [{"name": name, "arguments": arguments}], "delay_s": 0.05}


DEMO_TURNS = [
    _edit("I'll start a plan in my notebook.", "notebook_replace", old_text="", new_text=_PLAN),
    _edit("Adding a blanket after the drinks.", "notebook_replace",
          old_text="- lemonade", new_text="- lemonade\n- a blanket"),
    _edit("Fixing the time and place in one edit.", "notebook_replace_span",
          start_anchor="- when:", end_anchor="noon", new_text="- when: Saturday 12:30, at the lake"),
    {"text": "The plan is in my notebook: sandwiches, lemonade, a blanket, Saturday 12:30 at the lake.",
     "delay_s": 0.05},
    _edit("Adding games under the games heading.", "notebook_replace",
          old_text="## Games", new_text="## Games\n- frisbee"),
    _edit("Trying the games heading again.", "notebook_replace",
          old_text="## Games", new_text="## Games\n- frisbee"),
    _edit("Once more.", "notebook_replace", old_text="## Games", new_text="## Games\n- frisbee"),
    _edit("There is no games heading: I'll add a games section after the blanket instead.",
          "notebook_replace", old_text="- a blanket", new_text="- a blanket\n## Games\n- frisbee\n- a ball"),
    {"text": "Thanks for the note about the repeated failures. Games are in: a frisbee and a ball.",
     "delay_s": 0.05},
    {"text": "The plan: sandwiches, lemonade, a blanket, a frisbee and a ball; Saturday 12:30 at the lake.",
     "delay_s": 0.05},
]
"""The scripted model's answers, one per model call."""

DEMO_BUDGET = 1500
"""Tokens per rendered context: small, so the budget visibly matters."""


class DemoThreadExistsError(UsageError):
    """``demo --thread T`` named a thread that exists: the demo writes only into a new one."""

    def __init__(self, thread_id: str, store_url: str) -> None:
        self.thread_id = thread_id
        self.store_url = store_url
        super().__init__(
            f"thread {thread_id!r} already exists in {store_url}: the demo writes its own conversation "
            "into a new thread; give another --thread, or leave it out"
        )


async def run_demo(store_url: str, thread_id: str, console: Console,
                   on_open: Callable[[], None] | None = None) -> Idle:
    """Run the demo thread and print what each actor does; return how its run ended.

    ``on_open`` is called once the thread is open (before the demo speaks).

    Raises:
        DemoThreadExistsError: the store already holds ``thread_id`` (nothing is written).
    """
    from livecontext.runtime.models import RetryingModel, ScriptedModel

    # (checked first: a thread of the user's must not get the demo's conversation, nor its
    # notebook the demo's edits; two demos racing for one new id are kept apart by its lock)
    if await thread_exists(store_url, thread_id):
        raise DemoThreadExistsError(thread_id, store_url)

    console.print(Panel(
        "Actors exchanging typed messages: an engine, its history store (the only writer of the "
        "event log), an app host with a notebook, an input source, a recap maintainer folding old "
        "steps, and two analyzers posting notes. The model is scripted, so this runs offline.",
        title="livecontext demo"))
    settings = AgentSettings(
        thread_id=thread_id, budget=DEMO_BUDGET,
        limits=HistoryLimits(max_entries=10, max_tokens=1200, soft=0.6, hard=0.8),
        recap=RecapSettings(strategy="simple_extract", window=2, batch=2, max_summary_chars=900),
        analyzers=(AnalyzerSettings("failures", kind="repeated_failures", threshold=3),
                   AnalyzerSettings("usage", kind="usage")),
    )
    model = RetryingModel(ScriptedModel.from_turns(DEMO_TURNS, name="demo"))
    transcript = Transcript(console, thread_id, budget=DEMO_BUDGET)
    async with open_session(store_url, settings, "echo", inputs=DEMO_INPUTS, model=model) as session:
        if on_open is not None:
            on_open()
        idle = await run_until_idle(session, 80, transcript)
        summary = await session.summary()
    entries = summary["entries"]
    folded = sum(1 for e in entries if e["folded"])
    recaps = [e for e in entries if e["kind"] == "recap" and not e["folded"]]
    console.print(Panel(summary["apps"]["notebook"], title="notebook (committed state)"))
    if recaps:
        console.print(Panel(recaps[-1]["levels"]["live"], title="the recap standing for the folded steps"))
    console.print(
        f"{len(entries)} entries in the log ({folded} folded into the recap); the largest context sent "
        f"to the model was {transcript.max_tokens} tokens of the {DEMO_BUDGET}-token budget.")
    console.print(f"Thread [bold]{thread_id}[/bold] is {idle.state.value}. "
                  f"The event log lives in [bold]{store_url}[/bold]. Look into it:")
    for command in ("history", "audit", "state"):
        console.print(f"  livecontext {command} --thread {thread_id} --store {store_url}")
    return idle

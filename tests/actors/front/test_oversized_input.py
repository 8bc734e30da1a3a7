"""An input too large for the context is never lost without a word: it is sent cut to its
head and tail and the reply says so; a pinned one is refused, unless asked to be cut."""

from __future__ import annotations

import re

import pytest

import livecontext
from livecontext.protocol.agent import AfterModelCall, BeforeModelCall, ObservationCut
from livecontext.protocol.history import ModelReply, ModelRequest, Retention, Role
from livecontext.runtime.models import EchoModel, TextCallback

WORDS_900 = "word " * 900
WORDS_20000 = "word " * 20000
REFUSED_AT_1000 = re.escape(
    "the pinned input is 905 tokens, more than the 324 a model call has room for (budget 1,000 minus 676 "
    "for the system prompt and the tools); nothing was recorded; shorten it, raise the budget, or have it "
    "sent cut to its head and tail (--cut-oversized; in Python cut_oversized=True)")
"""The default system prompt and tools (the notebook's and the control tools) cost 676 tokens."""


class Recording(EchoModel):
    """The echo model, keeping each request it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        return await super().complete(request, on_text)

    def input_sent(self, call: int = 0) -> str:
        """The input as the model was sent it at call ``call`` (the apps' windows apart)."""
        said = [m.content for m in self.requests[call].messages if m.role is Role.USER and m.content.startswith("word")]
        return said[-1].split("\n\n[Window: ", 1)[0]


def head_and_tail(sent: str) -> bool:
    """Whether ``sent`` is the input's head and tail around the line saying how much was left
    out between them."""
    return re.fullmatch(r"word [a-z ]+…\n… \[[\d,]+ chars elided\] …\n…[a-z ]+ word ", sent) is not None


def cut_note(entry: str, whole: int) -> str:
    return rf"^input {entry} did not fit the context whole: sent cut to its head and tail \([\d,]+ of its {whole:,} tokens\)$"


async def test_an_input_too_large_for_the_room_is_sent_cut_to_its_head_and_tail_and_the_reply_says_so() -> None:
    model = Recording()
    async with livecontext.open_agent(model=model, budget=1000, pin_task=False) as agent:
        reply = await agent.send(WORDS_900)
        entries = await agent.history()
    sent = model.input_sent()
    assert head_and_tail(sent) and len(sent) < len(WORDS_900) // 2
    assert len(reply.cut) == 1 and re.match(cut_note("e1", 901), reply.cut[0])
    assert entries[0].content.live.text == WORDS_900  # recorded whole: only what is sent is cut


async def test_a_20000_word_input_is_sent_cut_under_the_default_budget_not_as_its_gist() -> None:
    model = Recording()
    async with livecontext.open_agent(model=model, pin_task=False) as agent:
        reply = await agent.send(WORDS_20000)
    sent = model.input_sent()
    assert head_and_tail(sent) and len(sent) > 2000  # far more than a one-line gist
    assert len(reply.cut) == 1 and re.match(cut_note("e1", 20001), reply.cut[0])


async def test_an_input_that_fits_is_sent_whole_and_the_reply_lists_no_cut() -> None:
    model = Recording()
    async with livecontext.open_agent(model=model) as agent:
        reply = await agent.send("short task")
    assert [m.content.split("\n\n[Window: ")[0] for m in model.requests[0].messages if m.role is Role.USER][0] == (
        "short task")
    assert reply.cut == ()


async def test_stream_yields_the_cut_right_after_the_model_call_starts() -> None:
    async with livecontext.open_agent(model="echo", budget=1000, pin_task=False) as agent:
        events = [event async for event in agent.stream(WORDS_900)]
    kinds = [type(e) for e in events]
    at = kinds.index(ObservationCut)
    assert kinds[at - 1] is BeforeModelCall and AfterModelCall in kinds[at:]
    cut = events[at]
    assert isinstance(cut, ObservationCut)
    assert (cut.entry_id, cut.what, cut.tokens) == ("e1", "input", 901) and 0 < cut.sent_tokens < 250
    assert isinstance(events[-1], livecontext.Reply) and events[-1].cut == (cut.note,)


async def test_the_task_larger_than_the_budget_is_refused_naming_both_sizes_and_nothing_is_recorded() -> None:
    async with livecontext.open_agent(model="echo", budget=1000) as agent:
        with pytest.raises(livecontext.InputTooLargeError, match=f"^{REFUSED_AT_1000}$"):
            await agent.send(WORDS_900)
        assert await agent.history() == ()
        await agent.send("a task that fits")  # the thread is as it was: this is its task
        entries = await agent.history()
    assert entries[0].content.live.text == "a task that fits" and entries[0].retention is Retention.CRITICAL


async def test_a_pinned_input_larger_than_the_budget_is_refused_even_after_the_task() -> None:
    async with livecontext.open_agent(model="echo", budget=1000) as agent:
        await agent.send("the task")
        before = await agent.history()
        with pytest.raises(livecontext.InputTooLargeError, match=f"^{REFUSED_AT_1000}$"):
            await agent.send(WORDS_900, pin=True)
        assert await agent.history() == before
        reply = await agent.send(WORDS_900)  # not pinned: taken, and sent cut
    assert len(reply.cut) == 1


async def test_a_pinned_input_given_at_open_is_refused_before_the_agent_opens() -> None:
    with pytest.raises(livecontext.InputTooLargeError, match=f"^{REFUSED_AT_1000}$"):
        async with livecontext.open_agent(model="echo", budget=1000, inputs=[WORDS_900]):
            pass  # pragma: no cover
    with pytest.raises(livecontext.InputTooLargeError, match=f"^{REFUSED_AT_1000}$"):
        async with livecontext.open_agent(model="echo", budget=1000, pins=[WORDS_900]):
            pass  # pragma: no cover


async def test_a_pinned_input_larger_than_the_budget_is_taken_and_sent_cut_when_asked() -> None:
    model = Recording()
    async with livecontext.open_agent(model=model, budget=1000) as agent:
        reply = await agent.send(WORDS_900, cut_oversized=True)
        entries = await agent.history()
    assert entries[0].retention is Retention.CRITICAL and entries[0].content.live.text == WORDS_900
    assert head_and_tail(model.input_sent())
    assert len(reply.cut) == 1 and re.match(cut_note("e1", 901), reply.cut[0])


async def test_open_agent_cut_oversized_applies_to_its_inputs_and_every_send() -> None:
    async with livecontext.open_agent(model="echo", budget=1000, cut_oversized=True, inputs=[WORDS_900]) as agent:
        first = await agent.run()
        second = await agent.send(WORDS_900, pin=True)
    assert len(first.cut) == 1 and len(second.cut) == 1


async def test_an_input_given_behind_the_task_still_waiting_is_not_taken_for_the_task() -> None:
    async with livecontext.open_agent(model="echo", budget=1000, inputs=["the task"]) as agent:
        reply = await agent.send(WORDS_900)  # queued behind the task: not pinned, so sent cut
        entries = await agent.history()
    assert [e.retention for e in entries if e.id in ("e1", "e3")] == [Retention.CRITICAL, Retention.COMPRESSIBLE]
    assert len(reply.cut) == 1 and re.match(cut_note("e3", 901), reply.cut[0])

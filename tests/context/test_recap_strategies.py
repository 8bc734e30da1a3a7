"""The recap strategies: bounded as they grow, newest detail kept; and the batch they fold."""

from __future__ import annotations

import datetime as dt
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.actors.recap import model_summary, pick_batch, simple_extract, steps_of, structured
from livecontext.protocol import (
    ActorId,
    HistoryEntry,
    ModelInputEntry,
    ModelOutputEntry,
    Retention,
    Role,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.runtime.models import ScriptedModel

from tests.context._world import COUNTER, RecordingModel

WHO = ActorId("engine", "t")
WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


class Ids:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"e{self.n}"


def step(ids: Ids, text: str, *, ok: bool = True, retention: Retention = Retention.COMPRESSIBLE) -> list[HistoryEntry]:
    """An input, an output calling one tool, its results."""
    call = ToolCall(f"c{ids.n}", "notebook_replace", "{}")
    status = ToolStatus.OK if ok else ToolStatus.FAILED
    result = ToolResult(call.id, call.name, status, COUNTER.content(f"result {text}", f"result {text}", f"did {text}"[:60]))
    common = {"revision": 1, "author": WHO, "created_at": WHEN, "retention": retention}
    return [
        ModelInputEntry(id=ids(), content=COUNTER.content(text, text, f"user: {text}"[:60]), text=text, **common),
        ModelOutputEntry(id=ids(), content=COUNTER.content(f"why {text}?", f"why {text}?", f"working on {text}"[:60]),
                         tool_calls=(call,), **common),
        ToolResultsEntry(id=ids(), content=COUNTER.content("", "", ""), results=(result,), **common),
    ]


texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=120)
batches = st.lists(st.lists(st.tuples(texts, st.booleans()), min_size=1, max_size=4), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(batches=batches, max_chars=st.integers(1, 1500))
def test_simple_extract_stays_under_its_bound_as_it_grows_and_keeps_the_newest_line(
        batches: list[list[tuple[str, bool]]], max_chars: int) -> None:
    ids = Ids()
    recap = ""
    for batch in batches:
        entries = [e for text, ok in batch for e in step(ids, text, ok=ok)]
        grown = simple_extract(recap, entries, max_chars)
        assert len(grown) <= max_chars
        newest = simple_extract("", entries[-1:], 10**6)  # the newest entry's line alone
        if len(newest) + len("\n- (99999 earlier items summarised away)") <= max_chars:
            assert grown.endswith("\n" + newest) or grown == newest  # it fits: it is there, last
        recap = grown


@settings(max_examples=150, deadline=None)
@given(batches=batches, max_chars=st.integers(1, 1500))
def test_structured_stays_valid_json_under_its_bound_as_it_grows(
        batches: list[list[tuple[str, bool]]], max_chars: int) -> None:
    ids = Ids()
    recap = ""
    for batch in batches:
        entries = [e for text, ok in batch for e in step(ids, text, ok=ok)]
        grown = structured(recap, entries, max_chars)
        assert len(grown) <= max_chars
        if max_chars >= 2:
            data = json.loads(grown)
            if data and data["progress"]:  # the newest progress survives whatever was dropped
                assert data["progress"][-1] == entries[-2].content.gist.text
        recap = grown


def test_structured_sorts_results_into_its_fields() -> None:
    ids = Ids()
    entries = step(ids, "edit the notes") + step(ids, "edit again", ok=False)
    data = json.loads(structured("", entries, 2000))
    assert data["task_state"] == "user: edit again"
    assert data["progress"] == ["working on edit the notes", "working on edit again"]
    assert data["key_results"] == ["notebook_replace ok: did edit the notes"]
    assert data["open_questions"] == ["why edit the notes?", "why edit again?", "notebook_replace failed: did edit again"]
    # the next fold keeps building on it
    more = json.loads(structured(json.dumps(data), step(ids, "third"), 2000))
    assert more["progress"][-1] == "working on third" and len(more["progress"]) == 3


def test_simple_extract_counts_every_item_it_ever_dropped() -> None:
    ids = Ids()
    recap = ""
    for n in range(20):
        recap = simple_extract(recap, step(ids, f"step {n}"), 300)
    head, *rest = recap.splitlines()
    dropped = int(head.split("(")[1].split()[0])
    assert dropped + len(rest) == 20 * 3  # one line per input, output and result


async def test_model_summary_asks_its_model_with_the_previous_recap_and_the_steps() -> None:
    model = RecordingModel(ScriptedModel.from_turns([{"text": "they edited the notes twice"}]))
    ids = Ids()
    entries = step(ids, "first edit") + step(ids, "second edit")
    text = await model_summary("earlier: setup", entries, 500, model=model, counter=COUNTER,
                               budget=2000, call_index=0, thread_id="t")
    assert text == "they edited the notes twice"
    request = model.requests[0]
    assert request.call_index == 0 and request.tools == ()
    assert request.messages[0].role is Role.SYSTEM and "at most 500 characters" in request.messages[0].content
    body = request.messages[1].content
    assert body.startswith("Previous recap:\nearlier: setup")
    assert body.index("first edit") < body.index("second edit")
    assert "notebook_replace ok: result second edit" in body


async def test_model_summary_keeps_the_newest_detail_in_its_budget_and_bounds_the_answer() -> None:
    long_answer = "\n".join(f"line {n} of a long-winded summary" for n in range(100))
    model = RecordingModel(ScriptedModel.from_turns([{"text": long_answer}]))
    ids = Ids()
    entries = [e for n in range(30) for e in step(ids, f"edit number {n} " + "detail " * 20)]
    text = await model_summary("", entries, 400, model=model, counter=COUNTER, budget=300,
                               call_index=0, thread_id="t")
    assert len(text) <= 400
    assert text.endswith("line 99 of a long-winded summary")
    body = model.requests[0].messages[1].content
    assert COUNTER.count(body) <= 300 + 50  # the budget holds (headers aside)
    assert "edit number 29" in body  # the newest detail is in
    assert "detail detail" in body.split("edit number 29")[1]


def test_a_batch_is_the_oldest_steps_outside_the_window_never_split_never_critical() -> None:
    ids = Ids()
    entries = [e for n in range(6) for e in step(ids, f"s{n}")]
    assert len(steps_of(entries)) == 12  # an input; an output with its results
    batch = pick_batch(entries, window=4, batch=3)
    assert [e.id for e in batch] == ["e1", "e2", "e3", "e4"]  # three steps: e1, e2+e3, e4
    assert pick_batch(entries, window=12, batch=3) == []
    # a CRITICAL step is skipped: the batch starts after it, and stops before the next one
    critical = [*entries[:3], *step(ids, "keep", retention=Retention.CRITICAL), *entries[3:]]
    assert [e.id for e in pick_batch(critical, window=2, batch=10)] == ["e1", "e2", "e3"]
    after = [*step(ids, "keep2", retention=Retention.CRITICAL), *entries]
    assert [e.id for e in pick_batch(after, window=10, batch=1)] == ["e1"]


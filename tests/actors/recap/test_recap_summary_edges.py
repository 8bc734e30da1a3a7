"""``model_summary`` at its edges: range lines that shrink by halves and meet the budget to its
last token, and a shortened answer that is no shorter than the first."""

from __future__ import annotations

from livecontext.actors.recap import Recap, model_summary, simple_extract
from livecontext.protocol.history import HistoryEntry, ModelInputEntry, Retention
from livecontext.runtime.models import ScriptedModel

from tests.actors.recap._transcripts import WHEN, WHO
from tests.support.context_world import COUNTER, RecordingModel


def inputs(*levels: tuple[str, str]) -> list[HistoryEntry]:
    """Steps of one input each, with the RECENT and GIST texts given (LIVE is RECENT)."""
    return [ModelInputEntry(id=f"e{n}", revision=1, author=WHO, created_at=WHEN, retention=Retention.COMPRESSIBLE,
                            content=COUNTER.content(recent, recent, gist), text=recent)
            for n, (recent, gist) in enumerate(levels, start=1)]


async def body_sent(entries: list[HistoryEntry], budget: int, max_chars: int = 500) -> str:
    model = RecordingModel(ScriptedModel.from_turns([{"text": "the summary"}]))
    await model_summary(Recap(), entries, max_chars, model=model, counter=COUNTER, budget=budget, call_index=0,
                        thread_id="t")
    return model.requests[0].messages[1].content


async def test_merged_lines_that_fit_the_budget_to_its_last_token_are_not_shrunk_further() -> None:
    # the two older steps fit not even at their gist: they are given as range lines
    entries = inputs(("tiny", "tiny"), ("huge " * 300, "huge " * 200), ("newest step", "newest gist"))
    body = await body_sent(entries, budget=120)
    assert "Earlier steps, merged:\n- e1 user: tiny\n- e2 user: huge huge" in body
    exact = COUNTER.count(body)
    assert await body_sent(entries, budget=exact) == body
    shrunk = await body_sent(entries, budget=exact - 1)
    assert shrunk != body and COUNTER.count(shrunk) < exact


async def test_a_shortened_answer_as_long_as_the_first_is_not_taken() -> None:
    first = "First answer, kept. " * 20
    same_length = "Second one, dropped" + "!" * (len(first.strip()) - len("Second one, dropped"))
    assert len(same_length) == len(first.strip())
    model = RecordingModel(ScriptedModel.from_turns([{"text": first}, {"text": same_length}]))
    recap = await model_summary(Recap(), inputs(("a step", "a step")), 300, model=model, counter=COUNTER,
                                budget=2000, call_index=0, thread_id="t")
    assert len(model.requests) == 2
    assert recap.text.startswith("First answer, kept.") and len(recap.text) <= 300


async def test_merged_lines_shrink_by_halves_to_the_first_length_that_fits() -> None:
    older = inputs(*[(f"step {n} " + "huge " * 300, f"gist {n} " + "huge " * 200) for n in range(12)])
    newest = inputs(*[("", "")] * 12, ("newest step", "newest gist"))[-1]
    entries = [*older, newest]

    def body_at(chars: int) -> str:
        merged = simple_extract(Recap(), older, chars).text
        return f"Earlier steps, merged:\n{merged}\n\nSteps:\n[e13] newest step"

    assert len({body_at(1000), body_at(500), body_at(333), body_at(250)}) == 4
    for chars in (500, 250):  # halves of max_chars
        budget = COUNTER.count(body_at(chars))
        assert COUNTER.count(body_at(chars * 2)) > budget
        assert await body_sent(entries, budget=budget, max_chars=1000) == body_at(chars)

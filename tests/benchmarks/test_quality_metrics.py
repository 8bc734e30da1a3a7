"""The context-quality benchmark's metrics (``benchmarks/quality_metrics.py``), on a hand-built
history and hand-written renders."""

from __future__ import annotations

import datetime as dt

from benchmarks.quality_metrics import (
    Names,
    coverage,
    facts_kept,
    infer_spans,
    message_tokens,
    recap_text,
    task_present,
    units_of,
)
from benchmarks.replay import fit
from livecontext.protocol.agent import RenderedSpan
from livecontext.protocol.history import (
    ChatMessage,
    Content,
    HistoryEntry,
    LevelText,
    ModelInputEntry,
    ModelOutputEntry,
    RecapEntry,
    Retention,
    Role,
    Shown,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.kernel import ActorId

T0 = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)
WHO = ActorId("engine", "t")
TASK = "Fix the crash in parse_header when the section is empty."


def content(live: str, recent: str | None = None, gist: str | None = None) -> Content:
    r, g = recent if recent is not None else live, gist if gist is not None else live[:10]
    return Content(LevelText(live, 0), LevelText(r, 0), LevelText(g, 0))


def step(n: int) -> tuple[ModelOutputEntry, ToolResultsEntry]:
    """A model output ``e<n>`` calling bash, and its results ``e<n+1>``."""
    call = ToolCall(f"call_{n}", "bash", '{"command": "ls"}')
    result = ToolResult(f"call_{n}", "bash", ToolStatus.OK,
                        content(f"live output {n}\n" * 5, f"recent output {n}", f"bash ok: gist {n}"))
    return (ModelOutputEntry(id=f"e{n}", revision=1, author=WHO, created_at=T0, retention=Retention.COMPRESSIBLE,
                             content=content(f"thinking {n}"), tool_calls=(call,)),
            ToolResultsEntry(id=f"e{n + 1}", revision=1, author=WHO, created_at=T0,
                             retention=Retention.COMPRESSIBLE, content=content(""), results=(result,)))


def history() -> list[HistoryEntry]:
    """e1 the task; steps e2-e3, e4-e5; recap e6 (of e2-e5); steps e7-e8 ... e13-e14."""
    entries: list[HistoryEntry] = [ModelInputEntry(id="e1", revision=1, author=WHO, created_at=T0,
                                                   retention=Retention.CRITICAL, content=content(TASK), text=TASK)]
    entries += [*step(2), *step(4)]
    entries.append(RecapEntry(id="e6", revision=1, author=ActorId("recap", "t"), created_at=T0,
                              retention=Retention.CRITICAL, content=content("e2–e5: looked around"),
                              covers=("e2", "e3", "e4", "e5")))
    for n in (7, 9, 11, 13):
        entries += step(n)
    return entries


def messages_of(entries: list[HistoryEntry], levels: dict[str, str]) -> list[ChatMessage]:
    """A render: the system prompt, the recap, then each step of ``levels`` at its level."""
    msgs = [ChatMessage(Role.SYSTEM, "You are a test agent."),
            ChatMessage(Role.SYSTEM, "[Recap of earlier steps]\ne2–e5: looked around")]
    by_id = {e.id: e for e in entries}
    for output_id, level in levels.items():
        out = by_id[output_id]
        res = by_id[f"e{int(output_id[1:]) + 1}"]
        assert isinstance(out, ModelOutputEntry) and isinstance(res, ToolResultsEntry)
        msgs.append(ChatMessage(Role.ASSISTANT, out.content.live.text, out.tool_calls))
        text = getattr(res.results[0].content, level).text
        msgs.append(ChatMessage(Role.TOOL, f"[ok] {text}", tool_call_id=res.results[0].call_id))
    return msgs


def test_a_unit_is_the_task_alone_or_an_output_with_its_results_and_recaps_are_no_units() -> None:
    assert units_of(history()) == [("e1",), ("e2", "e3"), ("e4", "e5"), ("e7", "e8"), ("e9", "e10"),
                                   ("e11", "e12"), ("e13", "e14")]


def test_recap_names_cover_single_ids_and_ranges_written_several_ways() -> None:
    names = Names.of("- e3 bash ok\ne7–e12: edits; e20-e22 tests; e30..e31; e40 to e41")
    assert all(n in names for n in (3, 7, 9, 12, 20, 21, 22, 30, 31, 40, 41))
    assert not any(n in names for n in (2, 4, 6, 13, 19, 23, 42))
    assert 12 not in Names.of("line12 and 1e12 and e120")


def test_coverage_counts_older_steps_shown_at_gist_or_named_by_a_recap_range() -> None:
    # the task omitted, e2-e5 folded (named by the recap's range), e7-e8 at GIST, the rest the window
    spans = (RenderedSpan("e1", "e1", Shown.OMITTED), RenderedSpan("e6", "e6", Shown.RECAP),
             RenderedSpan("e7", "e8", Shown.GIST), RenderedSpan("e9", "e12", Shown.RECENT),
             RenderedSpan("e13", "e14", Shown.LIVE))
    cov = coverage(units_of(history()), spans, "e2–e5: looked around")
    assert (cov.older, cov.represented, cov.window) == (4, 3, 3)  # all but the task
    assert coverage(units_of(history()), spans, "").represented == 1  # without the recap: e7-e8 only


def test_a_task_shown_whole_at_the_start_does_not_stretch_the_window_over_omitted_steps() -> None:
    spans = (RenderedSpan("e1", "e1", Shown.LIVE), RenderedSpan("e7", "e10", Shown.OMITTED),
             RenderedSpan("e11", "e14", Shown.RECENT))
    cov = coverage(units_of(history()), spans, "")
    assert (cov.older, cov.represented, cov.window) == (5, 1, 2)  # the task, e2-e5 gone, e7-e10 omitted


def test_spans_read_back_from_the_messages_give_the_levels_rendered() -> None:
    entries = history()
    msgs = messages_of(entries, {"e7": "gist", "e9": "recent", "e11": "recent", "e13": "live"})
    spans = {s.first: s.shown for s in infer_spans(msgs, entries)}
    assert spans == {"e7": Shown.GIST, "e8": Shown.GIST, "e9": Shown.RECENT, "e10": Shown.RECENT,
                     "e11": Shown.RECENT, "e12": Shown.RECENT, "e13": Shown.LIVE, "e14": Shown.LIVE}
    cov = coverage(units_of(entries), infer_spans(msgs, entries), recap_text(msgs))
    assert (cov.older, cov.represented) == (4, 3)


def test_tokens_task_and_facts_are_read_from_the_messages() -> None:
    call = ToolCall("c1", "bash", '{"command": "cat > a.py <<\'EOF\'\\nprint(\\"hi\\")\\nEOF"}')
    msgs = [ChatMessage(Role.SYSTEM, "sys"), ChatMessage(Role.USER, f"{TASK}\n\n[Window: w]"),
            ChatMessage(Role.ASSISTANT, "writing", (call,))]
    words = {"sys": 1, "writing": 2, "bash": 3, call.arguments: 10}

    def count(text: str) -> int:
        return words.get(text, 50)

    assert message_tokens(msgs, count) == (1 + 4) + (50 + 4) + (2 + 4 + 3 + 10 + 3)
    assert task_present(msgs, TASK) and not task_present(msgs[:1] + msgs[2:], TASK)
    text = "\n".join([m.content for m in msgs] + [call.arguments])
    assert facts_kept(text, ["cat > a.py <<'EOF'", 'print("hi")', "KeyError: 'x'"]) == (2, 3)


def test_the_stand_in_summary_merges_the_oldest_lines_into_id_ranges_to_fit() -> None:
    lines = [f"e{n}: step {n} did something worth a line" for n in range(2, 30)]
    text = fit(lines, 400)
    assert len(text) <= 400 and text.splitlines()[-1] == lines[-1]
    first = Names.of(text.splitlines()[0])
    assert 2 in first and 5 in first  # the oldest lines became a range, still named
    assert all(n in Names.of(text) for n in range(2, 30))

"""The summary layer: every folded step stays in some line, old lines merge, newest stay fine."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.actors.recap import MIN_SUMMARY_CHARS, Recap, model_summary, simple_extract, steps_of, structured
from livecontext.actors.recap._facts import facts_of
from livecontext.actors.recap._layer import (
    DATA_FACTOR,
    ErrorItem,
    Layer,
    _pick,
    Span,
    add_steps,
    fit,
    merge,
    range_line,
    render,
    span_of,
)
from livecontext.protocol.history import HistoryEntry
from livecontext.runtime.models import ScriptedModel

from tests.actors.recap._transcripts import (
    Session,
    cat_n,
    coding_session,
    edited_snippet,
    grep_hits,
    pytest_failing,
    pytest_passing,
    traceback_output,
)
from tests.support.context_world import COUNTER

LINE = re.compile(r"^(?:- )?e(\d+)(?:–e(\d+) \((\d+) steps\))?(?:[: ]|$)")


def add_step(s: Session, kind: int, n: int) -> None:
    """One realistic step of a palette of ten."""
    rng = random.Random(n)
    test = f"tests/test_{'abc'[n % 3]}.py"
    if kind == 0:
        s.user(f"Please also handle case {n}." + " More detail." * (n % 7))
    elif kind == 1:
        s.bash(f"Searching for helper_{n}.", f"grep -rn helper_{n} src", grep_hits(f"helper_{n}", ["src/a.py"], rng))
    elif kind == 2:
        s.bash("Running the tests.", f"python -m pytest {test} -x", pytest_failing(test, failed=1 + n % 3))
    elif kind == 3:
        s.bash("Rerunning.", f"python -m pytest {test} -x", pytest_passing(test))
    elif kind == 4:
        s.editor("Reading.", "view", f"src/m{n % 5}.py", cat_n(f"src/m{n % 5}.py", 20 + n % 50, rng))
    elif kind == 5:
        s.editor("Fixing the import.", "str_replace", f"src/m{n % 5}.py", edited_snippet(f"src/m{n % 5}.py", rng),
                 old_str="a", new_str="b")
    elif kind == 6:
        s.bash("Reproducing.", f"python repro_{n % 2}.py", traceback_output(f"repro_{n % 2}.py") if n % 3 else "ok")
    elif kind == 7:
        s.say(f"Should case {n} be supported? I think so." + " Reasoning." * (n % 9))
    elif kind == 8:
        s.act("Patching.", ("apply_patch", {"input": f"*** Begin Patch\n*** Update File: src/p{n}.py\n*** End Patch"},
                            "Done!", True))
    else:
        s.act("Two at once.", ("bash", {"command": f"ls src/d{n}"}, "a.py\nb.py", True),
              ("bash", {"command": f"sed -i s/x/y/ src/d{n}/a.py"}, "", n % 2 == 0))


steps_and_folds = st.tuples(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 200)), min_size=1, max_size=60),
    st.lists(st.integers(1, 8), min_size=1, max_size=30),
)


def build(plan: list[tuple[int, int]]) -> tuple[list[list[HistoryEntry]], list[str]]:
    s = Session()
    for kind, n in plan:
        add_step(s, kind, n)
    steps = steps_of(s.entries)
    return steps, [step[0].id for step in steps]


def batches(steps: list[list[HistoryEntry]], sizes: list[int]) -> list[list[HistoryEntry]]:
    out, i = [], 0
    while i < len(steps):
        size = sizes[len(out) % len(sizes)]
        out.append([e for step in steps[i:i + size] for e in step])
        i += size
    return out


def check_coverage(lines: list[str], folded: list[str]) -> list[int]:
    """Every folded step id is inside exactly one line, the lines in order; returns each
    line's step count."""
    numbers = [int(i[1:]) for i in folded]
    ranges, sizes = [], []
    for line in lines:
        m = LINE.match(line)
        assert m, f"a line names no step: {line!r}"
        first = int(m.group(1))
        last = int(m.group(2) or first)
        ranges.append((first, last))
        sizes.append(int(m.group(3) or 1))
    for (_, last), (first, _) in zip(ranges, ranges[1:]):
        assert last < first, f"lines out of order or overlapping: {ranges}"
    for n in numbers:
        assert sum(1 for a, b in ranges if a <= n <= b) == 1, f"step e{n} is in no line: {ranges}"
    assert ranges[0][0] == numbers[0] and ranges[-1][1] == numbers[-1]
    covered = sum(sizes)
    assert covered == len(numbers), f"the lines count {covered} steps, {len(numbers)} were folded"
    return sizes


@settings(max_examples=60, deadline=None)
@given(plan=steps_and_folds, max_chars=st.integers(MIN_SUMMARY_CHARS, 2500))
def test_simple_extract_keeps_every_folded_step_in_some_line_or_range_whatever_the_folds(
        plan: tuple[list[tuple[int, int]], list[int]], max_chars: int) -> None:
    steps, ids = build(plan[0])
    recap = Recap()
    done = 0
    for batch in batches(steps, plan[1]):
        recap = simple_extract(recap, batch, max_chars)
        done += len(steps_of(batch))
        assert len(recap.text) <= max_chars
        sizes = check_coverage(recap.text.splitlines(), ids[:done])
        assert sizes == sorted(sizes, reverse=True), f"a newer line covers more steps than an older: {sizes}"
        layer = Layer.load(recap.data)  # the data holds the same spans the lines show
        assert [(s.first, s.last, s.steps) for s in layer.spans] == [
            (m.group(1), m.group(2) or m.group(1), int(m.group(3) or 1)) for m in
            (re.match(r"^- (e\d+)(?:–(e\d+) \((\d+) steps\))?", line) for line in recap.text.splitlines()) if m]
        assert len(recap.data) <= DATA_FACTOR * (max_chars + 1) + 200


@settings(max_examples=40, deadline=None)
@given(plan=steps_and_folds, max_chars=st.integers(MIN_SUMMARY_CHARS, 2500), pinned=st.booleans())
def test_structured_keeps_every_folded_step_in_its_steps_and_stays_valid_json(
        plan: tuple[list[tuple[int, int]], list[int]], max_chars: int, pinned: bool) -> None:
    steps, ids = build(plan[0])
    recap = Recap()
    done = 0
    task = ["Fix the \"quoted\" bug\n" * 30] if pinned else []
    for batch in batches(steps, plan[1]):
        recap = structured(recap, batch, max_chars, task)
        done += len(steps_of(batch))
        assert len(recap.text) <= max_chars
        check_coverage(json.loads(recap.text)["steps"], ids[:done])


@settings(max_examples=25, deadline=None)
@given(plan=steps_and_folds, max_chars=st.integers(MIN_SUMMARY_CHARS, 1500))
async def test_model_summary_keeps_every_folded_step_in_its_data(
        plan: tuple[list[tuple[int, int]], list[int]], max_chars: int) -> None:
    steps, ids = build(plan[0])
    folds = batches(steps, plan[1])
    model = ScriptedModel.from_turns([{"text": "summary " * 400} for _ in range(2 * len(folds))])
    recap = Recap()
    done = 0
    for k, batch in enumerate(folds):
        recap = await model_summary(recap, batch, max_chars, model=model, counter=COUNTER, budget=400,
                                    call_index=2 * k, thread_id="t")
        done += len(steps_of(batch))
        assert len(recap.text) <= max_chars
        layer = Layer.load(recap.data)
        check_coverage([range_line(s, 99) for s in layer.spans], ids[:done])
        assert layer.model_calls == 2 * k + 2


# -- merging -------------------------------------------------------------------------------------------


def spans_of(s: Session) -> list[Span]:
    layer = Layer()
    add_steps(layer, s.entries)
    return layer.spans


def test_a_range_line_says_what_its_steps_did() -> None:
    s = Session()
    rng = random.Random(3)
    s.user("Also keep the keys stable.")
    s.bash("Reproducing.", "python reproduce.py", traceback_output())
    s.bash("Searching.", 'grep -rn "def make_key" src/', grep_hits("make_key", ["src/cache.py"], rng))
    s.editor("The function is called normalise.", "str_replace", "src/cache.py", edited_snippet("src/cache.py", rng),
             old_str="norm", new_str="normalise as norm")
    s.bash("Again.", "python reproduce.py", "True\nTrue")
    s.bash("Tests.", "python -m pytest tests/test_cache.py", pytest_failing())
    s.bash("Tests, all.", "python -m pytest tests", pytest_passing())
    spans = spans_of(s)
    merged = spans[0]
    for span in spans[1:]:
        merged = merge(merged, span)
    assert range_line(merged) == (
        'e1–e12 (7 steps): user: "Also keep the keys stable."; 6 calls (python x2, pytest x2, grep, str_replace); '
        'edited src/cache.py; read src/, reproduce.py, tests/test_cache.py; searched "def make_key"; '
        "errors: AssertionError in tests/test_cache.py (fixed at e12), ImportError in src/cache.py (fixed at e8); "
        "last tests: pytest tests: 15 passed (e12)")
    assert (merged.first, merged.last, merged.steps, merged.calls, merged.line) == ("e1", "e12", 7, 6, "")


def test_an_error_is_open_until_a_rerun_without_it_even_folds_later() -> None:
    s = Session()
    s.bash("Tests.", "python -m pytest tests/test_a.py", pytest_failing("tests/test_a.py"))
    s.bash("Another failure.", "python other.py", traceback_output("other.py"))
    first = simple_extract(Recap(), s.entries, 2000)
    assert "AssertionError in tests/test_a.py (open)" in range_line(Layer.load(first.data).spans[0])
    s.entries.clear()
    s.bash("Same tests, still failing.", "python -m pytest tests/test_a.py -q", pytest_failing("tests/test_a.py"))
    s.bash("Other tests pass.", "python -m pytest tests/test_b.py", pytest_passing("tests/test_b.py"))
    s.bash("A different script.", "python another.py", "ok")
    second = simple_extract(first, s.entries, 2000)
    assert [e.fixed for e in Layer.load(second.data).errors()] == ["", "", ""]  # nothing reran them without them
    s.entries.clear()
    s.bash("Everything.", "cd /testbed && python -m pytest", pytest_passing())
    third = simple_extract(second, s.entries, 2000)
    errors = Layer.load(third.data).errors()
    assert [(e.kind, e.at, e.fixed) for e in errors] == [
        ("AssertionError", "e1", "e11"), ("ImportError", "e3", ""), ("AssertionError", "e5", "e11")]
    assert errors[0].keys == [] and errors[1].keys == ["run python other.py"]  # (a fixed error forgets its keys)


def test_a_rerun_failing_otherwise_fixes_the_error_it_no_longer_reports() -> None:
    s = Session()
    s.bash("Run.", "python reproduce.py", traceback_output())
    s.bash("Again.", "python reproduce.py", traceback_output(error="TypeError: unhashable type: 'dict'"))
    errors = Layer.load(simple_extract(Recap(), s.entries, 2000).data).errors()
    assert [(e.kind, e.fixed) for e in errors] == [("ImportError", "e3"), ("TypeError", "")]


def test_a_span_keeps_an_input_to_100_characters_and_a_search_to_50() -> None:
    s = Session()
    s.user("u" * 150)
    assert span_of(facts_of(s.entries)).inputs == ["u" * 99 + "…"]
    s.bash("x", f"grep -rn {'p' * 80} src/", "")
    assert span_of(facts_of(s.entries[1:])).searched == ["p" * 49 + "…"]


def test_simple_extract_shows_its_range_lines_as_finely_as_they_fit() -> None:
    s = Session()
    for n in range(100):
        s.bash(".", f"p{n % 8} x", "ok")
    recap = simple_extract(Recap(), s.entries, 1400)
    span = Layer.load(recap.data).spans[0]
    assert span.steps > 8 and recap.text.splitlines()[0] == "- " + range_line(span, 0)
    assert "p7" in recap.text.splitlines()[0]  # eight programs: the finest detail lists them all


def test_merging_counts_an_error_seen_again_and_opens_it_again() -> None:
    old = Span("e1", "e1", errors=[ErrorItem("ImportError", "a.py", "ImportError: x", "e1", ["k1"], "e3")])
    new = Span("e5", "e5", errors=[ErrorItem("ImportError", "a.py", "ImportError: y", "e5", ["k2"])])
    merged = merge(old, new)
    assert [(e.n, e.fixed, e.text, e.keys, e.at) for e in merged.errors] == [
        (2, "", "ImportError: y", ["k1", "k2"], "e1")]
    both_fixed = merge(old, Span("e5", "e5", errors=[ErrorItem("ImportError", "a.py", "t", "e5", [], "e7")]))
    assert both_fixed.errors[0].fixed == "e7"
    assert old.errors[0].n == 1  # (merging copies: the spans merged are unchanged)


def test_a_merged_span_keeps_its_newest_items_and_says_it_lost_some() -> None:
    spans = [Span(f"e{n}", f"e{n}", edited=[f"src/f{n}.py"], actions={f"tool{n}": 1}, calls=1,
                  errors=[ErrorItem(f"E{n}Error", "", "x", f"e{n}", [], "e99" if n % 2 else "")]) for n in range(20)]
    merged = spans[0]
    for span in spans[1:]:
        merged = merge(merged, span)
    assert merged.edited == [f"src/f{n}.py" for n in range(8, 20)] and merged.calls == 20
    assert len(merged.actions) == 12 and len(merged.errors) == 6
    assert all(not e.fixed for e in merged.errors[:5])  # the fixed ones went first
    assert set(merged.more) == {"actions", "edited", "errors"}
    line = range_line(merged)
    assert "edited src/f12.py, src/f13.py" in line and "src/f19.py, …" in line and line.endswith("…")


def test_a_range_line_loses_detail_before_it_loses_its_ids() -> None:
    big = merge(Span("e1", "e1", inputs=["x" * 90], calls=3, actions={"pytest": 2, "grep": 1}, edited=["a.py"],
                     errors=[ErrorItem("ImportError", "a.py", "t", "e1", [])], test="1 passed", test_run="pytest",
                     test_at="e1"),
                Span("e100000", "e100000", read=["b.py"], searched=["make_key"]))
    lengths = [len(range_line(big, d)) for d in range(8)]
    assert lengths == sorted(lengths, reverse=True)
    assert range_line(big, 5) == ("e1–e100000 (2 steps): 3 calls (pytest x2, …); edited a.py; errors: ImportError "
                                  "(open); last tests: 1 passed (e1)")
    assert range_line(big, 6) == "e1–e100000 (2 steps): 3 calls, 1 files edited, 1 errors (1 open)"
    assert range_line(big, 7) == range_line(big, 99) == "e1–e100000 (2 steps)"
    assert render(big, 40) == "e1–e100000 (2 steps)"
    assert render(big, 70) == range_line(big, 6)
    assert render(big, 12) == "e1–e100000 (2 steps)"  # (never less: the steps stay represented)


def test_each_level_of_a_range_lines_detail_lists_fewer_and_shorter_items() -> None:
    span = Span("e1", "e99", 50, calls=60, actions={f"prog{n}": 10 - n for n in range(10)},
                edited=[f"src/e{n}.py" for n in range(10)], read=[f"docs/r{n}.md" for n in range(10)],
                searched=[f"pat{n}" for n in range(10)], inputs=[f"input number {n} " + "x" * 60 for n in range(3)],
                errors=[ErrorItem(f"E{n}Error", f"src/e{n}.py", "t", f"e{n}", [], "e9" if n % 2 else "")
                        for n in range(5)],
                test="3 failed, 12 passed", test_run="pytest tests/test_a.py", test_at="e98")
    assert [range_line(span, d) for d in range(8)] == [
    ('e1–e99 (50 steps): user: "input number 1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…", '
     '"input number 2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…", …; 60 calls (prog0 x10, '
     'prog1 x9, prog2 x8, prog3 x7, prog4 x6, prog5 x5, prog6 x4, prog7 x3, …); edited src/e2.py, '
     'src/e3.py, src/e4.py, src/e5.py, src/e6.py, src/e7.py, src/e8.py, src/e9.py, …; read '
     'docs/r4.md, docs/r5.md, docs/r6.md, docs/r7.md, docs/r8.md, docs/r9.md, …; searched "pat6", '
     '"pat7", "pat8", "pat9", …; errors: E4Error in src/e4.py (open), E2Error in src/e2.py (open), '
     'E0Error in src/e0.py (open), E3Error in src/e3.py (fixed at e9), …; last tests: pytest '
     'tests/test_a.py: 3 failed, 12 passed (e98)'),
    ('e1–e99 (50 steps): user: "input number 2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…", …; 60 calls (prog0 '
     'x10, prog1 x9, prog2 x8, prog3 x7, prog4 x6, prog5 x5, …); edited src/e4.py, src/e5.py, '
     'src/e6.py, src/e7.py, src/e8.py, src/e9.py, …; read docs/r6.md, docs/r7.md, docs/r8.md, '
     'docs/r9.md, …; searched "pat7", "pat8", "pat9", …; errors: E4Error in src/e4.py (open), E2Error '
     'in src/e2.py (open), E0Error in src/e0.py (open), …; last tests: pytest tests/test_a.py: 3 '
     'failed, 12 passed (e98)'),
    ('e1–e99 (50 steps): user: "input number 2 xxxxxxxxxxxxxxxxxxxx…", …; 60 calls (prog0 x10, prog1 '
     'x9, prog2 x8, prog3 x7, …); edited src/e6.py, src/e7.py, src/e8.py, src/e9.py, …; read '
     'docs/r8.md, docs/r9.md, …; searched "pat8", "pat9", …; errors: E4Error in src/e4.py (open), '
     'E2Error in src/e2.py (open), …; last tests: pytest tests/test_a.py: 3 failed, 12 passed (e98)'),
    ('e1–e99 (50 steps): user: "input number 2 xxxxxxxxxxxx…", …; 60 calls (prog0 x10, prog1 x9, '
     'prog2 x8, …); edited src/e7.py, src/e8.py, src/e9.py, …; errors: E4Error in src/e4.py (open), '
     'E2Error in src/e2.py (open), …; last tests: 3 failed, 12 passed (e98)'),
    ('e1–e99 (50 steps): 60 calls (prog0 x10, prog1 x9, …); edited src/e8.py, src/e9.py, …; errors: '
     'E4Error in src/e4.py (open), …; last tests: 3 failed, 12 passed (e98)'),
    ('e1–e99 (50 steps): 60 calls (prog0 x10, …); edited src/e9.py, …; errors: E4Error (open), …; '
     'last tests: 3 failed, 12 passed (e98)'),
    'e1–e99 (50 steps): 60 calls, 10 files edited, 5 errors (3 open)',
    'e1–e99 (50 steps)',
    ]


def test_one_step_is_its_own_line_unless_it_cannot_fit() -> None:
    s = Session()
    s.bash("Tests.", "python -m pytest", pytest_passing())
    span = span_of(facts_of(steps_of(s.entries)[0]))
    assert render(span, 500) == span.line == 'e1 bash: python -m pytest → 15 passed — "Tests."'
    assert render(span, len(span.line)) == span.line
    assert render(span, 20) == "e1 bash: python -m…"
    assert render(span, 1) == "e1…"  # (the id is kept whole when a limit is even smaller)


@pytest.mark.parametrize(("sizes", "pair"), [
    ([1, 1, 1], 0), ([2, 1, 1], 1), ([2, 2, 1], 0), ([4, 1, 1], 1), ([4, 2, 1, 1], 2), ([4, 2, 2], 1),
    ([3, 2, 2], 0), ([8, 4, 2, 1], 0), ([1, 2], 0),
])
def test_the_neighbours_merged_are_the_oldest_of_a_size_that_keeps_spans_shrinking(sizes: list[int], pair: int) -> None:
    assert _pick([Span(f"e{n}", f"e{n}", k) for n, k in enumerate(sizes)]) == pair


def test_fit_merges_until_the_lines_fit_keeping_the_newest_finest() -> None:
    spans = [Span(f"e{n}", f"e{n}", line=f"e{n} " + "x" * (41 - len(str(n))), edited=[f"src/{'d' * 20}{n}.py"])
             for n in range(1, 33)]
    for lines in range(32, 3, -1):
        fitted, shown = fit(spans, lines * 45)
        steps = [s.steps for s in fitted]
        assert sum(len(line) + 1 for line in shown) <= lines * 45
        assert steps == sorted(steps, reverse=True) and sum(steps) == 32
        assert [(s.first, s.last) for s in fitted] == [(shown_line.split()[0].split("–")[0],
                                                        shown_line.split()[0].split("–")[-1]) for shown_line in shown]
    assert [s.steps for s in fit(spans, 32 * 45)[0]] == [1] * 32


def test_after_a_long_run_the_oldest_lines_are_the_coarsest_and_the_newest_are_steps() -> None:
    entries = [e for e in coding_session(140, pin_task=False)]
    steps = steps_of(entries)[:-4]
    recap = Recap()
    for i in range(0, len(steps), 4):
        recap = simple_extract(recap, [e for step in steps[i:i + 4] for e in step], 2000)
    lines = recap.text.splitlines()
    sizes = check_coverage(lines, [step[0].id for step in steps])
    assert sizes[0] > 32 and sizes[-8:] == [1] * 8 and len(recap.text) > 1600
    assert lines[-1].startswith(f"- {steps[-1][0].id} ")


def test_a_lone_span_too_big_for_its_data_keeps_fewer_items() -> None:
    span = Span("e1", "e9", 9, calls=40, actions={f"tool_{n}": 1 for n in range(12)},
                edited=[f"src/{'d' * 60}/{n}.py" for n in range(12)], searched=["s" * 50] * 1)
    fitted, lines = fit([span], 100)
    assert len(Layer(fitted).dump()) < DATA_FACTOR * 100 + 100
    assert "edited" in fitted[0].more and fitted[0].edited[-1].endswith("11.py")  # the newest kept
    assert lines == ["e1–e9 (9 steps): 40 calls, 6+ files edited"] or lines[0].startswith("e1–e9 (9 steps)")


# -- the data ----------------------------------------------------------------------------------------


def test_the_data_round_trips_through_json() -> None:
    entries = coding_session(30)
    layer = Layer(model_calls=3, extra={"first_input": "x"})
    add_steps(layer, entries)
    back = Layer.load(layer.dump())
    assert back == layer and back.spans[3].line == layer.spans[3].line


@pytest.mark.parametrize("data", [
    "", "not json", "[]", '{"v": 2, "spans": []}', '{"v": 1}', '{"v": 1, "spans": [{"first": "e1"}]}',
    '{"v": 1, "spans": [{"first": "e1", "last": "e1", "steps": 0}]}',
    '{"v": 1, "spans": [{"first": "e1", "last": "e1", "steps": 1, "edited": "a.py"}]}',
    '{"v": 1, "spans": [{"first": "e1", "last": "e1", "steps": 1, "actions": {"a": "x"}}]}',
    '{"v": 1, "spans": [{"first": "e1", "last": "e1", "steps": 1, "errors": [{"kind": "E"}]}]}',
    '{"v": 1, "spans": [{"first": 1, "last": "e1", "steps": 1}]}',
    "[" * 10000,
])
def test_unreadable_data_starts_fresh(data: str) -> None:
    assert Layer.load(data) == Layer()
    s = Session()
    s.bash("x", "ls", "a")
    assert simple_extract(Recap("- e0 something", data), s.entries, 500).text == '- e1 bash: ls → a — "x"'


def test_model_calls_are_read_back_only_when_they_are_a_count() -> None:
    assert Layer.load('{"v": 1, "spans": [], "model_calls": 4}').model_calls == 4
    assert Layer.load('{"v": 1, "spans": [], "model_calls": 0}').model_calls == 0
    for bad in ("-1", "true", '"4"', "1.5"):
        assert Layer.load('{"v": 1, "spans": [], "model_calls": %s}' % bad).model_calls is None

"""The recap strategies: what they write, within their bound, and how model_summary asks."""

from __future__ import annotations

import json
import re

import attrs
import pytest

from livecontext.actors.recap import (
    Recap,
    batch_runs,
    model_summary,
    pick_batch,
    simple_extract,
    steps_of,
    structured,
)
from livecontext.actors.recap._layer import Layer, range_line
from livecontext.actors.recap._strategies import _body
from livecontext.protocol.history import HistoryEntry, ModelInputEntry, ModelReply, ModelRequest, Retention, Role
from livecontext.runtime.models import FailureKind, ModelClient, ScriptedModel, TextCallback, TransientModelError

from tests.actors.recap._transcripts import (
    WHEN,
    WHO,
    Session,
    coding_session,
    edited_snippet,
    pytest_failing,
    pytest_passing,
    traceback_output,
)
from tests.support.context_world import COUNTER, RecordingModel


def fold_all(entries: list[HistoryEntry], max_chars: int, *, strategy: str = "simple_extract",
             window: int = 4, batch: int = 4) -> Recap:
    """Fold every step but the last ``window`` (CRITICAL ones aside), ``batch`` at a time."""
    pinned = [e.text for e in entries if isinstance(e, ModelInputEntry) and e.retention is Retention.CRITICAL]
    recap = Recap()
    live = list(entries)
    while batch_ := pick_batch(live, window, batch):
        if strategy == "simple_extract":
            recap = simple_extract(recap, batch_, max_chars)
        else:
            recap = structured(recap, batch_, max_chars, pinned)
        live = [e for e in live if e not in batch_]
    return recap


def fix_session() -> Session:
    """A short run: reproduce, fix the import, test, fix, test again."""
    s = Session()
    s.user("Fix make_key for floats.", retention=Retention.CRITICAL)
    s.bash("I'll reproduce it first.", "cat > /testbed/reproduce.py <<'EOF'\nfrom cache import make_key\nEOF\n"
                                        "python /testbed/reproduce.py", traceback_output())
    s.editor("The function is called normalise, not norm.", "str_replace", "src/cache.py",
             edited_snippet("src/cache.py", __import__("random").Random(1)), old_str="norm", new_str="normalise")
    s.bash("Now again.", "python /testbed/reproduce.py", "False")
    s.bash("Running the tests.", "python -m pytest tests/test_cache.py", pytest_failing())
    s.say("Should floats equal ints here? The PR says yes, so I will normalise numbers.")
    s.bash("Rerunning.", "python -m pytest tests/test_cache.py -q", pytest_passing("tests/test_cache.py"))
    s.bash("Backend check.", "python -c 'import backend'", traceback_output("-c", "src/backend.py",
                                                                             "TypeError: unhashable type: 'dict'"))
    return s


# -- simple_extract ----------------------------------------------------------------------------------


def test_simple_extract_writes_a_line_per_folded_step_naming_it_by_its_entry_id() -> None:
    s = fix_session()
    recap = simple_extract(Recap(), s.entries[1:], 2000)
    assert recap.text.splitlines() == [
        "- e2 bash: cat > /testbed/reproduce.py <<'EOF' …; python /testbed/reproduce.py → ImportError: cannot "
        "import "
        "name 'norm' from 'util' (/testbed/src/util.py) — \"I'll reproduce it first.\"",
        "- e4 str_replace_editor: str_replace src/cache.py → The file /testbed/src/cache.py has been edited. — "
        "\"The function is called normalise, not norm.\"",
        '- e6 bash: python /testbed/reproduce.py → False — "Now again."',
        "- e8 bash: python -m pytest tests/test_cache.py → 3 failed, 12 passed: AssertionError: assert 'k:1:b=2' == "
        "'k:1:b=2.0' — \"Running the tests.\"",
        "- e10 agent: Should floats equal ints here?",
        '- e11 bash: python -m pytest tests/test_cache.py -q → 15 passed — "Rerunning."',
        "- e13 bash: python -c 'import backend' → TypeError: unhashable type: 'dict' — \"Backend check.\"",
    ]


def test_simple_extract_merges_nothing_while_its_lines_fit_to_the_last_character() -> None:
    s = fix_session()
    whole = simple_extract(Recap(), s.entries[1:], 10_000).text
    assert simple_extract(Recap(), s.entries[1:], len(whole)).text == whole
    assert simple_extract(Recap(), s.entries[1:], len(whole) - 1).text.startswith("- e2–e")


def test_simple_extract_merges_the_oldest_steps_into_lines_that_still_say_what_happened() -> None:
    s = fix_session()
    recap = simple_extract(Recap(), s.entries[1:], 400)
    first, *rest = recap.text.splitlines()
    assert first == ("- e2–e8 (4 steps): 4 calls (python x2, …); edited src/cache.py, …; errors: AssertionError "
                     "(fixed at e11), …; last tests: 3 failed, 12 passed (e8)")
    assert [line.split()[1] for line in rest] == ["e10", "e11", "e13"]  # the newest, one step each
    assert len(recap.text) <= 400 and "summarised away" not in recap.text
    roomier = simple_extract(Recap(), s.entries[1:], 700).text.splitlines()
    assert roomier[0] == (
        "- e2–e4 (2 steps): 2 calls (python, str_replace); edited reproduce.py, src/cache.py; errors: ImportError in "
        "src/cache.py (fixed at e6)") and len(roomier) == 6


def test_a_simple_extract_recap_of_a_long_run_keeps_its_oldest_steps_in_what_they_did() -> None:
    recap = fold_all(coding_session(100), 2000)
    first = recap.text.splitlines()[0]
    assert first.startswith("- e2–e")
    for fact in ("pytest x", "grep x", "view x", "edited src/", "TypeError in src/backend.py (open)", "…"):
        assert fact in first, (fact, first)
    assert 1600 < len(recap.text) <= 2000
    errors = {(e.kind, e.where): e.fixed for e in Layer.load(recap.data).spans[0].errors}
    assert errors[("ImportError", "src/cache.py")] == "e14"  # (listed in the data, past what the line shows)


# -- structured --------------------------------------------------------------------------------------


def test_structured_fills_its_fields_from_the_content() -> None:
    s = fix_session()
    data = json.loads(structured(Recap(), s.entries[1:], 3000, ["Fix make_key for floats."]).text)
    assert data["task"] == "Fix make_key for floats."
    assert data["decisions"] == ["e4: The function is called normalise, not norm.", "e13: Backend check."]
    assert data["files"] == {"edited": ["reproduce.py", "src/cache.py"], "touched": ["tests/test_cache.py"]}
    assert data["identifiers"] == []
    assert data["errors"] == [
        {"error": "ImportError: cannot import name 'norm' from 'util' (/testbed/src/util.py)", "in": "src/cache.py",
         "at": "e2", "resolved": True, "fixed_at": "e6"},
        {"error": "AssertionError: assert 'k:1:b=2' == 'k:1:b=2.0'", "in": "tests/test_cache.py", "at": "e8",
         "resolved": True, "fixed_at": "e11"},
        {"error": "TypeError: unhashable type: 'dict'", "in": "src/backend.py", "at": "e13", "resolved": False},
    ]
    assert data["results"] == ["e8 pytest tests/test_cache.py: 3 failed, 12 passed",
                               "e11 pytest tests/test_cache.py: 15 passed"]
    assert data["open_questions"] == ["e10: Should floats equal ints here?"]
    assert [line.split()[0] for line in data["steps"]] == ["e2", "e4", "e6", "e8", "e10", "e11", "e13"]
    assert list(data) == ["task", "decisions", "files", "identifiers", "errors", "results", "open_questions", "steps"]


def test_structured_builds_on_its_previous_data_not_its_text() -> None:
    s = fix_session()
    first = structured(Recap(), s.entries[1:9], 3000)
    second = structured(Recap("ignored text", first.data), s.entries[9:], 3000)
    data = json.loads(second.text)
    assert [e["resolved"] for e in data["errors"]] == [True, True, False]  # e8's failure fixed in the next fold
    assert data["results"][0].startswith("e8 pytest")
    assert data["task"] == ""  # (no pinned input given, and no input folded)


def test_the_task_is_the_pinned_inputs_verbatim_or_their_first_300_characters() -> None:
    s = fix_session()
    two = structured(Recap(), s.entries[1:3], 3000, ["Do A.", "Then B."])
    assert json.loads(two.text)["task"] == "Do A.\n\nThen B."
    long = "x" * 299 + "yz"
    assert json.loads(structured(Recap(), s.entries[1:3], 3000, [long]).text)["task"] == "x" * 299 + "…"
    assert json.loads(structured(Recap(), s.entries[1:3], 3000, ["x" * 300]).text)["task"] == "x" * 300


def test_without_a_pinned_input_the_task_is_the_first_input_ever_folded() -> None:
    s = Session()
    s.user("First: fix the parser.\nIt chokes on tabs.")
    s.bash("x", "ls", "a")
    s.user("Second: and the lexer.")
    first = structured(Recap(), s.entries[:3], 2000)
    assert json.loads(first.text)["task"] == "First: fix the parser.\nIt chokes on tabs."
    second = structured(first, s.entries[3:], 2000)
    assert json.loads(second.text)["task"] == "First: fix the parser.\nIt chokes on tabs."
    assert json.loads(structured(second, [], 2000, ["Pinned wins."]).text)["task"] == "Pinned wins."


def test_structured_lets_the_oldest_items_of_its_longest_list_go_first() -> None:
    s = Session()
    for n in range(12):
        s.say(f"Decision {n} is to keep the {'very ' * 8}long name number {n}.")
    s.say("Is that wise?")
    recap = structured(Recap(), s.entries, 700)
    data = json.loads(recap.text)
    assert len(recap.text) <= 700
    kept = [int(d.split()[2]) for d in data["decisions"]]
    assert kept == list(range(12 - len(kept), 12)) and 0 < len(kept) < 12  # the newest kept
    assert data["open_questions"] == ["e13: Is that wise?"]
    assert json.loads(Layer.load(recap.data).dump())["decisions"] == data["decisions"]  # the data keeps what shows


def test_a_decision_or_question_said_again_is_kept_once_at_its_newest_step() -> None:
    s = Session()
    s.say("I'll normalise numbers. Is that right?")
    s.say("I'll keep the cache.")
    s.say("I'll normalise numbers. Is that right?")
    data = json.loads(structured(Recap(), s.entries, 2000).text)
    assert data["decisions"] == ["e2: I'll keep the cache.", "e3: I'll normalise numbers."]
    assert data["open_questions"] == ["e3: Is that right?"]


def test_structured_keeps_up_to_40_items_a_list_each_up_to_200_characters() -> None:
    s = Session()
    for n in range(45):
        s.say(f"Decision {n} is made.")
    s.say("Is " + "x" * 300 + "?")
    data = json.loads(structured(Recap(), s.entries, 100_000).text)
    assert [d.split()[2] for d in data["decisions"]] == [str(n) for n in range(5, 45)]
    assert data["open_questions"] == ["e46: …" + "x" * 193 + "…"]  # (200 characters: the question's end kept)


def test_structured_merges_its_steps_further_before_it_shortens_its_task() -> None:
    s = Session()
    for n in range(20):
        s.bash(f"Step {n}.", f"python -m pytest tests/test_{n}.py", pytest_passing(f"tests/test_{n}.py"))
    task = "t" * 300
    data = json.loads(structured(Recap(), s.entries, 700, [task]).text)
    assert data["task"] == task and len(data["steps"]) >= 1


def test_structured_range_lines_leave_the_details_to_its_fields() -> None:
    s = Session()
    for n in range(40):
        s.bash(f"Step {n}.", f"grep -rn name_{n} src/m{n}.py", "a\nb")
    recap = structured(Recap(), s.entries, 2400)
    data = json.loads(recap.text)
    span = Layer.load(recap.data).spans[0]
    assert span.steps > 1 and data["steps"][0] == range_line(span, 2)  # two files read, not four
    assert len(range_line(span, 1)) < 300 and "src/m" in data["files"]["touched"][-1]


def test_an_error_seen_again_says_how_many_times() -> None:
    s = Session()
    for _ in range(2):
        s.bash("Run.", "python reproduce.py", traceback_output())
    errors = json.loads(structured(Recap(), s.entries, 2000).text)["errors"]
    assert [(e["times"], e["at"], e["resolved"]) for e in errors] == [(2, "e1", False)]
    once = json.loads(structured(Recap(), s.entries[:2], 2000).text)["errors"]
    assert "times" not in once[0]


def test_structured_lets_nothing_go_while_its_json_fits_to_the_last_character() -> None:
    s = fix_session()
    whole = structured(Recap(), s.entries[1:], 100_000, ["Fix make_key for floats."]).text
    assert structured(Recap(), s.entries[1:], len(whole), ["Fix make_key for floats."]).text == whole
    assert structured(Recap(), s.entries[1:], len(whole) - 1, ["Fix make_key for floats."]).text != whole


def test_structured_steps_give_way_down_to_a_quarter_before_the_task_does() -> None:
    s = Session()
    s.bash("Running the tests of the cache module again.", "python -m pytest tests/test_cache.py -x -q",
           pytest_passing("tests/test_cache.py"))
    line = json.loads(structured(Recap(), s.entries, 2000).text)["steps"][0]
    assert 100 < len(line) + 4 < 400 // 3  # it fits a third, not a quarter
    data = json.loads(structured(Recap(), s.entries, 400, ["t" * 300]).text)
    assert len(json.dumps(data["steps"], ensure_ascii=False)) <= 400 // 4 + 2  # the steps: a quarter
    assert data["steps"][0].startswith("e1 bash: python -m pytest") and data["steps"][0].endswith("…")
    assert data["task"] and data["task"] == "t" * len(data["task"])  # the task: what is left


def test_structured_shortens_the_task_to_the_longest_start_that_fits() -> None:
    s = Session()
    s.bash("x", "ls", "a")
    task = 'Fix "this" — ' * 30
    for max_chars in (300, 333, 371):
        text = structured(Recap(), s.entries, max_chars, [task]).text
        data = json.loads(text)
        shown = data["task"]
        assert len(text) <= max_chars and task[:300].startswith(shown.rstrip("…")) and len(shown) < 300
        longer = dict(data, task=task[: len(shown) + 1])
        assert len(json.dumps(longer, ensure_ascii=False)) > max_chars  # one character more would not fit


@pytest.mark.parametrize("data", ["not json", '{"v": 1, "spans": 3}', '{"v": 1, "spans": [], "decisions": "x"}'])
def test_structured_starts_fresh_from_an_invalid_previous_recap(data: str) -> None:
    s = fix_session()
    recap = json.loads(structured(Recap("{broken", data), s.entries[1:3], 2000).text)
    assert [line.split()[0] for line in recap["steps"]] == ["e2"] and recap["results"] == []


# -- model_summary -----------------------------------------------------------------------------------


def inputs(*levels: tuple[str, str]) -> list[HistoryEntry]:
    """Steps of one input each, with the RECENT and GIST texts given (LIVE is RECENT)."""
    return [ModelInputEntry(id=f"e{n}", revision=1, author=WHO, created_at=WHEN, retention=Retention.COMPRESSIBLE,
                            content=COUNTER.content(recent, recent, gist), text=recent)
            for n, (recent, gist) in enumerate(levels, start=1)]


async def summarise(entries: list[HistoryEntry], *, budget: int = 2000, max_chars: int = 500,
                    previous: Recap | None = None, answers: tuple[str, ...] = ("the summary",),
                    call_index: int = 0) -> tuple[Recap, RecordingModel]:
    model = RecordingModel(ScriptedModel.from_turns([{"text": a} for a in [""] * call_index + list(answers)]))
    recap = await model_summary(previous or Recap(), entries, max_chars, model=model, counter=COUNTER, budget=budget,
                                call_index=call_index, thread_id="t")
    return recap, model


async def test_model_summary_asks_its_model_with_the_previous_recap_and_the_steps() -> None:
    s = fix_session()
    recap, model = await summarise(s.entries[1:5], previous=Recap("earlier: setup"))
    assert recap.text == "the summary"
    request = model.requests[0]
    assert request.call_index == 0 and request.tools == () and request.thread_id == "t"
    assert request.messages[0].role is Role.SYSTEM and "at most 500 characters" in request.messages[0].content
    body = request.messages[1].content
    assert body.startswith("Previous recap:\nearlier: setup\n\nSteps:\n[e2] I'll reproduce it first.\n"
                           'called bash {"command": "cat > /testbed/reproduce.py')
    assert "bash ok: Traceback (most recent call last):" in body
    assert body.index("[e2]") < body.index("[e4]")
    assert len(model.requests) == 1


async def test_model_summary_gives_the_newest_steps_at_recent_and_keeps_to_its_budget() -> None:
    entries = inputs(*[(f"detail {n} " + "words " * 30, f"gist {n}") for n in range(6)])  # 36 and 6 tokens
    _, model = await summarise(entries, budget=120)
    body = model.requests[0].messages[1].content
    assert COUNTER.count(body) <= 120
    assert "[e6] detail 5 words" in body and "[e5] detail 4 words" in body  # the newest, in detail
    assert all(f"[e{n + 1}] gist {n}" in body for n in range(4)) and "detail 3" not in body  # the older, at gist
    _, roomy = await summarise(entries, budget=2000)
    assert all(f"detail {n} words" in roomy.requests[0].messages[1].content for n in range(6))
    _, tight = await summarise(entries, budget=40)
    assert COUNTER.count(tight.requests[0].messages[1].content) <= 40


async def test_a_budget_is_used_to_its_last_token() -> None:
    entries = inputs(*[(f"detail {n} " + "words " * 30, f"gist {n}") for n in range(4)])
    _, roomy = await summarise(entries, budget=5000)
    whole = roomy.requests[0].messages[1].content
    _, exact = await summarise(entries, budget=COUNTER.count(whole))
    assert exact.requests[0].messages[1].content == whole
    _, short = await summarise(entries, budget=COUNTER.count(whole) - 1)
    assert "[e1] gist 0" in short.requests[0].messages[1].content


async def test_once_a_step_is_given_at_its_gist_every_older_step_is_too() -> None:
    entries = inputs(("older, short and detailed", "older gist"), ("big " * 200, "big gist"), ("newest", "newest gist"))
    _, model = await summarise(entries, budget=80)
    body = model.requests[0].messages[1].content
    assert "[e3] newest\n" in body + "\n" and "[e2] big gist" in body
    assert "[e1] older gist" in body
    assert "older, short and detailed" not in body  # it would fit, but older ones get gists


async def test_steps_that_do_not_fit_even_at_their_gist_are_given_merged_not_dropped() -> None:
    entries = inputs(("tiny", "tiny"), ("huge " * 300, "huge " * 200), ("newest step", "newest gist"))
    _, model = await summarise(entries, budget=120)
    body = model.requests[0].messages[1].content
    assert COUNTER.count(body) <= 120
    merged = body.split("Earlier steps, merged:\n")[1].split("\n\nSteps:")[0]
    assert merged.splitlines()[0] == "- e1 user: tiny"  # small, but older than a misfit: merged with it
    assert merged.splitlines()[1].startswith("- e2 user: huge huge")
    assert "[e1]" not in body and "[e2]" not in body and "[e3] newest step" in body


def given_and_merged(body: str) -> tuple[list[int], list[int]]:
    """The steps a prompt gives as they are, and those its range lines stand for."""
    given = [int(m) for m in re.findall(r"^\[e(\d+)\]", body, re.M)]
    merged: list[int] = []
    if "Earlier steps, merged:\n" in body:
        for line in body.split("Earlier steps, merged:\n")[1].split("\n\nSteps:")[0].splitlines():
            first, _, last = line.split()[1].partition("–")
            merged += range(int(first[1:]), int((last or first)[1:]) + 1)
    return given, merged


async def test_merged_lines_make_room_for_themselves_and_shrink_when_nothing_else_is_left() -> None:
    entries = inputs(*[(f"step {n} " + "words " * 40, f"gist {n} " + "words " * 40) for n in range(30)])
    for budget in (150, 300, 600):
        _, model = await summarise(entries, budget=budget, max_chars=2000)
        body = model.requests[0].messages[1].content
        assert COUNTER.count(body) <= budget
        given, merged = given_and_merged(body)
        assert merged + given == list(range(1, 31))  # every step once: the older merged, the newer given
        assert given and merged


async def test_merged_lines_shrink_at_worst_to_the_ids_of_their_steps() -> None:
    entries = inputs(("huge " * 300, "huge " * 200), ("newest step", "newest gist"))
    tight = COUNTER.count("Earlier steps, merged:\n- e1 (1 step)\n\nSteps:\n[e2] newest step")
    _, model = await summarise(entries, budget=tight)
    assert model.requests[0].messages[1].content == "Earlier steps, merged:\n- e1 (1 step)\n\nSteps:\n[e2] newest step"
    _, roomy = await summarise(entries, budget=tight + 60)
    assert "- e1 user: huge huge" in roomy.requests[0].messages[1].content


async def test_the_shortest_merged_line_names_its_steps_by_their_first_entries() -> None:
    s = fix_session()
    _, one = await summarise(s.entries[1:3], budget=1, previous=Recap("old"))  # (nothing fits: all merged)
    assert one.requests[0].messages[1].content == "Previous recap:\nold\n\nEarlier steps, merged:\n- e2 (1 step)\n\nSteps:\n"
    _, three = await summarise(s.entries[1:7], budget=1, previous=Recap("old"))
    assert "Earlier steps, merged:\n- e2–e6 (3 steps)\n" in three.requests[0].messages[1].content


async def test_a_previous_recap_over_the_budget_is_sent_anyway_with_the_steps_merged() -> None:
    entries = inputs(*[(f"step {n} " + "words " * 40, f"gist {n}") for n in range(5)])
    _, model = await summarise(entries, budget=50, previous=Recap("old recap " * 100))
    body = model.requests[0].messages[1].content
    assert body.startswith("Previous recap:\nold recap old recap")
    assert given_and_merged(body) == ([], [1, 2, 3, 4, 5])
    assert "- e1–e5 (5 steps)" in body


async def test_an_overlong_summary_is_shortened_by_the_model_never_dropped() -> None:
    long = "The agent fixed the import. " * 40
    recap, model = await summarise(fix_session().entries[1:5], max_chars=300,
                                   answers=(long, "Fixed the import; tests pass."))
    assert recap.text == "Fixed the import; tests pass."
    ask = model.requests[1]
    assert ask.call_index == 1 and ask.tools == ()
    length = len(long.strip())
    assert ask.messages[0].content.startswith(f"Shorten this summary to at most 300 characters (it has {length})")
    assert ask.messages[0].content.endswith(long.strip())
    assert Layer.load(recap.data).model_calls == 2


async def test_an_answer_of_exactly_the_limit_is_taken_as_it_is() -> None:
    answer = ("A sentence. " * 30)[:299] + "."
    recap, model = await summarise(fix_session().entries[1:5], max_chars=300, answers=(answer,))
    assert len(answer) == 300 and recap.text == answer and len(model.requests) == 1


async def test_a_shortened_answer_longer_than_the_first_is_not_taken() -> None:
    first = "Short sentence one. " * 20
    recap, model = await summarise(fix_session().entries[1:5], max_chars=300,
                                   answers=(first, "A longer answer, not a shorter one. " * 20))
    assert len(model.requests) == 2 and recap.text == first.strip()[: len(recap.text)]


async def test_a_summary_still_too_long_is_cut_at_its_last_sentence_within_the_limit() -> None:
    first = "One. " + "Two words here. " * 30
    recap, _ = await summarise(fix_session().entries[1:5], max_chars=300, answers=(first, first + "More."))
    assert recap.text == first.strip()[: len(recap.text)] and recap.text.endswith("here.") and len(recap.text) <= 300
    assert len(recap.text) > 300 - len("Two words here. ")


class FailsSecondCall(ModelClient):
    name = "fails-second"

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        if len(self.requests) > 1:
            raise TransientModelError(FailureKind("server"), "down")
        return ModelReply(text=self.answer)


async def test_a_failing_shortening_call_still_keeps_the_first_answer_cut() -> None:
    answer = "Line one of the summary.\n" * 30
    model = FailsSecondCall(answer)
    recap = await model_summary(Recap(), fix_session().entries[1:5], 300, model=model, counter=COUNTER, budget=2000,
                                call_index=5, thread_id="t")
    assert recap.text.startswith("Line one of the summary.") and len(recap.text) <= 300 and recap.text.endswith(".")
    assert [r.call_index for r in model.requests] == [5, 6] and Layer.load(recap.data).model_calls == 7


async def test_a_blank_summary_gives_way_to_the_lines_of_the_steps() -> None:
    s = fix_session()
    recap, model = await summarise(s.entries[1:5], answers=("   ",), call_index=3)
    assert recap.text == simple_extract(Recap(), s.entries[1:5], 500).text
    assert len(model.requests) == 1 and Layer.load(recap.data).model_calls == 4


async def test_model_summary_data_keeps_the_steps_for_the_next_fold() -> None:
    s = fix_session()
    recap, _ = await summarise(s.entries[1:9], answers=("first",), max_chars=2000)
    again, _ = await summarise(s.entries[9:], previous=recap, answers=("second",), call_index=1, max_chars=2000)
    layer = Layer.load(again.data)
    assert [sp.first for sp in layer.spans] == ["e2", "e4", "e6", "e8", "e10", "e11", "e13"]
    assert layer.model_calls == 2
    assert simple_extract(again, [], 2000).text.startswith("- e2 bash: cat > /testbed/reproduce.py")


def test_the_prompt_body_names_its_parts() -> None:
    assert _body("", "", ["[e1] x"]) == "Steps:\n[e1] x"
    assert _body("old", "- e1 x", ["[e2] y", "[e3] z"]) == \
        "Previous recap:\nold\n\nEarlier steps, merged:\n- e1 x\n\nSteps:\n[e2] y\n\n[e3] z"


# -- the batch -------------------------------------------------------------------------------------


def results_step(s: Session, text: str, retention: Retention) -> None:
    s.act(text, ("bash", {"command": "ls"}, "a", True), retention=retention)


def test_a_batch_is_the_oldest_steps_outside_the_window_never_split_never_critical() -> None:
    s = Session()
    for n in range(6):
        s.user(f"s{n}")
        results_step(s, f"do {n}", Retention.COMPRESSIBLE)
    entries = s.entries
    assert len(steps_of(entries)) == 12  # an input; an output with its results
    assert [e.id for e in pick_batch(entries, window=4, batch=3)] == ["e1", "e2", "e3", "e4"]
    assert pick_batch(entries, window=12, batch=3) == []
    critical = Session()
    critical.n = 100
    critical.user("keep", retention=Retention.CRITICAL)
    assert [e.id for e in pick_batch([*entries[:3], *critical.entries, *entries[3:]], window=2, batch=10)] == \
        ["e1", "e2", "e3"]  # stops before a CRITICAL step
    assert [e.id for e in pick_batch([*critical.entries, *entries], window=10, batch=1)] == ["e1"]  # starts after it
    assert [e.id for e in pick_batch(entries, window=0, batch=99)][-1] == entries[-3].id  # one step always stays


def batch_session(kinds: str) -> list[HistoryEntry]:
    """Steps of one input each: ``c`` COMPRESSIBLE, ``b`` BATCH_COMPRESSIBLE, ``!`` CRITICAL."""
    s = Session()
    for k in kinds:
        s.user(k, retention={"c": Retention.COMPRESSIBLE, "b": Retention.BATCH_COMPRESSIBLE,
                             "!": Retention.CRITICAL}[k])
    return s.entries


@pytest.mark.parametrize(("kinds", "window", "batch", "folded"), [
    ("cbbbbcccc", 2, 2, "e1 e2 e3 e4 e5"),  # reaching into a run takes it whole, past the batch
    ("bbbcccc", 2, 1, "e1 e2 e3"),
    ("ccbbbbbc", 2, 2, "e1 e2"),  # the run does not start within the batch: untouched
    ("cbbbbbc", 3, 3, "e1"),  # the run reaches into the window: the batch stops before it
    ("bbbbbcc", 3, 3, ""),  # nothing before it: nothing to fold now
    ("bb!bbcc", 2, 9, "e1 e2"),  # a CRITICAL step ends a run, and the batch
    ("bbcbbcc", 1, 3, "e1 e2 e3"),
    ("bbcbbcc", 1, 4, "e1 e2 e3 e4 e5"),  # two runs, each whole
    ("ccccc", 1, 2, "e1 e2"),
])
def test_a_run_of_batch_compressible_entries_is_folded_whole_or_not_at_all(
        kinds: str, window: int, batch: int, folded: str) -> None:
    assert " ".join(e.id for e in pick_batch(batch_session(kinds), window, batch)) == folded


def test_runs_are_numbered_from_0_leaving_out_recaps_and_folded_entries() -> None:
    entries = batch_session("cbbcbb!b")
    folded = attrs.evolve(batch_session("b")[0], id="e99", folded=True)
    assert batch_runs(entries) == {"e2": 0, "e3": 0, "e5": 1, "e6": 1, "e8": 2}
    assert batch_runs([*entries[:2], folded, *entries[2:4]]) == {"e2": 0, "e3": 0}  # (e99 is no entry of a run)
    assert batch_runs([entries[1], folded, entries[2]]) == {"e2": 0, "e3": 0}  # nor does it end one


def test_a_run_spanning_an_output_and_its_results_is_folded_with_both() -> None:
    s = Session()
    s.user("go")
    results_step(s, "one", Retention.BATCH_COMPRESSIBLE)
    results_step(s, "two", Retention.BATCH_COMPRESSIBLE)
    s.user("end")
    s.user("newest")
    assert [e.id for e in pick_batch(s.entries, window=2, batch=1)] == ["e1"]
    assert [e.id for e in pick_batch(s.entries[1:], window=2, batch=1)] == ["e2", "e3", "e4", "e5"]

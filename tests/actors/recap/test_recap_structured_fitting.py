"""How ``structured`` fits ``max_chars`` (which item goes first, how much room the steps take),
and how it keeps a decision said again.

The order (``_structured``'s module doc): the steps take what the fields leave, at least a
third; then the oldest item of the longest list goes (errors: the fixed ones first); then the
steps merge down to a quarter; then the task is shortened.
"""

from __future__ import annotations

import json
from typing import Any

from livecontext.actors.recap import Recap, structured
from livecontext.protocol.history import HistoryEntry

from tests.actors.recap._transcripts import Session, pytest_passing, traceback_output


def runs_of_tests(count: int) -> Session:
    """``count`` steps, each running one module's tests (they pass)."""
    s = Session()
    for n in range(count):
        s.bash(f"Running the tests of module {n} again.", f"python -m pytest tests/test_m{n}.py -x -q",
               pytest_passing(f"tests/test_m{n}.py"))
    return s


def first_loss(entries: list[HistoryEntry], keys: tuple[str, ...]) -> dict[str, Any]:
    """The recap at the largest ``max_chars`` where the lists under ``keys`` lose an item."""
    text = structured(Recap(), entries, 100_000).text
    whole = json.loads(text)
    for max_chars in range(len(text), 100, -1):
        data: dict[str, Any] = json.loads(structured(Recap(), entries, max_chars).text)
        if any(len(data[k]) < len(whole[k]) for k in keys):
            return data
    raise AssertionError("nothing was dropped")


def test_the_fixed_errors_go_oldest_first_and_before_the_open_ones() -> None:
    s = Session()
    for name, error in (("a", "ValueError: bad a"), ("b", "KeyError: bad b")):
        s.bash(f"Run {name}.", f"python {name}.py", traceback_output(f"{name}.py", f"src/{name}.py", error))
        s.bash("Again.", f"python {name}.py", "ok")  # (the rerun fixes it)
    s.bash("Run c.", "python c.py", traceback_output("c.py", "src/c.py", "TypeError: bad c"))
    whole = json.loads(structured(Recap(), s.entries, 100_000).text)
    assert [(e["error"], e["resolved"]) for e in whole["errors"]] == [
        ("ValueError: bad a", True), ("KeyError: bad b", True), ("TypeError: bad c", False)]
    data = first_loss(s.entries, ("errors",))
    assert [e["error"] for e in data["errors"]] == ["KeyError: bad b", "TypeError: bad c"]


def test_the_longest_list_is_measured_as_shown_a_non_ascii_character_counting_once() -> None:
    s = Session()
    s.say("Été à côté, élèves âgés, déjà réécrit: gardé.")  # (shorter as shown; longer with \\u escapes)
    s.say("Is the float case meant to compare equal to the int case in this module?")
    data = first_loss(s.entries, ("decisions", "open_questions"))
    assert data["decisions"] == ["e1: Été à côté, élèves âgés, déjà réécrit: gardé."]
    assert data["open_questions"] == []


def test_no_item_goes_while_merging_the_steps_down_to_a_third_makes_room_for_it() -> None:
    s = runs_of_tests(3)
    whole = json.loads(structured(Recap(), s.entries, 100_000, ["t" * 100]).text)
    assert whole["files"]["touched"] == ["tests/test_m0.py", "tests/test_m1.py", "tests/test_m2.py"]
    text = structured(Recap(), s.entries, 300, ["t" * 100]).text
    data = json.loads(text)
    assert len(text) <= 300 and data["task"] == "t" * 100
    assert data["steps"] == ["e1–e5 (3 steps): 3 calls"]  # merged to fit a third (100 characters)
    assert data["files"]["touched"] == ["tests/test_m2.py"]  # the newest file kept beside them


def test_once_the_lists_are_empty_the_steps_take_the_room_the_task_leaves_if_more_than_a_quarter() -> None:
    s = runs_of_tests(3)
    text = structured(Recap(), s.entries, 470, ["t" * 200]).text
    data = json.loads(text)
    assert data["task"] == "t" * 200 and data["files"] == {"edited": [], "touched": []}
    room = 470 - (len(text) - len(json.dumps(data["steps"], ensure_ascii=False)) + 2)  # what the rest leaves
    assert room > 470 // 4
    # the last line is cut to that room, not to a quarter
    assert data["steps"] == ["e1–e3 (2 steps): 2 calls", "e5 bash: python -m pytest tests/test_m2.py -x -q → 15 passe…"]


def test_a_decision_holding_a_colon_said_again_is_kept_once_at_its_newest_step() -> None:
    s = Session()
    s.say("Plan: keep the cache key as it is.")
    s.say("Plan: keep the cache key as it is.")
    data = json.loads(structured(Recap(), s.entries, 2000).text)
    assert data["decisions"] == ["e2: Plan: keep the cache key as it is."]

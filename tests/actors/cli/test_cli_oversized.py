"""``livecontext run`` with an input too large for the context: sent cut and said in one
line, or, pinned, refused in one line naming both sizes (``--cut-oversized`` takes it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from livecontext.actors.cli import main

WORDS_900 = "word " * 900
WORDS_20000 = "word " * 20000
CUT_LINE = r"^input e1 did not fit the context whole: sent cut to its head and tail \([\d,]+ of its {whole} tokens\)$"



def head_and_tail(sent: str) -> bool:
    """Whether ``sent`` is the input's head and tail around the line saying how much was left
    out between them."""
    return re.fullmatch(r"word [a-z ]+…\n… \[[\d,]+ chars elided\] …\n…[a-z ]+ word ", sent) is not None

def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None, "COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def input_sent(store: str) -> tuple[str, str]:
    """The input as the first model call was sent it (the apps' windows apart), and its level:
    ``render --at 3`` rebuilds that call's context (records 1-2 configure the thread, 3 is
    the input)."""
    code, out, _ = invoke("render", "--store", store, "--thread", "main", "--at", "3")
    assert code == 0
    rendered = json.loads(out)
    said = [m["content"] for m in rendered["messages"] if m["role"] == "user" and m["content"].startswith("word")]
    return said[-1].split("\n\n[Window: ", 1)[0], rendered["entries"][-1]["level"]


def test_an_input_too_large_for_the_budget_is_sent_cut_and_the_run_says_so_in_one_line(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path}/store.db"
    code, out, _ = invoke("run", "--store", store, "--budget", "1000", "--no-pin-task", "--input", WORDS_900)
    assert code == 0
    assert re.match(CUT_LINE.format(whole="901"), out.strip().splitlines()[-1])
    sent, level = input_sent(store)
    assert head_and_tail(sent) and level == "recent"


def test_a_20000_word_input_under_the_default_budget_is_sent_cut_not_as_its_gist(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path}/store.db"
    code, out, _ = invoke("run", "--store", store, "--no-pin-task", "--input", WORDS_20000, "--json")
    assert code == 0
    ran = json.loads(out)
    assert len(ran["cut"]) == 1 and re.match(CUT_LINE.format(whole="20,001"), ran["cut"][0])
    sent, level = input_sent(store)
    assert head_and_tail(sent) and len(sent) > 2000 and level == "recent"  # far more than a one-line gist


def test_a_task_larger_than_the_budget_is_refused_naming_both_sizes_and_nothing_is_recorded(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path}/store.db"
    code, out, err = invoke("run", "--store", store, "--budget", "1000", "--input", WORDS_900)
    assert code == 1 and out == ""
    assert err.strip() == (
        "livecontext: error: the pinned input is 905 tokens, more than the 324 a model call has room for "
        "(budget 1,000 minus 676 for the system prompt and the tools); nothing was recorded; shorten it, raise "
        "the budget, or have it sent cut to its head and tail (--cut-oversized; in Python cut_oversized=True)")
    code, out, _ = invoke("history", "--store", store, "--thread", "main", "--json")
    assert code == 0 and json.loads(out)["entries"] == []


def test_a_pinned_input_larger_than_the_budget_is_taken_cut_with_cut_oversized(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path}/store.db"
    code, out, _ = invoke("run", "--store", store, "--budget", "1000", "--cut-oversized", "--pin", WORDS_900, "--json")
    assert code == 0
    ran = json.loads(out)
    assert ran["entries"][0]["retention"] == "critical" and ran["entries"][0]["levels"]["live"] == WORDS_900
    assert len(ran["cut"]) == 1 and re.match(CUT_LINE.format(whole="901"), ran["cut"][0])
    sent, level = input_sent(store)
    assert head_and_tail(sent) and level == "recent"


def test_a_run_whose_inputs_fit_prints_no_cut_line() -> None:
    code, out, _ = invoke("run", "--store", "memory:", "--input", "a short task", "--json")
    assert code == 0 and json.loads(out)["cut"] == []

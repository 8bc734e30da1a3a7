"""What a folded step did, read from realistic agent output: commands, files, errors, tests."""

from __future__ import annotations

import json
import random

import pytest

from livecontext.actors.history._text import cut_at_boundary, error_place, first_sentence, questions
from livecontext.actors.recap._facts import (
    call_facts,
    error_kind,
    facts_of,
    is_decision,
    short_path,
    step_line,
    steps_of,
)
from livecontext.actors.recap._shell import looks_like_path, parse_command, reruns
from livecontext.protocol.history import RecapEntry, Retention, ToolCall, ToolResult, ToolStatus

from tests.actors.recap._transcripts import (
    Session,
    cat_n,
    collection_error,
    edited_snippet,
    pytest_failing,
    pytest_passing,
    traceback_output,
)
from tests.support.context_world import COUNTER

# -- what text says --------------------------------------------------------------------------------


def test_a_first_sentence_ends_at_its_full_stop_and_a_sentence_without_one_is_taken_whole() -> None:
    text = "\n\nThe import fails: util has no norm. Let me check."
    assert first_sentence(text) == "The import fails: util has no norm."
    assert first_sentence("Let me look at src/a.py first") == "Let me look at src/a.py first"
    assert first_sentence('He said "stop!" Then left.') == 'He said "stop!"'
    assert first_sentence("x" * 300, limit=20) == "x" * 19 + "…"
    assert first_sentence("=====\n\n") == ""


def test_questions_are_the_sentences_that_ask_outside_code_blocks() -> None:
    text = ("Is the float case meant to compare equal? The PR says so.\n"
            "```python\nassert x?\n```\n"
            "- Should dicts be allowed as key parts?\n"
            "Is the float case meant to compare equal?")
    assert questions(text) == ["Is the float case meant to compare equal?", "Should dicts be allowed as key parts?"]
    assert questions("Why " + "very " * 60 + "long?", limit=30) == ["…" + ("very " * 60 + "long?")[-29:]]
    assert questions("No question here. Really.") == []


def test_an_error_points_at_the_innermost_frame_before_it() -> None:
    assert error_place(traceback_output()) == "/testbed/src/cache.py"
    assert error_place(pytest_failing("tests/test_cache.py")) == "tests/test_cache.py"
    assert error_place(collection_error("tests/test_util.py")) == "tests/test_util.py"
    assert error_place("a.c:3:5: error: expected ';'") == "a.c"
    # pytest prints the place after the assertion when no frame came before it
    assert error_place("E   AssertionError: boom\n\ntests/test_x.py:9: AssertionError") == "tests/test_x.py"
    assert error_place("all good\n3 passed") == ""


@pytest.mark.parametrize(("limit", "cut"), [
    (59, "The key ignored kwargs order. It is sorted now. Tests pass."),
    (50, "The key ignored kwargs order. It is sorted now."),
    (30, "The key ignored kwargs order."),
    (20, "The key ignored…"),
    (5, "The…"),
    (1, "…"),
])
def test_a_text_is_cut_at_the_last_sentence_end_else_word_within_the_limit(limit: int, cut: str) -> None:
    text = "The key ignored kwargs order. It is sorted now. Tests pass."
    assert cut_at_boundary(text, limit) == cut
    assert len(cut_at_boundary(text, limit)) <= limit


def test_a_sentence_ends_after_its_closing_quote() -> None:
    assert cut_at_boundary('He said "stop." Then he left the room.', 20) == 'He said "stop."'
    assert cut_at_boundary('He said "stop." Then', 15) == 'He said "stop."'


def test_a_text_without_sentences_is_cut_at_a_line_end() -> None:
    assert cut_at_boundary("- e1 read a.py\n- e2 edited a.py\n- e3 ran tests", 31) == "- e1 read a.py\n- e2 edited a.py"
    assert cut_at_boundary("- e1 read a.py\n- e2 edited a.py\n- e3 ran tests", 30) == "- e1 read a.py"
    assert cut_at_boundary("fits", 4) == "fits"
    assert cut_at_boundary("abcdefgh", 5) == "abcd…"


# -- what a command does -------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "program"), [
    ("cd /testbed && python -m pytest tests/test_cache.py -x -q 2>&1 | tail -40", "pytest"),
    ("FOO=1 sudo -E timeout 60 pytest -k 'a and b' tests/", "pytest"),
    ('grep -rn "def make_key" src/', "grep"),
    ("cat > reproduce.py <<'EOF'\nprint(1)\nEOF\npython reproduce.py", "python"),
    ("sed -i 's/a/b/' src/a.py", "sed"),
    ("git diff src/cache.py", "git diff"),
    ("pip install -e .", "pip install"),
    ("python -c 'import a'", "python -c"),
    ("bash -lc 'cd /testbed && pytest tests/a.py'", "pytest"),
    ("uv run pytest", "pytest"),
    ("npx jest src/a.test.js", "jest"),
    ("python tests/runtests.py admin_views -v 2", "runtests.py"),
    ("./manage.py test app", "manage.py test"),
    ("export X=1; source venv/bin/activate", "export"),
    ("sudo python -m pytest", "pytest"),
    ("sudo -u bob pytest -x", "pytest"),
    ("time make test", "make test"),
    ("uv venv .venv", "uv venv"),
    ("uv pip install -e .", "uv pip"),
    ("npx", "npx"),
    ("python manage.py migrate", "manage.py"),
    ("python - <<'EOF'\nprint(1)\nEOF", "python"),
    ("sudo -u", ""),
    ("env -u", ""),
    ("echo hi >", "echo"),
    ("sed -i s/a/b/ a.py; echo x > b.txt", "sed"),  # every part writes: the first
])
def test_a_command_runs_its_first_program_that_does_something(command: str, program: str) -> None:
    assert parse_command(command).program == program


def test_a_command_names_the_files_it_reads_and_writes() -> None:
    c = parse_command("cd /testbed && cat -n src/cache.py | head -50")
    assert (c.reads, c.writes) == (("src/cache.py",), ())
    c = parse_command("sed -i 's/sorted(kwargs)/sorted(kwargs.items())/' src/cache.py src/keys.py")
    assert (c.reads, c.writes) == ((), ("src/cache.py", "src/keys.py"))
    c = parse_command("sed -n '1,80p' src/cache.py")
    assert (c.reads, c.writes) == (("src/cache.py",), ())
    c = parse_command("echo 'x = 1' >> src/cache.py && cat src/cache.py 2>/dev/null")
    assert (c.reads, c.writes) == ((), ("src/cache.py",))  # (written, so not merely read)
    c = parse_command("python reproduce.py | tee out.log")
    assert (c.reads, c.writes) == (("reproduce.py",), ("out.log",))
    c = parse_command("cp src/a.py /tmp/a.py.bak && mv src/b.py src/c.py && rm -f build/x.o")
    assert c.reads == ("src/a.py", "src/b.py") and c.writes == ("/tmp/a.py.bak", "src/c.py", "build/x.o")
    c = parse_command("cp src/a.py src/b.py backup/")
    assert c.reads == ("src/a.py", "src/b.py") and c.writes == ("backup/",)
    c = parse_command("git checkout -- src/a.py")
    assert c.writes == ("src/a.py",)


def test_here_documents_are_data_and_say_what_they_write() -> None:
    heredoc = "cat > /testbed/reproduce.py <<'EOF'\nprint('it's \"unbalanced)\nEOF\npython /testbed/reproduce.py"
    c = parse_command(heredoc)
    assert c.writes == ("/testbed/reproduce.py",)
    assert c.shown == "cat > /testbed/reproduce.py <<'EOF' …; python /testbed/reproduce.py"
    patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n" \
            "*** Add File: src/b.py\n+z\n" \
            "*** Delete File: src/c.py\n*** End Patch\nPATCH"
    assert parse_command(patch).writes == ("src/a.py", "src/b.py", "src/c.py")
    python = "python - <<'EOF'\nfrom pathlib import Path\nopen('src/a.py', 'w').write('x')\n" \
             "Path('src/b.py').write_text('y')\nEOF"
    assert parse_command(python).writes == ("src/a.py", "src/b.py")
    piped = "cat <<'EOF' | apply_patch\n*** Begin Patch\n*** Add File: src/new.py\n+x\n*** End Patch\nEOF"
    assert parse_command(piped).writes == ("src/new.py",)
    indented = "cat <<-END > notes.txt\n\tline\n\tEND\nls"
    assert parse_command(indented).writes == ("notes.txt",)
    assert parse_command(indented).shown == "cat <<-END > notes.txt …; ls"


def test_searches_keep_their_pattern_apart_from_paths() -> None:
    c = parse_command('grep -rn -A 3 "self.assertEqual" tests/ src/util.py')
    assert c.searched == ("self.assertEqual",) and c.reads == ("tests/", "src/util.py")
    c = parse_command("grep -rn src/ -e make_key")
    assert c.searched == ("make_key",) and c.reads == ("src/",)
    c = parse_command("grep -e make_key -e norm src/")
    assert c.searched == ("make_key", "norm") and c.reads == ("src/",)
    c = parse_command("find . -name '*.py' -path '*cache*'")
    assert c.searched == ("*.py", "*cache*") and c.reads == ()
    c = parse_command("awk '{print $1}' data/file.csv")
    assert c.reads == ("data/file.csv",) and c.searched == ()


def test_a_test_run_names_its_targets_and_a_rerun_of_them_or_of_more_repeats_it() -> None:
    one = parse_command("python -m pytest tests/test_a.py::test_x -x")
    assert one.tests == ("tests/test_a.py",) and one.rerun_keys == ("test pytest tests/test_a.py",)
    everything = parse_command("cd /testbed && pytest -q")
    assert everything.tests == ()
    assert parse_command("python test_cache.py").tests == ("test_cache.py",)
    assert parse_command("grep x a.py").tests is None
    assert reruns("test pytest tests/test_a.py", "test pytest tests/test_a.py")
    assert reruns("test pytest", "test pytest tests/test_a.py")  # all of them
    assert reruns("test pytest tests/test_a.py tests/test_b.py", "test pytest tests/test_a.py")  # more
    assert not reruns("test pytest tests/test_b.py", "test pytest tests/test_a.py")
    assert not reruns("test pytest tests/test_a.py", "test pytest")  # fewer than before
    assert reruns("test pytest tests", "test pytest tests/test_a.py tests/unit/test_b.py")  # a directory holding them
    assert reruns("test pytest tests/", "test pytest tests")
    assert not reruns("test pytest tests/unit", "test pytest tests/test_a.py tests/unit/test_b.py")
    assert not reruns("test pytest test", "test pytest tests/test_a.py")
    assert not reruns("test tox", "test pytest")
    assert not reruns("run python b.py", "run python a.py") and reruns("run python a.py", "run python a.py")
    assert not reruns("run pytest", "test pytest")


def test_only_parts_that_run_something_without_writing_are_rerun_keys() -> None:
    c = parse_command("cat > a.py <<'EOF'\nx\nEOF\npython a.py 2>&1 | tail -5")
    assert c.rerun_keys == ("run python a.py",)  # the write and the end of the pipe are no rerun
    assert parse_command("sed -i s/a/b/ x.py").rerun_keys == ()
    assert parse_command("cd /testbed && ls").rerun_keys == ("run ls",)


@pytest.mark.parametrize(("word", "path"), [
    ("src/a.py", True), ("a.py", True), ("tests/", True), ("/testbed", True), ("Makefile", False),
    ("3.11", False), ("*.py", False), ("https://x.org/a.py", False), ("-v", False), (".", False),
    ("/dev/null", False), ("a and b", False), ("", False), ("a/" * 100, True), ("a/" * 101, False),
])
def test_what_looks_like_a_path(word: str, path: bool) -> None:
    assert looks_like_path(word) is path


def test_shown_commands_leave_out_set_ups_and_noise() -> None:
    noisy = "cd /testbed && python -m pytest tests -x 2>&1 | tail -n 40"
    assert parse_command(noisy).shown == "python -m pytest tests -x"
    assert parse_command("pytest \\\n  -x tests").shown == "pytest -x tests"
    assert parse_command("cd /a\nls").shown == "ls"


# -- what a call did -------------------------------------------------------------------------------


def result(text: str, ok: bool = True, name: str = "bash") -> ToolResult:
    status = ToolStatus.OK if ok else ToolStatus.FAILED
    return ToolResult("c1", name, status, COUNTER.content(text, text, text[:40]))


def bash(command: str) -> ToolCall:
    return ToolCall("c1", "bash", json.dumps({"command": command}))


def test_a_failing_pytest_run_reports_its_outcome_and_its_error() -> None:
    facts = call_facts(bash("cd /testbed && python -m pytest tests/test_cache.py -x"), result(pytest_failing()))
    assert facts.action == "pytest" and facts.test == "3 failed, 12 passed" and facts.target == "tests/test_cache.py"
    assert facts.outcome == "3 failed, 12 passed: AssertionError: assert 'k:1:b=2' == 'k:1:b=2.0'"
    assert facts.error is not None
    assert (facts.error.kind, facts.error.where) == ("AssertionError", "tests/test_cache.py")
    passing = call_facts(bash("pytest tests"), result(pytest_passing()))
    assert (passing.outcome, passing.error, passing.test) == ("15 passed", None, "15 passed")


def test_a_traceback_is_an_error_in_the_file_it_ends_in() -> None:
    facts = call_facts(bash("python /testbed/reproduce.py"), result(traceback_output()))
    assert facts.error is not None and facts.error.kind == "ImportError" and facts.error.where == "src/cache.py"
    assert facts.outcome.startswith("ImportError: cannot import name 'norm'")
    assert facts.reads == ("reproduce.py",)  # (the workspace root left out)


def test_a_view_of_a_file_holding_errors_reports_no_error() -> None:
    log = traceback_output()
    assert call_facts(bash("cat /testbed/build.log"), result(log)).error is None
    assert call_facts(bash("cat /testbed/build.log"), result(log)).outcome == "6 lines"
    missing = call_facts(bash("cat nothere.py"), result("cat: nothere.py: No such file or directory"))
    assert missing.error is not None and missing.outcome == "cat: nothere.py: No such file or directory"
    failed = call_facts(bash("grep -rn x src"), result("", ok=False))
    assert failed.error is not None and failed.outcome == "failed: failed"


def test_an_editor_call_is_its_command_on_its_path() -> None:
    rng = random.Random(1)
    view = call_facts(ToolCall("c1", "str_replace_editor",
                               json.dumps({"command": "view", "path": "/testbed/src/a.py"})),
                      result(cat_n("src/a.py", 50, rng), name="str_replace_editor"))
    assert (view.action, view.shown, view.reads, view.writes, view.outcome) == \
        ("view", "view src/a.py", ("src/a.py",), (), "50 lines")
    edit = call_facts(ToolCall("c1", "str_replace_editor", json.dumps(
        {"command": "str_replace", "path": "/testbed/src/a.py", "old_str": "a", "new_str": "b"})),
        result(edited_snippet("src/a.py", rng), name="str_replace_editor"))
    assert (edit.action, edit.writes, edit.outcome) == ("str_replace", ("src/a.py",),
                                                        "The file /testbed/src/a.py has been edited.")


def test_other_tools_are_named_with_their_paths_patches_and_searches() -> None:
    patch = ToolCall("c1", "apply_patch", json.dumps({"input": "*** Begin Patch\n*** Update File: src/a.py\n"
                                                               "@@\n-x\n+y\n"
                                                               "*** End Patch"}))
    facts = call_facts(patch, result("Done!", name="apply_patch"))
    assert (facts.action, facts.shown, facts.writes) == ("apply_patch", "patch src/a.py", ("src/a.py",))
    diff = ToolCall("c1", "apply_diff", json.dumps({"diff": "--- a/src/b.py\n+++ b/src/b.py\n@@\n-x\n+y"}))
    assert call_facts(diff, result("ok")).writes == ("src/b.py",)
    write = ToolCall("c1", "write_file", json.dumps({"path": "notes/todo.md", "content": "x"}))
    assert call_facts(write, result("written")).writes == ("notes/todo.md",)
    named = ToolCall("c1", "edit_file", json.dumps({"target_file": "Makefile", "paths": ["a.py", "not a path"]}))
    assert call_facts(named, result("ok")).writes == ("Makefile", "a.py")  # (a list of paths: only what looks like one)
    read = ToolCall("c1", "read_file", json.dumps({"file_path": "/testbed/README.md"}))
    assert call_facts(read, result("# Readme\ntext")).reads == ("README.md",)
    read_log = call_facts(read, result("x = 1\nValueError: in the file, not from the call"))
    assert (read_log.outcome, read_log.error) == ("2 lines", None)  # a reading tool shows content
    search = ToolCall("c1", "search_dir", json.dumps({"search_term": "make_key", "dir": "src"}))
    found = call_facts(search, result("3 matches"))
    assert found.searched == ("make_key",) and found.reads == ("src",) and found.shown.startswith('{"search_term"')
    plain = call_facts(ToolCall("c1", "notebook_read", "{}"), result("the notes"))
    assert (plain.shown, plain.outcome) == ("", "the notes")
    assert call_facts(ToolCall("c1", "odd", "not json"), None).outcome == "no result"


def test_a_command_given_as_a_list_is_read_as_the_shell_would() -> None:
    codex = ToolCall("c1", "shell", json.dumps({"command": ["bash", "-lc", "pytest tests/test_a.py"]}))
    facts = call_facts(codex, result(pytest_passing()))
    assert (facts.action, facts.shown) == ("pytest", "pytest tests/test_a.py")  # what bash was asked to run
    argv = ToolCall("c1", "exec", json.dumps({"cmd": ["rg", "-n", "make key", "src"]}))
    assert call_facts(argv, result("x")).searched == ("make key",)
    python = ToolCall("c1", "exec", json.dumps({"cmd": ["python", "-c", "print('hi there')"]}))
    assert call_facts(python, result("hi there")).shown == "python -c 'print('\"'\"'hi there'\"'\"')'"
    assert call_facts(python, result("hi there")).action == "python -c"


def test_a_test_run_piped_into_a_log_still_reports_its_outcome() -> None:
    facts = call_facts(bash("python -m pytest tests 2>&1 | tee out.log"), result(pytest_passing()))
    assert (facts.writes, facts.test, facts.outcome) == (("out.log",), "15 passed", "15 passed")


def test_a_shell_call_is_read_by_what_it_runs_whatever_its_tool_is_called() -> None:
    call = ToolCall("c1", "run_and_show", json.dumps({"command": "python -m pytest tests"}))
    assert call_facts(call, result(pytest_failing())).test == "3 failed, 12 passed"


def test_an_error_line_is_kept_to_160_characters() -> None:
    facts = call_facts(bash("python x.py"), result("ValueError: " + "v" * 300))
    assert facts.error is not None and facts.error.text == "ValueError: " + "v" * 147 + "…"


def test_a_run_ends_saying_its_last_line_a_view_its_size_a_write_its_first_sentence() -> None:
    out = "loading config\nchecking keys\nAll keys stable."
    assert call_facts(bash("python check.py"), result(out)).outcome == "3 lines: All keys stable."
    assert call_facts(bash("cat check.py"), result(out)).outcome == "3 lines"
    assert call_facts(bash("python check.py > out.txt"), result("Wrote it. Done.\nmore")).outcome == "Wrote it."
    assert call_facts(bash("python check.py"), result("  \n")).outcome == "no output"


def test_a_call_without_a_result_can_rerun_nothing() -> None:
    facts = call_facts(bash("pytest"), None)
    assert facts.keys == () and facts.outcome == "no result"


def test_long_rerun_keys_end_in_a_digest_of_the_whole() -> None:
    a = call_facts(bash("python -c '" + "x" * 300 + "a'"), result("1"))
    b = call_facts(bash("python -c '" + "x" * 300 + "b'"), result("1"))
    assert len(a.keys[0]) <= 100 and a.keys != b.keys
    exact = call_facts(bash("python " + "y" * 86 + ".py"), result("1"))  # a key of exactly 100 characters
    assert exact.keys == ("run python " + "y" * 86 + ".py",) and len(exact.keys[0]) == 100


@pytest.mark.parametrize(("path", "short"), [
    ("/testbed/src/a.py", "src/a.py"), ("./src/a.py", "src/a.py"), ("/etc/hosts", "/etc/hosts"),
    ("/usr/lib/python3.11/site-packages/attr/_make.py", "attr/_make.py"), ("/repo/a.py", "a.py"),
    ("/testbed/", "/testbed/"), ("pkg/src/a.py", "pkg/src/a.py"),
])
def test_paths_are_shown_without_the_workspace_root(path: str, short: str) -> None:
    assert short_path(path) == short
    assert short_path("d/" * 60 + "a.py") == "…" + ("d/" * 60 + "a.py")[-79:]
    assert short_path("p" * 80) == "p" * 80 and short_path("p" * 81) == "…" + "p" * 79


def test_an_error_kind_is_its_exception_name_else_the_start_of_its_line() -> None:
    assert error_kind("ImportError: cannot import name 'x'") == "ImportError"
    assert error_kind("django.core.exceptions.ImproperlyConfigured: no") != "django"
    assert error_kind("requests.exceptions.ConnectionError: refused") == "ConnectionError"
    assert error_kind("fatal: not a git repository (or any of the parent directories): .git") == \
        "fatal: not a git repository (or any of…"


def test_decisions_are_sentences_that_say_more_than_the_calls() -> None:
    assert is_decision("The function is called normalise, not norm.")
    assert is_decision("I'll apply a patch that sorts kwargs.")
    for narration in ("Let me look at a.py.", "Now the tests again.", "I'll run the tests.", "Rerunning them.",
                      "Check the whole suite.", "Is it right?", ""):
        assert not is_decision(narration), narration


# -- what a step did -------------------------------------------------------------------------------


def test_a_step_line_names_the_step_its_calls_their_outcomes_and_what_the_model_said() -> None:
    s = Session()
    s.user("Fix it.\nDetails follow.", notes=("usage: 61% of the token limit",))
    s.bash("Let me run the tests. Then fix.", "cd /testbed && python -m pytest tests/test_a.py -x 2>&1 | tail -20",
           pytest_failing("tests/test_a.py", failed=3, passed=12))
    s.say("All done. Should I also update the docs?")
    s.act("Two things at once.", ("bash", {"command": "ls src"}, "a.py\nb.py", True),
          ("str_replace_editor", {"command": "view", "path": "/testbed/src/a.py"}, "1\tx", True))
    lines = [step_line(facts_of(step)) for step in steps_of(s.entries)]
    assert lines == [
        "e1 user: Fix it. (+1 notifications: usage: 61% of the token limit)",
        "e2 bash: python -m pytest tests/test_a.py -x → 3 failed, 12 passed: AssertionError: assert 'k:1:b=2' == "
        "'k:1:b=2.0' — \"Let me run the tests.\"",
        "e4 agent: All done.",
        "e5 bash: ls src → 2 lines; str_replace_editor: view src/a.py → 1 x — \"Two things at once.\"",
    ]
    assert facts_of(steps_of(s.entries)[2]).questions == ("Should I also update the docs?",)


def test_a_notification_is_noted_in_its_first_line_up_to_100_characters() -> None:
    s = Session()
    s.user("go", notes=("n" * 150 + "\nmore",))
    assert facts_of(s.entries).notes == ("n" * 99 + "…",)


def test_an_input_is_said_in_its_first_line_up_to_160_characters() -> None:
    s = Session()
    s.user("x" * 300 + "\nsecond line")
    s.user("y" * 160)
    said = [facts_of(step).said for step in steps_of(s.entries)]
    assert said == ["x" * 159 + "…", "y" * 160]


def test_a_step_line_is_at_most_240_characters() -> None:
    s = Session()
    s.act("x", *[("bash", {"command": f"ls d{k}"}, "a\nb", True) for k in range(20)])
    assert len(step_line(facts_of(steps_of(s.entries)[0]))) == 240


def test_recaps_between_entries_are_no_steps_and_do_not_end_one() -> None:
    s = Session()
    s.user("go")
    s.bash("x", "ls", "a")
    recap = RecapEntry(id="e9", revision=1, author=s.entries[0].author, created_at=s.entries[0].created_at,
                       retention=Retention.CRITICAL, content=COUNTER.content("r", "r", "r"))
    entries = [s.entries[0], recap, *s.entries[1:]]
    assert [[e.id for e in step] for step in steps_of(entries)] == [["e1"], ["e2", "e3"]]
    assert [[e.id for e in step] for step in steps_of([s.entries[1], recap, s.entries[2]])] == [["e2", "e3"]]


def test_a_step_line_narrows_its_parts_until_it_fits() -> None:
    s = Session()
    s.act("I will now explain at length what is about to happen. " * 5,
          *[("bash", {"command": f"grep -rn pattern_{k} " + "src/dir/" * 10}, "x\n" * 40, True) for k in range(4)])
    facts = facts_of(steps_of(s.entries)[0])
    line = step_line(facts)
    assert len(line) <= 240 and line.startswith("e1 bash: grep -rn") and line.count("→") == 4
    assert len(step_line(facts, limit=60)) <= 60 and step_line(facts, limit=60).startswith("e1 bash → 40 lines")


def test_a_notification_only_input_and_results_without_their_output_still_make_lines() -> None:
    s = Session()
    s.user("", notes=("repeated failures of grep", "usage: 80%"))
    s.bash("x", "ls", "a")
    orphan = s.entries[-1:]  # results whose output is folded already
    assert step_line(facts_of(steps_of(s.entries[:1])[0])) == "e1 2 notifications: repeated failures of grep"
    facts = facts_of(orphan)
    assert facts.kind == "results" and step_line(facts) == "e3 bash → a"

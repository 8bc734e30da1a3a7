"""examples/tests is a user's test folder (docs/testing.md): its tests pass offline from their
committed cassettes, and a change to what the agent is sent fails them with a diff that names
the changed entry."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "tests"


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``folder`` as its user runs it, with no model server reachable: no key, no base
    URL, and a proxy that refuses every connection."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "OPENAI_", "LIVECONTEXT_CASSETTE"))}
    env.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist",
                           "-p", "no:cacheprovider", *args], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)


def copy_of_examples(tmp_path: Path) -> Path:
    folder = tmp_path / "tests"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "explore").symlink_to(ROOT / "examples" / "explore")  # (the desk system they test)
    return folder


def test_the_examples_tests_pass_offline_from_their_committed_cassettes(tmp_path: Path) -> None:
    done = run_pytest(copy_of_examples(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout and "failed" not in done.stdout


def test_a_changed_system_prompt_fails_the_cassette_test_with_a_diff_naming_the_changed_entry(tmp_path: Path) -> None:
    folder = copy_of_examples(tmp_path)
    source = folder / "weather.py"
    source.write_text(source.read_text().replace("Answer in one sentence", "Answer in two sentences"))
    done = run_pytest(folder, "test_weather.py")
    assert done.returncode == 1
    assert "message 0 (system prompt) changed" in done.stdout
    assert "- You are a weather desk. Answer in one sentence" in done.stdout + done.stderr
    assert "+ You are a weather desk. Answer in two sentences" in done.stdout + done.stderr


def test_the_seeded_desk_test_finds_the_planted_bug_and_its_printed_seed_fails_the_same_way_ten_times_in_ten(
        tmp_path: Path) -> None:
    folder = copy_of_examples(tmp_path)
    test = folder / "test_desk.py"
    test.write_text(test.read_text().replace('"desk-fixed.toml"', '"desk.toml"'))  # (the one-slot desk)
    found = run_pytest(folder, "test_desk.py", "-x")
    assert found.returncode == 1, found.stdout + found.stderr
    (command,) = [line.strip() for line in found.stdout.splitlines() if line.strip().startswith("pytest '")]
    seed = command.split()[-1]
    assert int(seed) < 200 and f"seed {seed} failed; run it alone with:" in found.stdout
    lost = [line for line in found.stdout.splitlines() if line.startswith("E") and "questions lost on the desk" in line]
    for _ in range(10):
        again = run_pytest(folder, *[part.strip("'") for part in command.split()[1:]])
        assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout + again.stderr
        assert [line for line in again.stdout.splitlines()
                if line.startswith("E") and "questions lost on the desk" in line] == lost

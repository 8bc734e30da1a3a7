"""docs/systems.md: its Python example runs, and the README points to it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "systems.md").read_text(encoding="utf-8")


def test_the_python_example_of_the_systems_doc_runs_from_the_repository_root() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", DOC, re.S)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("The plan is in my notebook") and lines[0].endswith(" WaitingInput")
    assert lines[1:] == ["planner team.planner waiting_user 10", "researcher team.researcher waiting_user 2",
                         "critic team.critic waiting_user 2"]


def test_the_readme_links_the_systems_doc() -> None:
    assert "(docs/systems.md)" in (ROOT / "README.md").read_text(encoding="utf-8")

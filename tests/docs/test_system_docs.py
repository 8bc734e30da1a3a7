"""docs/systems.md: its Python example does what it says, and the README points to it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "systems.md").read_text(encoding="utf-8")


def test_the_python_example_of_the_systems_doc_asks_the_researcher_and_reports_each_agent(tmp_path: Path) -> None:
    code = re.findall(r"```python\n(.*?)```", DOC, re.S)[0]  # (the first: "From Python")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LIVECONTEXT_STORE": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Day 2: Belem, for its tower and its monastery. WaitingInput",
                                        "planner team.planner waiting_user 4 2",
                                        "researcher team.researcher waiting_user 2 1",
                                        "model calls in all: 3"]


def test_the_readme_links_the_systems_doc() -> None:
    assert "(docs/systems.md)" in (ROOT / "README.md").read_text(encoding="utf-8")

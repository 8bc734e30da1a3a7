"""The terminal commands README.md shows under "From the terminal" run as shown (offline)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From the terminal", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", "", section)
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]


def test_the_terminal_examples_run_and_the_second_resumes_the_first(tmp_path: Path) -> None:
    env = {**os.environ, "LIVECONTEXT_STORE": f"sqlite:{tmp_path / 'default.db'}", "OPENAI_API_KEY": ""}
    outputs = []
    for argv in commands():
        assert argv[0] == "livecontext"
        argv = [a.replace("/tmp/lc.db", str(tmp_path / "lc.db")) for a in argv]
        done = subprocess.run([sys.executable, "-c", "from livecontext.actors.cli import main; main()", *argv[1:]],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{shlex.join(argv)}:\n{done.stderr}"
        outputs.append(done.stdout)
    assert len(outputs) == 4
    assert "2 + 3 = 5." in outputs[1]
    assert "And 5 + 5 = 10." in outputs[2]  # the recorded model and tool, with no --model or --tool

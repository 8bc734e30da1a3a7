"""Every Python block of README.md and docs/ runs (issue 15, point 8): a user who copies one
gets what it says, offline."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks() -> list[tuple[str, str]]:
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for k, match in enumerate(BLOCK.finditer(doc.read_text(encoding="utf-8"))):
            found.append((f"{doc.relative_to(ROOT)}#{k + 1}", match.group(1)))
    return found


def test_the_readme_opens_its_usage_with_the_python_example() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.index("## In Python") < readme.index("## From the terminal") < readme.index("## How the context is kept")
    first = blocks()[0]
    assert first[0] == "README.md#1" and "livecontext.open_agent(" in first[1] and "@livecontext.tool" in first[1]


@pytest.mark.parametrize(("where", "code"), blocks(), ids=[w for w, _ in blocks()])
def test_a_documented_python_block_runs_offline(where: str, code: str, tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "http://127.0.0.1:9",  # no model service
           "LIVECONTEXT_STORE": "", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"{where} failed:\n{done.stderr}"
    assert done.stdout.strip(), f"{where} printed nothing"

"""Run the kernel and fleet benchmarks on another commit and on this tree, alternately, in one run.

    .venv/bin/python benchmarks/compare.py --against main          # 2 rounds
    .venv/bin/python benchmarks/compare.py --against 0e4f1c5 --rounds 3

The other commit is checked out in a temporary git worktree (removed at the end) and run with
this tree's interpreter, with ``PYTHONPATH`` pointing at it, so both sides share the machine's
load. Each round runs ``bench_kernel.py --quick`` and ``bench_agent.py --quick --only fleet``
on one side, then on the other (the side that goes first alternates), and prints the lines
that carry figures, side by side with their source.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEEP = ("round trips/s", "msg/s", "deliveries/s", "run every turn", "CPU per turn", "ratio", "/ raw")


def importable(tree: Path, site: Path) -> Path:
    """A folder that makes ``import livecontext`` load ``tree``'s code (the package maps
    ``livecontext.protocol`` to ``protocol/`` and so on: mirror that with links)."""
    pkg = site / "livecontext"
    pkg.mkdir(parents=True)
    for item in (tree / "livecontext").iterdir():
        (pkg / item.name).symlink_to(item)
    for sub in ("protocol", "runtime", "actors"):
        (pkg / sub).symlink_to(tree / sub)
    return site


def run(tree: Path, site: Path, script: str, *args: str) -> list[str]:
    """The lines of ``script``'s output (run in ``tree``) that carry the figures compared."""
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{tree}")
    out = subprocess.run([sys.executable, str(tree / "benchmarks" / script), *args], cwd=tree, env=env,
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if any(k in line for k in KEEP)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="main", help="the commit to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), args.against], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            sides = [(f"before ({args.against})", other, importable(other, Path(tmp) / "site-before")),
                     ("after (this tree)", ROOT, importable(ROOT, Path(tmp) / "site-after"))]
            for r in range(args.rounds):
                for label, tree, site in sides if r % 2 == 0 else sides[::-1]:
                    print(f"--- round {r + 1}, {label}", flush=True)
                    for line in run(tree, site, "bench_kernel.py", "--quick"):
                        print("  kernel", line)
                    for line in run(tree, site, "bench_agent.py", "--quick", "--only", "fleet"):
                        print("  fleet ", line)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()

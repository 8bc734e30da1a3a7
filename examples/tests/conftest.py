"""The desk system of examples/explore is tested here: its folder on sys.path, so that its
blueprints' apps (``desk:Desk``) import."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "explore"))

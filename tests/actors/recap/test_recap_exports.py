from __future__ import annotations

import inspect
from pathlib import Path

import livecontext.actors.recap as recap


def test_the_recap_package_exports_exactly_its_public_names() -> None:
    assert sorted(recap.__all__) == [
        "MIN_SUMMARY_CHARS",
        "Recap",
        "RecapMaintainer",
        "RecapSettings",
        "RecapStrategy",
        "batch_runs",
        "model_summary",
        "pick_batch",
        "recap_topic",
        "simple_extract",
        "steps_of",
        "structured",
    ]


def test_every_exported_function_and_class_exists_and_has_a_docstring() -> None:
    for name in recap.__all__:
        value = getattr(recap, name)
        if callable(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_the_blueprint_docs_give_the_shortest_recap_allowed() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "blueprints.md").read_text(encoding="utf-8")
    row = next(line for line in docs.splitlines() if line.startswith("| `max_summary_chars` |"))
    assert f"| integer >= {recap.MIN_SUMMARY_CHARS} |" in row and f"Less than {recap.MIN_SUMMARY_CHARS} " in row

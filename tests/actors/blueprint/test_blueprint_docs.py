"""docs/blueprints.md documents every key, and its complete example loads."""

from __future__ import annotations

import re
from pathlib import Path

from livecontext.actors.blueprint import parse_blueprint
from livecontext.actors.blueprint._schema import ARRAYS, TABLES, BlueprintFile

ROOT = Path(__file__).resolve().parents[3]
DOC = (ROOT / "docs" / "blueprints.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = DOC.index(f"## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start:end if end >= 0 else None]


async def test_the_docs_describe_every_top_level_key_in_its_table() -> None:
    documented = set(re.findall(r"^\| `(\w+)` \|", section("Top-level keys"), re.M))
    assert documented == set(BlueprintFile.model_fields) - set(TABLES)


async def test_the_docs_describe_every_key_of_every_table() -> None:
    for name, model in TABLES.items():
        title = f"`[[{name}]]`" if name in ARRAYS else f"`[{name}]`"
        documented = set(re.findall(r"^\| `(\w+)` \|", section(title), re.M))
        assert documented == set(model.model_fields), name


async def test_the_complete_example_of_the_docs_loads() -> None:
    (example,) = re.findall(r"```toml\n(.*?)```", section("A complete example"), re.S)
    bp = parse_blueprint(example, "docs/blueprints.md", base=ROOT / "examples")
    assert bp.settings.thread_id == "lake-trip"
    assert [a.name for a in bp.settings.analyzers] == ["failures", "critic"]


async def test_the_readme_links_the_blueprint_docs() -> None:
    assert "(docs/blueprints.md)" in (ROOT / "README.md").read_text(encoding="utf-8")

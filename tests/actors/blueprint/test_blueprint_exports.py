from __future__ import annotations

import inspect

import livecontext.actors.blueprint as blueprint


async def test_the_blueprint_package_exports_exactly_its_public_names() -> None:
    assert sorted(blueprint.__all__) == [
        "AgentBlueprint",
        "AgentSpec",
        "AppUse",
        "BUILTIN_APPS",
        "Blueprint",
        "BlueprintError",
        "BlueprintModels",
        "DEFAULT_ASK_TIMEOUT_S",
        "NOT_GIVEN",
        "NotGiven",
        "SystemBlueprint",
        "ToolLike",
        "load_any_blueprint",
        "load_blueprint",
        "load_system_blueprint",
        "open_blueprint_models",
        "parse_blueprint",
        "parse_system_blueprint",
    ]


async def test_every_exported_name_exists_and_has_a_docstring() -> None:
    for name in blueprint.__all__:
        value = getattr(blueprint, name)
        if name == "BUILTIN_APPS":
            continue  # a mapping: documented where it is defined
        assert inspect.getdoc(value), f"{name} has no docstring"

from __future__ import annotations

import inspect

import livecontext.actors.apps as apps


def test_the_apps_package_exports_exactly_its_public_names() -> None:
    assert sorted(apps.__all__) == [
        "App",
        "AppDefinitionError",
        "AppStateError",
        "DataTool",
        "FunctionTools",
        "Notebook",
        "ToolContext",
        "ToolDefinitionError",
        "ToolFailure",
        "ToolOutcome",
        "UnknownEffectError",
        "check_tool",
        "describe_tools",
        "importable",
        "invoke_tool",
        "load_object",
        "make_app",
        "start_tool",
        "tool",
        "tool_owner",
    ]


def test_every_exported_name_exists_and_has_a_docstring() -> None:
    for name in apps.__all__:
        value = getattr(apps, name)
        assert inspect.getdoc(value), f"{name} has no docstring"

"""``[[tools]]`` and ``[[apps]]`` by import path (issue 15, point 3): imported from the
blueprint's folder, checked when the blueprint loads, and run."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import trio

from livecontext.actors.agent._session import recorded_config
from livecontext.actors.agent._thread_apps import make_recorded_app
from livecontext.actors.apps import FunctionTools, Notebook
from livecontext.actors.blueprint import AppUse, BlueprintError, load_blueprint
from livecontext.actors.cli import main

from tests.support.command import LIVECONTEXT, cli_env

MODULE = textwrap.dedent('''
    from livecontext.actors.apps import App


    def shout(word: str) -> str:
        """Shout a word."""
        return word.upper() + "!"


    class Shelf(App):
        name = "shelf"

        def __init__(self, label: str = "plain") -> None:
            self.label = label

        def view(self) -> str:
            return f"shelf {self.label}"

        def apply(self, effect: object) -> None:
            super().apply(effect)  # type: ignore[arg-type]

        def state_text(self) -> str:
            return "{}"

        def load_state(self, text: str) -> None:
            pass
''')


@pytest.fixture
def folder(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, str]:
    """A blueprint folder holding a module of its own (named for the test: imports are cached)."""
    name = "bp_module_" + re.sub(r"\W", "_", request.node.name)
    (tmp_path / f"{name}.py").write_text(MODULE, encoding="utf-8")
    return tmp_path, name


def write(folder: Path, text: str) -> Path:
    path = folder / "agent.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_tools_and_apps_are_imported_from_the_blueprints_folder_with_their_options(folder: tuple[Path, str]) -> None:
    where, module = folder
    bp = load_blueprint(write(where, f'[[apps]]\nuse = "notebook"\n\n[[apps]]\nuse = "{module}:Shelf"\n'
                                     f'options = {{ label = "north" }}\n\n[[tools]]\nuse = "{module}:shout"\n'))
    assert bp.apps == (AppUse("notebook"), AppUse(f"{module}:Shelf", {"label": "north"}))
    assert bp.tools == (f"{module}:shout",)
    notebook, shelf, tools = bp.make_apps()
    assert isinstance(notebook, Notebook) and isinstance(tools, FunctionTools)
    assert shelf.window() == "[Window: shelf]\nshelf north" and shelf.options() == {"label": "north"}


def test_a_blueprint_with_a_tool_runs_it_and_the_thread_records_the_app_with_its_options(
        folder: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    where, module = folder
    script = {"turns": [{"tool_calls": [{"name": "shout", "arguments": {"word": "hey"}}]}, {"text": "done"}]}
    (where / "script.json").write_text(json.dumps(script), encoding="utf-8")
    path = write(where, f'model = "scripted:script.json"\nstore = "sqlite:lc.db"\ninputs = ["go"]\n\n'
                        f'[[apps]]\nuse = "{module}:Shelf"\noptions = {{ label = "south" }}\n\n'
                        f'[[tools]]\nuse = "{module}:shout"\n')
    monkeypatch.chdir(where.parent)  # not the blueprint's folder: it is importable all the same
    result = CliRunner().invoke(main, ["run", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    entries = json.loads(result.stdout)["entries"]
    assert [r["content"] for e in entries if e["kind"] == "tool_results" for r in e["results"]] == ["HEY!"]
    recorded = trio.run(recorded_config, f"sqlite:{where / 'lc.db'}", "main")
    assert recorded is not None
    shelf = next(info for info in recorded.apps if info.name == "shelf")
    assert json.loads(shelf.options) == {"label": "south"}
    assert make_recorded_app("main", shelf).window() == "[Window: shelf]\nshelf south"  # made again the same way


@pytest.mark.parametrize(("body", "message"), [
    ('[[tools]]\nuse = "nowhere_here:f"\n',
     "agent.toml:2: [[tools]] #1 tool 'nowhere_here:f': cannot import module 'nowhere_here'"),
    ('[[tools]]\nuse = "{m}:Shelf"\n', "agent.toml:2: [[tools]] #1 tool '{m}:Shelf' is the class Shelf, not a function"),
    ('[[apps]]\nuse = "{m}:shout"\n', "agent.toml:2: [[apps]] #1 app '{m}:shout' is a function, not an App class"),
    ('[[apps]]\nuse = "{m}:Shelf"\noptions = {{ colour = "red" }}\n',
     "agent.toml:2: [[apps]] #1 app '{m}:Shelf' cannot be made with colour: TypeError:"),
    ('[[apps]]\nuse = "notebook"\noptions = {{ size = 3 }}\n',
     "agent.toml:3: [[apps]] #1 notebook cannot be made with these options:"),
    ('[[tools]]\nuse = 3\n', "agent.toml:2: [[tools]] #1 use must be a string, got an integer 3"),
    ('[[apps]]\nuses = "x:y"\n', "agent.toml:1: [[apps]] #1 needs a use (it is required)"),
    ('[apps]\nnotebok = true\n', "agent.toml:2: unknown key 'notebok' in [apps] (did you mean 'notebook'?); known keys: notebook"),
])
def test_an_import_path_that_names_nothing_usable_is_one_line_with_its_place(
        folder: tuple[Path, str], body: str, message: str) -> None:
    where, module = folder
    with pytest.raises(BlueprintError) as info:
        load_blueprint(write(where, body.format(m=module)))
    text = str(info.value)
    assert text.startswith(str(where / message.format(m=module))) or text.startswith(message.format(m=module)), text
    assert "\n" not in text


def test_the_older_apps_table_still_switches_the_notebook(folder: tuple[Path, str]) -> None:
    where, _ = folder
    assert load_blueprint(write(where, "[apps]\nnotebook = false\n")).apps == ()
    assert load_blueprint(write(where, "[apps]\nnotebook = true\n")).apps == (AppUse("notebook"),)


def test_a_thread_run_from_a_blueprint_resumes_from_another_folder_importing_from_the_blueprints_folder(
        folder: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where, module = folder
    script = {"turns": [{"text": "waiting"}, {"tool_calls": [{"name": "shout", "arguments": {"word": "hey"}}]},
                        {"text": "done"}]}
    (where / "script.json").write_text(json.dumps(script), encoding="utf-8")
    store = f"sqlite:{tmp_path / 'lc.db'}"
    path = write(where, f'model = "scripted:script.json"\ninputs = ["go"]\n\n[[tools]]\nuse = "{module}:shout"\n')
    monkeypatch.chdir(where.parent)
    first = CliRunner().invoke(main, ["run", str(path), "--store", store])
    assert first.exit_code == 0, first.stderr
    recorded = trio.run(recorded_config, store, "main")
    assert recorded is not None and recorded.settings is not None
    assert recorded.settings.folder == str(where.resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # a fresh process in neither the blueprint's folder nor its parent: the thread says where
    resumed = subprocess.run([*LIVECONTEXT, "run", "--store", store, "--thread", "main", "--input", "again", "--json"],
                             cwd=elsewhere, env=cli_env(), capture_output=True, text=True, timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr
    entries = json.loads(resumed.stdout)["entries"]
    assert [r["content"] for e in entries if e["kind"] == "tool_results" for r in e["results"]] == ["HEY!"]

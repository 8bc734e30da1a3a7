"""The wheel installs one top-level package, ``livecontext``, holding every module of the repo.

pyproject.toml lists the subpackages one by one (the folders ``protocol/``, ``runtime/`` and
``actors/`` are mapped under ``livecontext``); a new subfolder that is not listed would be left
out of the wheel silently. This builds the wheel (once per test session, from a copy of the
sources so the work tree gets no ``build/`` or ``*.egg-info``) and reads its file list.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("protocol", "runtime", "actors")
"""The subpackages' folders (installed as ``livecontext/<folder>``)."""
FRONT = "livecontext"
"""The front door's folder: ``livecontext/__init__.py`` itself."""


def _can_build_without_isolation() -> bool:
    """Whether this interpreter has what pyproject.toml's [build-system] asks for."""
    try:
        setuptools_major = int(importlib.metadata.version("setuptools").split(".")[0])
        importlib.metadata.version("wheel")
    except importlib.metadata.PackageNotFoundError:
        return False
    return setuptools_major >= 69


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    for folder in (FRONT, *FOLDERS):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    command = [sys.executable, "-m", "build", "--wheel", "--outdir", str(work / "dist")]
    if _can_build_without_isolation():
        command.append("--no-isolation")  # no download: much faster
    done = subprocess.run([*command, str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"building the wheel failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (built,) = (work / "dist").glob("livecontext-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel_files(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_every_module_of_the_wheel_is_inside_the_livecontext_package(wheel_files: list[str]) -> None:
    outside = [f for f in wheel_files if not f.startswith(("livecontext/", "livecontext-"))]
    assert outside == []
    assert {f.split("/")[1] for f in wheel_files if f.startswith("livecontext/")} >= {*FOLDERS, "__init__.py"}


def test_the_wheel_installs_no_top_level_actors_protocol_or_runtime(wheel_files: list[str]) -> None:
    tops = {f.split("/")[0] for f in wheel_files if not f.split("/")[0].endswith(".dist-info")}
    assert tops == {"livecontext"}
    assert not {"actors", "protocol", "runtime"} & tops


def test_every_python_file_of_the_repo_folders_is_in_the_wheel(wheel_files: list[str]) -> None:
    expected = {
        f"livecontext/{path.relative_to(ROOT).as_posix()}"
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    expected |= {path.relative_to(ROOT).as_posix() for path in (ROOT / FRONT).glob("*.py")}
    missing = sorted(expected - set(wheel_files))
    assert missing == [], (
        "these modules are not in the wheel: list their packages in pyproject.toml's "
        f"[tool.setuptools] packages: {missing}"
    )


def test_the_wheel_declares_the_livecontext_console_script(wheel: Path, wheel_files: list[str]) -> None:
    (entry_points,) = (f for f in wheel_files if f.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(entry_points).decode()
    section = text.split("[console_scripts]", 1)[1].split("\n[", 1)[0]
    scripts = {line.split("=")[0].strip(): line.split("=")[1].strip() for line in section.splitlines() if "=" in line}
    assert scripts["livecontext"].startswith("livecontext.")


def test_the_trace_page_files_are_in_the_wheel(wheel_files: list[str]) -> None:
    folder = ROOT / "actors" / "trace" / "page"
    expected = {f"livecontext/{path.relative_to(ROOT).as_posix()}" for path in folder.iterdir() if path.is_file()}
    assert {"livecontext/actors/trace/page/trace.html", "livecontext/actors/trace/page/trace.js"} <= expected
    missing = sorted(expected - set(wheel_files))
    assert missing == [], f"list them in pyproject.toml's [tool.setuptools.package-data]: {missing}"


def test_the_price_table_is_in_the_wheel_and_the_installed_wheel_reads_it(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        assert "livecontext/runtime/models/prices.toml" in archive.namelist(), (
            "list it in pyproject.toml's [tool.setuptools.package-data]")
        archive.extractall(tmp_path)
    script = ("import livecontext\n"
              "from livecontext.runtime.models import default_prices\n"
              f"assert livecontext.__file__.startswith({str(tmp_path)!r}), livecontext.__file__\n"
              "print(default_prices()['gpt-4o-mini'].input)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0.15"


def test_the_installed_wheel_renders_the_trace_page_from_its_own_files(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path)
    script = (
        "import livecontext, sys\n"
        "from livecontext.actors.trace._page import render_page\n"
        f"assert livecontext.__file__.startswith({str(tmp_path)!r}), livecontext.__file__\n"
        "page = render_page({'version': 1, 'thread': 'wheel', 'actors': [], 'messages': []})\n"
        "assert '{{' not in page.split('<script type=\"application/json\"')[0]\n"
        "print(len(page))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 10_000, "the page should hold its style sheet and script"

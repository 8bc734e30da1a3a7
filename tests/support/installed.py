"""The package laid out as it is installed, for tools that read folders rather than import.

pyproject.toml maps ``livecontext`` to livecontext/, ``livecontext.protocol`` to protocol/, and
so on ([tool.setuptools] package-dir). An editable install imports that way, but mypy, grimp and
import-linter walk one folder per package from the repository and would see only
livecontext/__init__.py and livecontext/_command.py. :func:`lay_out_installed_package` builds a
tree of links in which each package sits where its import name says.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def lay_out_installed_package(destination: Path, root: Path = ROOT) -> Path:
    """Link the package folders of the repository at ``root`` (this one unless told: another
    revision's files, say) under ``destination`` as their import names place them, read from
    its pyproject.toml's ``package-dir``.

    A folder that holds another mapped package (livecontext/ holds protocol/, ...) becomes a
    real folder of links to its entries; any other folder is one link.

    Returns:
        ``destination``, to put on ``sys.path`` (or use as the working folder).
    """
    settings = tomllib.loads((root / "pyproject.toml").read_text())
    package_dir: dict[str, str] = settings["tool"]["setuptools"]["package-dir"]
    for name, folder in sorted(package_dir.items()):
        place = destination.joinpath(*name.split("."))
        source = root / folder
        if any(other.startswith(name + ".") for other in package_dir):
            place.mkdir(parents=True)
            for entry in source.iterdir():
                if entry.name != "__pycache__":
                    (place / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
        else:
            place.parent.mkdir(parents=True, exist_ok=True)
            place.symlink_to(source, target_is_directory=True)
    return destination

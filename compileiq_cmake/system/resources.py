"""Where the package's data lives: the CMake package dir and the Jinja templates.

Installed wheels carry ``cmake/`` and ``templates/`` inside the package; a source checkout keeps them at
the repository's top level.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # compileiq_cmake/ (this file is in system/)


def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"compileiq_cmake data folder '{name}' is missing from {_PACKAGE_DIR}")


def cmake_dir() -> Path:
    return data_dir("cmake")


def templates_dir() -> Path:
    return data_dir("templates")

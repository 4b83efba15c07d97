"""Reading the user's configured build tree (it is only read): the entries of its CMakeCache.txt, the cmake
and the host compiler they name, and the configurations it has (build types, multi-config generators)."""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ..model.errors import UsageError

_CACHE_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.+-]*)(?::([A-Z]+))?=(.*)$")
STANDARD_CONFIGS = ("Debug", "Release", "RelWithDebInfo", "MinSizeRel")
DEFAULT_BUILD_TYPE = "Release"  # what a tune (and check) of a single-config tree without a build type builds


def read_cache(build_dir: Path) -> dict[str, tuple[str, str]]:
    """Entries of <build>/CMakeCache.txt as name -> (type, value); empty when the tree is not configured."""
    cache = build_dir / "CMakeCache.txt"
    entries: dict[str, tuple[str, str]] = {}
    if not cache.is_file():
        return entries
    for line in cache.read_text(errors="replace").splitlines():
        if not line or line.startswith(("#", "//")):
            continue
        m = _CACHE_LINE.match(line)
        if m:
            entries[m.group(1)] = (m.group(2) or "UNINITIALIZED", m.group(3))
    return entries


def host_compiler_of(cache: dict[str, tuple[str, str]]) -> str:
    """The host compiler nvcc uses: CMAKE_CUDA_HOST_COMPILER of a tree's cache, else PATH's g++ or c++ ("": none)."""
    return cache.get("CMAKE_CUDA_HOST_COMPILER", ("", ""))[1] or shutil.which("g++") or shutil.which("c++") or ""


def find_cmake(user_cache: dict[str, tuple[str, str]]) -> str:
    """The cmake that configured the user's tree, else the one installed beside this Python, else PATH's."""
    configured = user_cache.get("CMAKE_COMMAND", ("", ""))[1]
    if configured and Path(configured).is_file():
        return configured
    beside = Path(sys.executable).parent / "cmake"
    if beside.is_file():
        return str(beside)
    found = shutil.which("cmake")
    if not found:
        raise UsageError("cmake not found; pip install cmake or put cmake on PATH")
    return found


def cmake_version(cmake: str) -> tuple[int, int]:
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def lacks_build_type(cache: dict[str, tuple[str, str]], generator: str) -> bool:
    """Whether a single-config tree has no CMAKE_BUILD_TYPE (then DEFAULT_BUILD_TYPE is tuned and checked)."""
    return not is_multi_config(generator) and not cache.get("CMAKE_BUILD_TYPE", ("", ""))[1]


def project_configs(user: dict[str, tuple[str, str]], generator: str) -> list[str]:
    """The configurations a build tree has: a multi-config generator's CMAKE_CONFIGURATION_TYPES; else CMake's
    four, the tree's CMAKE_BUILD_TYPE and every <CONFIG> of a CMAKE_<LANG>_FLAGS_<CONFIG> its cache defines."""
    if is_multi_config(generator):
        listed = [c for c in user.get("CMAKE_CONFIGURATION_TYPES", ("", ""))[1].split(";") if c]
        return listed or list(STANDARD_CONFIGS)
    found = list(STANDARD_CONFIGS)
    own = user.get("CMAKE_BUILD_TYPE", ("", ""))[1]
    for name in [own, *(m.group(1) for k in user if (m := re.match(r"CMAKE_(?:C|CXX|CUDA)_FLAGS_([A-Z0-9_]+)$", k)))]:
        if name and name.upper() not in (c.upper() for c in found):
            found.append(name)
    return found


def check_config(config: str, user: dict[str, tuple[str, str]], generator: str) -> None:
    """--config must name a configuration of the tree (case as CMake compares build types: insensitive)."""
    known = project_configs(user, generator)
    if config.upper() in (c.upper() for c in known):
        return
    close = difflib.get_close_matches(config, known, 1)
    raise UsageError(
        f"--config {config!r} is not a configuration of this build tree ({', '.join(known)})"
        + (f": did you mean {close[0]!r}?" if close else "")
    )


def is_multi_config(generator: str) -> bool:
    """Generators that hold several configurations in one tree (build with --config)."""
    return "Multi-Config" in generator or generator.startswith("Visual Studio") or generator == "Xcode"

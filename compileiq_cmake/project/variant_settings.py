"""How the other trees of the project are configured from the user's: the cache entries forwarded to them,
the `cmake -C` script that replays them, the top-level includes (the user's own, then the tool's), and
`VariantSettings`, the settings and the configure command of one tune's variant trees."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..system.resources import cmake_dir
from .fragment import cmake_quote
from .user_tree import (
    DEFAULT_BUILD_TYPE,
    check_config,
    cmake_version,
    find_cmake,
    is_multi_config,
    lacks_build_type,
    read_cache,
)

_FORWARD_TYPES = {"BOOL", "STRING", "PATH", "FILEPATH", "UNINITIALIZED"}
_NOT_FORWARDED = {
    "CMAKE_PROJECT_TOP_LEVEL_INCLUDES",
    "CMAKE_EXPORT_COMPILE_COMMANDS",
    "CMAKE_CUDA_ARCHITECTURES",
    "CMAKE_CACHEFILE_DIR",
    "CMAKE_HOME_DIRECTORY",
    "compileiq_cmake_DIR",
}


@dataclass(frozen=True)
class VariantSettings:
    """How every variant tree of one tune is configured."""

    source_dir: Path
    cmake: str
    generator: str
    cmake_version: tuple[int, int]  # `cmake --version`, asked once (from_user_tree), not at every configure
    cache: dict[str, tuple[str, str]] = field(default_factory=dict)
    cuda_arch: str = ""
    config: str = ""  # multi-config generators: the one configuration the variant trees have and build
    user_cuda_architectures: str = ""  # the user's CMAKE_CUDA_ARCHITECTURES, used when no cuda_arch is forced
    user_includes: str = ""  # the user's CMAKE_PROJECT_TOP_LEVEL_INCLUDES, kept before the tool's own
    cuda_launcher: str = ""  # CMAKE_CUDA_COMPILER_LAUNCHER of the trees: the step cache's, else the user's own

    @staticmethod
    def from_user_tree(
        source_dir: Path, build_dir: Path, cuda_arch: str, config: str | None = None
    ) -> tuple[VariantSettings, list[str]]:
        """Settings copied from the user's configured tree (generator, build type, compilers, options).
        `config` picks the configuration to tune (default: the tree's CMAKE_BUILD_TYPE, else Release);
        with a multi-config generator the variant trees get only that one configuration."""
        notes: list[str] = []
        user = read_cache(build_dir)
        generator = user.get("CMAKE_GENERATOR", ("", ""))[1] or ("Ninja" if shutil.which("ninja") else "Unix Makefiles")
        if config:
            check_config(config, user, generator)
        cache = forwarded_cache(user)
        chosen = ""
        if is_multi_config(generator):
            chosen = config or "Release"
            cache["CMAKE_CONFIGURATION_TYPES"] = ("STRING", chosen)
            cache.pop("CMAKE_BUILD_TYPE", None)
            notes.append(
                f"multi-config generator ({generator}): tuning the {chosen} configuration"
                + ("" if config else " (--config to choose another)")
            )
        elif config:
            own = cache.get("CMAKE_BUILD_TYPE", ("", ""))[1]
            cache["CMAKE_BUILD_TYPE"] = ("STRING", config)
            if own and own != config:
                notes.append(f"tuning the {config} build type (--config) although the build tree is {own}")
        elif lacks_build_type(cache, generator):
            cache["CMAKE_BUILD_TYPE"] = ("STRING", DEFAULT_BUILD_TYPE)
            notes.append(f"no CMAKE_BUILD_TYPE in the user's build tree: tuning a {DEFAULT_BUILD_TYPE} build")
        cmake = find_cmake(user)
        return VariantSettings(
            source_dir=source_dir,
            cmake=cmake,
            generator=generator,
            cache=cache,
            cuda_launcher=user.get("CMAKE_CUDA_COMPILER_LAUNCHER", ("", ""))[1],
            cuda_arch=cuda_arch,
            config=chosen,
            cmake_version=cmake_version(cmake),
            user_cuda_architectures=user.get("CMAKE_CUDA_ARCHITECTURES", ("", ""))[1],
            user_includes=user.get("CMAKE_PROJECT_TOP_LEVEL_INCLUDES", ("", ""))[1],
        ), notes

    def initial_cache_script(self) -> str:
        return initial_cache_script(self.cache)

    def configure_command(self, cmake: str, tree: Path, fragment: Path) -> list[str]:
        """The configure of a variant tree at `tree` (its initial cache script compileiq_init_cache.cmake, its
        trial fragment `fragment`) with these settings."""
        init = tree / "compileiq_init_cache.cmake"
        includes = top_level_includes(self.user_includes, cmake_dir() / "compileiq_variant.cmake")
        cmd = [
            cmake,
            "-S",
            str(self.source_dir),
            "-B",
            str(tree),
            "-G",
            self.generator,
            "-C",
            str(init),
            f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={includes}",
            f"-DCOMPILEIQ_VARIANT_FRAGMENT={fragment}",
            f"-Dcompileiq_cmake_DIR={cmake_dir()}",
            "-DCOMPILEIQ_TUNE=OFF",
            "-DCOMPILEIQ_APPLY=OFF",
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        ]
        if self.cuda_arch:
            cmd.append(f"-DCMAKE_CUDA_ARCHITECTURES={self.cuda_arch}-real")
        elif self.user_cuda_architectures:
            cmd.append(f"-DCMAKE_CUDA_ARCHITECTURES={self.user_cuda_architectures}")
        else:  # the project's own choice, not what an earlier configure of this tree (another target's) forced
            cmd.append("-UCMAKE_CUDA_ARCHITECTURES")
        # always named: a tree configured by an earlier run with the cache keeps no stale launcher
        cmd.append(f"-DCMAKE_CUDA_COMPILER_LAUNCHER={self.cuda_launcher}")
        return cmd


def forwarded_cache(user: dict[str, tuple[str, str]], keep: frozenset[str] = frozenset()) -> dict[str, tuple[str, str]]:
    """The user's cache entries another tree of the project is configured with (variant trees; `check`'s
    trees, which `keep` CMAKE_CUDA_ARCHITECTURES): options, paths and compilers, not the tool's own."""
    return {
        name: entry
        for name, entry in user.items()
        if entry[0] in _FORWARD_TYPES
        and (name not in _NOT_FORWARDED or name in keep)
        and not name.startswith("COMPILEIQ_")
    }


def top_level_includes(user: str, own: Path) -> str:
    """CMAKE_PROJECT_TOP_LEVEL_INCLUDES of another tree of the project: the user's own files (from their
    cache: a dependency provider, ...) first, then the tool's `own` (CMake takes a list). The tool's files in
    the user's list (a release tree that applies a compileiq.toml) are left out: `own` decides."""
    tool = {"compileiq_apply.cmake", "compileiq_variant.cmake"}
    return ";".join([*(p for p in user.split(";") if p and Path(p).name not in tool), str(own)])


def initial_cache_script(cache: dict[str, tuple[str, str]]) -> str:
    """A `cmake -C` script that sets these cache entries."""
    lines = ["# written by compileiq_cmake: the user's cache entries, replayed in a variant tree"]
    for name, (typ, value) in sorted(cache.items()):
        typ = "STRING" if typ == "UNINITIALIZED" else typ
        lines.append(f'set({name} {cmake_quote(value)} CACHE {typ} "" FORCE)')
    return "\n".join(lines) + "\n"

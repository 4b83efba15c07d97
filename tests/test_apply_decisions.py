"""CMake semantics once: the tool reads the CMake module's apply decisions (compileiq_variant_info.txt, the
check file) instead of re-deriving them. A project whose CMAKE_CXX_FLAGS_RELEASE carries -O2 and an entry
tuned to -O3: the release build's compile command is what the tune measured, and what check says applies.
Real configures (gcc)."""

from __future__ import annotations

import shlex
import shutil

import pytest

from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.variant_settings import VariantSettings
from compileiq_cmake.results.check import run_check
from compileiq_cmake.results.toml_io import write_entry

from conftest import PROJECTS, compile_commands, configure
from test_cmake_modules import _gcc_version_major_minor, _host_entry

pytestmark = pytest.mark.cmake


def _options(command: str) -> list[str]:
    """The compile command's options in order, without the output and input (they name each tree's paths)."""
    words = shlex.split(command)[1:]
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w in ("-o", "-c", "-MF", "-MT"):
            skip = w != "-c"
        elif w.startswith("-") and not w.startswith("-MD"):
            out.append(w)
    return out


def _last_optimization_level(options: list[str]) -> str:
    """gcc's effective -O option: the last one given."""
    return [o for o in options if o.startswith("-O")][-1]


def test_the_release_build_gets_what_the_tool_says_over_the_projects_own_release_flags(tmp_path):
    """CMAKE_CXX_FLAGS_RELEASE (-O2, set by the project) against a tuned -O3. The tune's side reads the build
    type and the flags hash from the variant tree's compileiq_variant_info.txt (the CMake module's decision,
    not the tool's copy of the rule); check reads whether the entry applies from the apply's own record. The
    release build's compile command holds the tuned -O3 after the project's -O2 (gcc: the last wins), and
    equals the variant tree's, where the tune measured it."""
    src = tmp_path / "release_flags"
    shutil.copytree(PROJECTS / "release_flags", src)
    user = tmp_path / "user"
    assert configure(src, user, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    # the tune's side: a variant tree with the trial's flags, configured as tune/setup.py does
    settings, _ = VariantSettings.from_user_tree(src, user, "", None)
    tree = VariantTree(tmp_path / "state", "worker-0", settings.cmake, settings.config)
    tree.write_flags("rf_bench", "CXX", "", ("-O3",))
    tree.configure(settings, "rf_bench", "CXX")
    decided = tree.decisions()
    assert decided.config == "Release" and len(decided.flags_sha256) == 64, decided
    assert not decided.relocatable and decided.device_lto_refusal, decided
    (measured,) = [_options(e["command"]) for e in compile_commands(tree.path) if e["file"].endswith("main.cpp")]
    assert "-O2" in measured and _last_optimization_level(measured) == "-O3", measured
    # the entry as the tune writes it: the build type and flags hash are the module's
    toml = src / "compileiq.toml"
    write_entry(
        toml,
        _host_entry(
            _gcc_version_major_minor(user) + ".0",
            target="rf_bench",
            flags=("-O3",),
            build_type=decided.config,
            flags_sha256=decided.flags_sha256,
            sources_sha256="",
        ),
    )
    (check,) = run_check(toml, src, user)
    assert check.applies and check.flags == ["-O3"] and check.stale == [], check
    assert "-O3" in check.why, check.why
    # the release build (the check's applied tree): what check says applies is what the compiler gets
    applied = tmp_path / "user" / "compileiq" / "check" / "tuned"
    (released,) = [_options(e["command"]) for e in compile_commands(applied) if e["file"].endswith("main.cpp")]
    assert "-DRELEASE_FLAGS_OWN" in released and "-O2" in released, released
    assert _last_optimization_level(released) == check.flags[-1], released
    assert released == measured, (released, measured)
    # another build type's flags: the module refuses the entry, and check says so (no Python copy of the rule)
    debug = tmp_path / "debug"
    assert configure(src, debug, "-DCMAKE_BUILD_TYPE=Debug").returncode == 0
    (refused,) = run_check(toml, src, debug)
    assert not refused.applies and "tuned for the Release build type" in refused.why, refused
    (plain,) = [
        _options(e["command"])
        for e in compile_commands(debug / "compileiq" / "check" / "tuned")
        if e["file"].endswith("main.cpp")
    ]
    assert "-O3" not in plain, plain

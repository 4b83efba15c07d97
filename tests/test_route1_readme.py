"""Issue 51: Route 1 exactly as the README prints it (the package found through the Python environment, one line
when nothing applies, presets that fail without the package), and what `build_type = ""` means and says."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compileiq_cmake.results.toml_io import _document, write_entry

from conftest import EXAMPLES, cmake_dir, commands_for, configure
from test_result_file import make_entry


def _host_entry(version: str, **kw) -> object:
    base = dict(
        target="host_kernels",
        language="CXX",
        arch="",
        compiler_id="GNU",
        compiler_version=version,
        flags=("-funroll-loops",),
        compute_capability="",
        device="cpu",
    )
    base.update(kw)
    return make_entry(**base)


def _host_project(tmp_path: Path) -> Path:
    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    return src


@pytest.mark.cmake
def test_an_entry_for_every_build_type_says_so_and_applies_to_debug_too(tmp_path, compiler_versions):
    """`build_type = ""` (no build type recorded): the flags apply to every build type, as docs/reference.md
    says, and the status line says "for every build type" (issue 51: it applied to Debug without saying so)."""
    src = _host_project(tmp_path)
    toml = src / "compileiq.toml"
    entry = _host_entry(compiler_versions.cxx_major_minor + ".0", build_type="")
    toml.write_text(_document([entry]))
    for build_type in ("Debug", "Release"):
        proc = configure(
            src, tmp_path / build_type, f"-DCMAKE_BUILD_TYPE={build_type}", f"-Dcompileiq_cmake_DIR={cmake_dir()}"
        )
        assert proc.returncode == 0, proc.stderr
        (line,) = [x for x in proc.stdout.splitlines() if "compileiq: applied" in x]
        assert "for every build type (build_type is empty)" in line, line
        (cmd,) = commands_for(tmp_path / build_type, "main.cpp")
        assert "-funroll-loops" in cmd
    # a Release entry still says nothing of every build type
    toml.write_text(_document([replace(entry, build_type="Release")]))
    proc = configure(src, tmp_path / "rel", "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert "every build type" not in proc.stdout and "compileiq: applied" in proc.stdout


# --- Route 1 as the README prints it (issue 51: it applied nothing, silently) ---

README = Path(__file__).resolve().parent.parent / "README.md"
MAIN_CPP = '#include <cstdio>\nint main() { std::printf("time_ms=1.0\\nPASS\\n"); return 0; }\n'


def _route1_blocks() -> tuple[str, list[str]]:
    """The README's Route 1 section: its CMake block and the command lines of its shell block (comments off)."""
    text = README.read_text()
    section = text.split("## In ten lines: a CUDA project that opts in", 1)[1].split("\n## ", 1)[0]
    cmake_block = section.split("```cmake\n", 1)[1].split("```", 1)[0]
    sh_block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return cmake_block, [line.split("#", 1)[0].strip() for line in sh_block.splitlines() if line.strip()]


def _fresh_project(tmp_path: Path, cmake_block: str) -> Path:
    """A small host C++ program named as the README's target, with the README's block verbatim."""
    src = tmp_path / "proj"
    src.mkdir()
    (src / "main.cpp").write_text(MAIN_CPP)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(nbody LANGUAGES CXX)\nadd_executable(nbody main.cpp)\n"
        + cmake_block
    )
    return src


def _environment(tmp_path: Path, with_package: bool) -> dict[str, str]:
    """PATH as a user's shell has it: the Python environment's bin first (pip install compileiq-cmake), or,
    without the package, only a directory with cmake (and ninja) in it."""
    venv_bin = Path(sys.executable).parent
    env = {**os.environ, "CMAKE_EXPORT_COMPILE_COMMANDS": "ON"}
    env.pop("CMAKE_PREFIX_PATH", None)
    if with_package:
        env["PATH"] = f"{venv_bin}{os.pathsep}{env['PATH']}"
        return env
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    for name in ("cmake", "ctest", "ninja"):
        found = shutil.which(name, path=f"{venv_bin}{os.pathsep}{env['PATH']}")
        if found and not (tools / name).exists():
            (tools / name).symlink_to(found)
    env["PATH"] = f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin"
    return env


def _sh(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.cmake
def test_route_1_as_the_readme_prints_it_applies_the_toml(tmp_path, compiler_versions):
    """The README's Route 1 blocks, copied from README.md, on a fresh project with the package installed in the
    Python environment (nothing else: no -Dcompileiq_cmake_DIR, no CMAKE_PREFIX_PATH): COMPILEIQ_TUNE=ON gives a
    compileiq_tune target (built dry: its tune needs the README's GPU), and the release configure applies a
    compileiq.toml written by the package's writer, or says in one line that there is none."""
    cmake_block, (tune_line, release_line) = _route1_blocks()
    assert "compileiq_tune(nbody" in cmake_block and "COMPILEIQ_TUNE=ON" in tune_line
    src = _fresh_project(tmp_path, cmake_block)
    env = _environment(tmp_path, with_package=True)
    configure_part, build_part = (p.strip() for p in tune_line.split("&&"))
    proc = _sh(configure_part, src, env)
    assert proc.returncode == 0 and "not used" not in proc.stderr, proc.stdout + proc.stderr
    dry = _sh(build_part + " -- -n", src, env)  # the target exists (make/ninja -n: nothing runs)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    # no compileiq.toml yet: the release configure says so in one line
    proc = _sh(release_line, src, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = [x for x in proc.stdout.splitlines() if "compileiq:" in x]
    assert len(said) == 1 and "no tuned flags applied: there is no" in said[0] and "compileiq.toml" in said[0], said
    shutil.rmtree(src / "rel")
    write_entry(
        src / "compileiq.toml",
        _host_entry(compiler_versions.cxx_major_minor + ".0", target="nbody", flags=("-funroll-loops",)),
    )
    proc = _sh(release_line, src, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compileiq: applied 1 tuned flag to nbody (CXX GNU" in proc.stdout, proc.stdout
    (cmd,) = commands_for(src / "rel", "main.cpp")
    assert "-funroll-loops" in cmd


@pytest.mark.cmake
def test_route_1_without_the_package_says_so_and_a_tune_configure_fails(tmp_path):
    """Without the package: the release configure says in one line that nothing is applied, and
    -DCOMPILEIQ_TUNE=ON stops the configure instead of leaving no compileiq_tune target ("not used")."""
    cmake_block, (tune_line, release_line) = _route1_blocks()
    src = _fresh_project(tmp_path, cmake_block)
    env = _environment(tmp_path, with_package=False)
    proc = _sh(release_line, src, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = [x for x in proc.stdout.splitlines() if "compileiq" in x]
    assert len(said) == 1 and "compileiq_cmake not found: no tuned flags applied" in said[0], proc.stdout
    proc = _sh(tune_line, src, env)
    assert proc.returncode != 0 and "COMPILEIQ_TUNE=ON needs compileiq_cmake" in proc.stderr, proc.stderr


@pytest.mark.cmake
def test_the_release_preset_fails_without_the_package(tmp_path):
    """`cmake --workflow --preset release` without the package (and without COMPILEIQ_CMAKE_DIR) exited 0 with
    "No tests were found!!!": the CI gate was quietly gone. Now the test step fails."""
    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    env = _environment(tmp_path, with_package=False)
    env.pop("COMPILEIQ_CMAKE_DIR", None)
    if not (tmp_path / "tools" / "ninja").exists() and not shutil.which("ninja", path=env["PATH"]):
        pytest.skip("ninja (the presets' generator) is not installed")
    proc = _sh("cmake --workflow --preset release", src, env)
    assert proc.returncode != 0 and "No tests were found" in proc.stdout + proc.stderr, proc.stdout + proc.stderr

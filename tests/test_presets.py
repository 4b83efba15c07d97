"""Issue 39: the CMake world users already have. The example's presets run a tune as one workflow
(`cmake --workflow --preset compileiq-tune`) and a release build that applies the TOML and gates it through
CTest (`--preset release`); the unmodified route (CMAKE_PROJECT_TOP_LEVEL_INCLUDES) tunes and applies on a
project configured with a Conan 2 toolchain and its generated presets, and with a chained toolchain file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import REPO, cmake_dir, configure, run_cli

GATE = REPO / "tests" / "projects" / "check_gate"
TUNE = (
    "--target",
    "gate_bench",
    "--bench",
    "gate_bench",
    "--workload",
    "--n 1000000",
    "--metric",
    "time_ms=([0-9.]+)",
    "--pass-regex",
    "PASS",
    "--include-flags",
    "opt_level",
    "--budget",
    "3",
    "--no-prior",
)


def _run(cmd: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900, env={**os.environ, **(env or {})})


@pytest.mark.cmake
@pytest.mark.slow
def test_the_example_presets_tune_as_one_workflow_and_release_applies_and_gates(host_example):
    lists = host_example / "CMakeLists.txt"
    lists.write_text(lists.read_text().replace("BUDGET 12", "BUDGET 3").replace('WORKLOADS "--n 768" "--n 1024"', ""))
    env = {"COMPILEIQ_CMAKE_DIR": str(cmake_dir())}
    tune = _run(["cmake", "--workflow", "--preset", "compileiq-tune"], host_example, env)
    assert tune.returncode == 0, tune.stdout[-3000:] + tune.stderr[-2000:]
    assert "target 1 of 1: host_kernels" in tune.stdout and "suite: 1 target" in tune.stdout, tune.stdout[-3000:]
    release = _run(["cmake", "--workflow", "--preset", "release"], host_example, env)
    assert release.returncode in (0, 8), release.stdout[-3000:] + release.stderr[-2000:]  # 8: a test failed
    out = release.stdout
    assert "compileiq_check_host_kernels" in out, out[-3000:]
    if (host_example / "compileiq.toml").is_file() and tomllib.loads((host_example / "compileiq.toml").read_text()).get(
        "entry"
    ):
        assert "applied" in out and "tuned flag" in out, out[-3000:]
    elif (host_example / "compileiq.toml").is_file():
        assert "nothing applied, nothing to re-measure" in out or "has no entry" in out, out[-3000:]
    else:  # the tune found nothing significantly faster (a loaded machine, 3 trials): no file, said by the configure
        assert "no tuned flags applied: there is no" in out, out[-3000:]
        assert "a tune writes it when it finds flags significantly faster" in out, out[-3000:]


def _tuned_and_applied(src: Path, build: Path, configure_again: list[str]) -> None:
    """Tune the gate project in `build`, then configure it again with `configure_again` plus the unmodified
    route's top-level include: the entry applies."""
    proc = run_cli("tune", "-S", str(src), "-B", str(build), *TUNE)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    entries = tomllib.loads((src / "compileiq.toml").read_text())["entry"]
    assert entries and entries[0]["flags"] in (["-O2"], ["-O3"]), entries
    apply = f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}"
    again = _run([*configure_again, apply, "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"], src)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "applied 1 tuned flag to gate_bench" in again.stdout, again.stdout[-3000:]
    commands = json.loads((build / "compile_commands.json").read_text())
    assert any(entries[0]["flags"][0] in c["command"] for c in commands)


@pytest.mark.cmake
@pytest.mark.slow
def test_the_unmodified_route_tunes_and_applies_with_a_conan_toolchain_and_its_presets(tmp_path):
    conan = shutil.which("conan")
    if conan is None:
        pytest.skip("conan is not installed (pip install conan)")
    src = tmp_path / "gate"
    shutil.copytree(GATE, src)
    (src / "conanfile.txt").write_text("[generators]\nCMakeToolchain\n[layout]\ncmake_layout\n")
    env = {"CONAN_HOME": str(tmp_path / "conan-home")}
    assert _run([conan, "profile", "detect"], src, env).returncode == 0
    installed = _run([conan, "install", ".", "--build=missing", "-s", "build_type=Release"], src, env)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    configured = _run(["cmake", "--preset", "conan-release"], src)
    assert configured.returncode == 0, configured.stdout[-2000:] + configured.stderr[-2000:]
    build = src / "build" / "Release"
    toolchain = next(
        line for line in (build / "CMakeCache.txt").read_text().splitlines() if line.startswith("CMAKE_TOOLCHAIN_FILE:")
    )
    assert toolchain.endswith("conan_toolchain.cmake")
    _tuned_and_applied(src, build, ["cmake", "--preset", "conan-release"])
    trees = list((build / "compileiq").glob("worker-*/CMakeCache.txt"))
    assert trees and all(toolchain in t.read_text() for t in trees)  # the trees built with the user's toolchain


@pytest.mark.cmake
def test_the_unmodified_route_tunes_and_applies_with_a_chained_toolchain_file(tmp_path):
    src = tmp_path / "gate"
    shutil.copytree(GATE, src)
    chain = tmp_path / "toolchains"
    chain.mkdir()
    (chain / "base.cmake").write_text('set(CMAKE_CXX_FLAGS_INIT "-DCHAINED_TOOLCHAIN=1")\n')
    (chain / "project.cmake").write_text('include("${CMAKE_CURRENT_LIST_DIR}/base.cmake")\n')
    build = tmp_path / "build"
    args = ["-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_TOOLCHAIN_FILE={chain / 'project.cmake'}"]
    assert configure(src, build, *args).returncode == 0
    _tuned_and_applied(src, build, ["cmake", "-S", str(src), "-B", str(build)])
    tree_commands = json.loads((build / "compileiq" / "worker-0" / "compile_commands.json").read_text())
    assert all("-DCHAINED_TOOLCHAIN=1" in c["command"] for c in tree_commands)  # the chain reached the trees

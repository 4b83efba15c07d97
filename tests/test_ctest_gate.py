"""Issue 39: the CTest gate. With COMPILEIQ_ADD_TESTS=ON every compileiq_tune() target gets a test that
re-measures its applied entry with the benchmark the project names (compileiq-cmake check --remeasure), with
RESOURCE_GROUPS for GPUs where CUDA is enabled; with nothing applied it passes and says so; an entry that is
no longer faster fails it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import HAVE_NVCC, cmake_dir, configure


def _ctest(build: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ctest", "--test-dir", str(build), *args], capture_output=True, text=True, timeout=900)


def _tests(build: Path) -> dict[str, dict]:
    doc = json.loads(_ctest(build, "--show-only=json-v1").stdout)
    return {
        t["name"]: {p["name"]: p["value"] for p in t.get("properties", ())} | {"command": t.get("command", [])}
        for t in doc["tests"]
    }


@pytest.mark.cmake
def test_the_gate_is_registered_passes_with_nothing_applied_and_fails_an_entry_that_is_not_faster(
    host_example, tmp_path
):
    build = tmp_path / "build"
    assert (
        configure(
            host_example,
            build,
            "-DCMAKE_BUILD_TYPE=Release",
            f"-Dcompileiq_cmake_DIR={cmake_dir()}",
            "-DCOMPILEIQ_ADD_TESTS=ON",
        ).returncode
        == 0
    )
    listed = _ctest(build, "-N")
    assert "compileiq_check_host_kernels" in listed.stdout, listed.stdout
    test = _tests(build)["compileiq_check_host_kernels"]
    assert test["LABELS"] == ["compileiq"] and "RESOURCE_GROUPS" not in test  # no CUDA: no GPU asked
    command = test["command"]
    assert "check" in command and "--remeasure" in command and "--if-present" in command
    assert f"--bench-arg={build}/host_kernels" in command and "--target" in command  # the project's own benchmark
    nothing = _ctest(build, "-R", "compileiq", "--output-on-failure", "-V")
    assert nothing.returncode == 0, nothing.stdout[-3000:]
    assert "nothing applied, nothing to re-measure" in nothing.stdout

    from compileiq_cmake.results.toml_io import write_entry

    from test_check import _entry  # an entry claiming a flag of no effect is 3x faster than the project's -O3 build

    write_entry(
        host_example / "compileiq.toml",
        _entry(
            build,
            target="host_kernels",
            flags=("-fvect-cost-model=cheap",),
            workloads=("--n 256",),
            metric="time_ms=([0-9.eE+-]+)",
        ),
    )
    failed = _ctest(build, "-R", "compileiq", "--output-on-failure")
    assert failed.returncode != 0, failed.stdout[-3000:]
    # not faster: "not significantly faster" or, on a loaded machine, "significantly slower"
    assert "host_kernels: re-measured with" in failed.stdout and "; FAIL: " in failed.stdout, failed.stdout[-3000:]


@pytest.mark.cmake
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_a_cuda_projects_gate_asks_ctest_for_one_gpu(tmp_path):
    src = tmp_path / "cu"
    (src / "src").mkdir(parents=True)
    (src / "src" / "k.cu").write_text(
        "#include <cstdio>\n__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"
        'int main() { std::printf("time_ms=1\\nPASS\\n"); return 0; }\n'
    )
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(cu LANGUAGES CXX CUDA)\nadd_executable(cu_bench src/k.cu)\n"
        "find_package(compileiq_cmake CONFIG REQUIRED)\n"
        'compileiq_tune(cu_bench BENCHMARK $<TARGET_FILE:cu_bench> METRIC "time_ms=([0-9.]+)" PASS_REGEX PASS)\n'
        'compileiq_add_test(cu_bench BENCHMARK $<TARGET_FILE:cu_bench> METRIC "time_ms=([0-9.]+)" GPUS 2 NAME cu_two)\n'
    )
    build = tmp_path / "build"
    proc = configure(
        src, build, "-DCMAKE_CUDA_ARCHITECTURES=90", f"-Dcompileiq_cmake_DIR={cmake_dir()}", "-DCOMPILEIQ_ADD_TESTS=ON"
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    tests = _tests(build)
    assert set(tests) == {"compileiq_check_cu_bench", "cu_two"}, tests
    groups = tests["compileiq_check_cu_bench"]["RESOURCE_GROUPS"]
    assert groups == [{"requirements": [{".type": "gpus", "slots": 1}]}], groups
    assert tests["cu_two"]["RESOURCE_GROUPS"][0]["requirements"][0]["slots"] == 2


@pytest.mark.cmake
def test_a_gate_in_a_nested_subdirectory_is_seen_by_ctest(tmp_path):
    """enable_testing() must hold in every directory from the top down to the one that registers the test, or
    ctest silently never reads it (a gate that tests nothing passes)."""
    src = tmp_path / "nested"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "main.cpp").write_text('#include <cstdio>\nint main() { std::printf("time_ms=1\\nPASS\\n"); }\n')
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(nested LANGUAGES CXX)\n"
        "find_package(compileiq_cmake CONFIG REQUIRED)\nadd_subdirectory(a)\n"
    )
    (src / "a" / "CMakeLists.txt").write_text("add_subdirectory(b)\n")
    (src / "a" / "b" / "CMakeLists.txt").write_text(
        "add_executable(deep main.cpp)\n"
        'compileiq_add_test(deep BENCHMARK $<TARGET_FILE:deep> METRIC "time_ms=([0-9.]+)")\n'
    )
    build = tmp_path / "build"
    proc = configure(src, build, f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "compileiq_check_deep" in _ctest(build, "-N").stdout

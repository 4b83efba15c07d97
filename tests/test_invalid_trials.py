"""Invalid trials are recorded with their reason and never chosen: a benchmark whose exit code lies
(always 0) prints FAIL when -ffast-math breaks it, while also running about 3x faster."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.variant_settings import VariantSettings

from conftest import configure, run_cli

TRAP = Path(__file__).parent / "projects" / "fastmath_trap"


@pytest.mark.cmake
def test_fast_math_that_breaks_the_output_is_never_chosen(tmp_path):
    src = tmp_path / "trap"
    shutil.copytree(TRAP, src)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    proc = run_cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        "trap",
        "--bench",
        "trap 400000",
        "--metric",
        "time_ms=([0-9.eE+-]+)",
        "--pass-regex",
        "^PASS$",
        "--include-flags",
        "fast_math,unroll_loops",
        "--budget",
        "4",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "INVALID pass_missing" in proc.stdout
    trials = next(iter(json.loads(run_cli("trials", "-B", str(build), "--json").stdout).values()))
    assert len(trials) == 4
    fast = [t for t in trials if "-ffast-math" in t["flags"]]
    assert len(fast) == 2 and all(t["status"] == "pass_missing" and "PASS_REGEX" in t["reason"] for t in fast)
    toml = src / "compileiq.toml"
    if toml.exists():
        assert "-ffast-math" not in toml.read_text()


@pytest.mark.cmake
def test_a_flag_that_fails_to_compile_is_a_failed_build_with_the_compiler_message(tmp_path):
    src = tmp_path / "trap"
    shutil.copytree(TRAP, src)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    settings, _ = VariantSettings.from_user_tree(src, build, "")
    tree = VariantTree(build / "compileiq", "worker-0", settings.cmake)
    tree.write_flags("trap", "CXX", "", ())
    tree.configure(settings, "trap", "CXX")
    tree.write_flags("trap", "CXX", "", ("-fno-such-option-xyz",))
    result = tree.build(("trap",), jobs=2, timeout=300)
    assert not result.ok and "-fno-such-option-xyz" in result.log_tail

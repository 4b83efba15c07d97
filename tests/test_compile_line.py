"""Issue 52: the project's own compile line as evidence. A host target whose compile commands end at -O0 has
its optimization level measured first, also when the -O0 comes after CMake's Release -O3 (a
target_compile_options(-O0): the command's last -O wins; read as "optimized" before, the tune spent its two
trials on -ffast-math and -fvect-cost-model while -O2 was 8x faster). A CUDA target with -G says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.tune.setup import setup

from conftest import HAVE_NVCC, configure

pytestmark = pytest.mark.cmake

MAIN = (
    "#include <cstdio>\nint main() { volatile double s = 0; for (int i = 0; i < 1000; ++i) s += i; "
    'std::printf("time_ms=1.0\\nPASS\\n"); return 0; }\n'
)


def _project(tmp_path: Path, options: str, language: str = "CXX", source: str = "main.cpp") -> Path:
    src = tmp_path / "p"
    src.mkdir()
    (src / source).write_text(
        MAIN if language == "CXX" else MAIN.replace("int main", "__global__ void k() {}\nint main")
    )
    (src / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION 3.24)\nproject(p LANGUAGES CXX {'CUDA' if language == 'CUDA' else ''})\n"
        + ("set(CMAKE_CUDA_ARCHITECTURES 90)\n" if language == "CUDA" else "")
        + f"add_executable(bench {source})\ntarget_compile_options(bench PRIVATE {options})\n"
    )
    return src


def _setup(tmp_path: Path, src: Path, build_type: str = "Release", cuda: bool = False):
    build = tmp_path / "build"
    proc = configure(src, build, f"-DCMAKE_BUILD_TYPE={build_type}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spec = TuneSpec(
        source_dir=src,
        build_dir=build,
        target="bench",
        benchmark=("bench",),
        metric=MetricSpec.parse("time_ms=([0-9.]+)", True),
        output=src / "compileiq.toml",
        pass_regex="PASS",
        cuda_arch="90" if cuda else "",
        workers=1,
        screen=not cuda,
    )
    lines: list[str] = []
    return setup(spec, lines.append), "\n".join(str(x) for x in lines)


def _opt_first(ts) -> bool:
    return next(d for d in ts.space.dimensions if d.name == "opt_level").measured_first


def test_an_O0_after_releases_O3_is_read_as_O0_and_the_level_is_measured_first(tmp_path):
    ts, log = _setup(tmp_path, _project(tmp_path, "-O0"))
    assert _opt_first(ts), log
    assert "compiles the target at -O0 (the last -O of its compile commands" in log, log


def test_a_release_build_at_O3_keeps_the_order(tmp_path):
    ts, log = _setup(tmp_path, _project(tmp_path, "-Wall"))
    assert not _opt_first(ts) and "measured first" not in log, log


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_a_cuda_target_with_device_debug_says_so(tmp_path):
    src = _project(tmp_path, "$<$<COMPILE_LANGUAGE:CUDA>:-G>", "CUDA", "main.cu")
    ts, log = _setup(tmp_path, src, cuda=True)
    assert "carry -G (device debug: no device code is optimized)" in log, log

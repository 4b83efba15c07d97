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
    # and unlike a learned prior's observations (optimized builds): first even where the prior predicts otherwise
    assert next(d for d in ts.space.dimensions if d.name == "opt_level").unlike_observed
    assert "compiles the target at -O0 (the last -O of its compile commands" in log, log


def test_a_release_build_at_O3_keeps_the_level_where_it_is(tmp_path):
    ts, log = _setup(tmp_path, _project(tmp_path, "-Wall -march=x86-64-v2"))
    assert not _opt_first(ts) and "measured first" not in log, log  # an instruction set named: nothing first


def _first(ts, name: str) -> bool:
    return next(d for d in ts.space.dimensions if d.name == name).measured_first


def test_a_target_that_names_no_instruction_set_has_march_native_measured_first(tmp_path):
    ts, log = _setup(tmp_path, _project(tmp_path, "-Wall"))
    assert _first(ts, "march_native") and not _first(ts, "opt_level"), log
    assert not any(d.unlike_observed for d in ts.space.dimensions)  # (the prior's observations name none either)
    assert "names no instruction set (no -march/-mcpu/-mtune" in log and "-march=native is measured first" in log


POPCOUNT = """#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>
int main() {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // set-up the metric does not see (300 ms once)
  std::vector<std::uint64_t> v(1 << 18);
  std::uint64_t x = 88172645463325252ull;
  for (auto& e : v) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; e = x; }
  auto t0 = std::chrono::steady_clock::now();
  std::uint64_t s = 0;
  for (int r = 0; r < 60; ++r)
    for (auto e : v) s += __builtin_popcountll(e ^ static_cast<std::uint64_t>(r));
  auto t1 = std::chrono::steady_clock::now();
  std::printf("time_ms=%.3f\\nchecksum=%llu\\nPASS\\n", std::chrono::duration<double, std::milli>(t1 - t0).count(),
              static_cast<unsigned long long>(s));
}
"""


def _tune_three(tmp_path: Path, options: str) -> tuple[dict, list]:
    """The popcount program (at -O3 a libgcc call per word; with this CPU's instructions one instruction, or
    vectorized) built with `options` after CMake's Release flags, tuned with room for 3 trials."""
    import json

    from compileiq_cmake.results.toml_io import read_entries

    from conftest import run_cli

    src = tmp_path / "p"
    src.mkdir()
    (src / "main.cpp").write_text(POPCOUNT)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(p LANGUAGES CXX)\nadd_executable(bench main.cpp)\n"
        f"target_compile_options(bench PRIVATE {options})\n"
    )
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    proc = run_cli(
        "tune", "-S", str(src), "-B", str(build), "--target", "bench", "--bench", "bench",
        "--metric", r"time_ms=([0-9.eE+-]+)", "--pass-regex", "PASS", "--compare-output", r"checksum=([0-9]+)",
        "--budget", "4", "--workers", "1", "--no-learn", "--json-summary", str(tmp_path / "s.json"),
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    doc = json.loads((tmp_path / "s.json").read_text())
    return doc, read_entries(src / "compileiq.toml")


@pytest.mark.slow
def test_an_O0_target_with_three_trials_measures_a_level_first_and_writes_its_win(tmp_path):
    doc, entries = _tune_three(tmp_path, "-O0")
    first = next(t for t in doc["trials"] if t["index"] == 1)
    assert {"-O2", "-O3"} & set(first["flags"]), first
    (entry,) = entries
    assert {"-O2", "-O3"} & set(entry.flags) and entry.speedup_ci[0] > 1.5, entry


@pytest.mark.slow
def test_an_O3_target_that_gains_only_from_march_gets_it_within_three_trials(tmp_path):
    doc, entries = _tune_three(tmp_path, "-Wall")
    first = next(t for t in doc["trials"] if t["index"] == 1)
    assert first["flags"] == ["-march=native"], first
    (entry,) = entries
    assert any(f.startswith("-march=") for f in entry.flags) and entry.speedup_ci[0] > 2.0, entry


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_a_cuda_target_with_device_debug_says_so(tmp_path):
    src = _project(tmp_path, "$<$<COMPILE_LANGUAGE:CUDA>:-G>", "CUDA", "main.cu")
    ts, log = _setup(tmp_path, src, cuda=True)
    assert "carry -G (device debug: no device code is optimized)" in log, log

"""Issue 38: the hot-file focus. A CUDA target of many files is tuned on the files that hold the benchmark's
kernel time: a trial rebuilds those files and relinks, never the rest of the target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compileiq_cmake.measure import kernel_times
from compileiq_cmake.measure.kernel_times import FileShare
from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.tune.focus import COVER, FOCUS_FILES, LEAST, MOST, hot_files

from conftest import HAVE_NVCC, configure, run_cli

NVCC = "nvcc"
# kernel files: with main.cu one past the focus's threshold (FOCUS_FILES CUDA files), k23 (SHARES) at least; each
# variant tree's first build compiles them all (60 once), and what is shown holds at any count past the threshold
FILES = max(FOCUS_FILES, 24)
SHARES = {7: 6_000_000, 23: 3_000_000, 11: 400_000, 19: 600_000}  # ns per kernel: k07 60%, k23 30%


@pytest.mark.unit
def test_the_hot_files_are_the_largest_shares_until_they_hold_most_of_the_kernel_time():
    def share(path, s):
        return FileShare(path, int(s * 1e6), s, (path,))

    shares = (share("a", 0.6), share("b", 0.3), share("c", 0.06), share("d", 0.04))
    assert [f.path for f in hot_files(shares)] == ["a", "b"]  # 90% held
    spread = tuple(share(f"f{i}", 0.1) for i in range(10))
    assert len(hot_files(spread)) == MOST and COVER > MOST * 0.1
    assert hot_files((share("a", LEAST / 2),)) == ()  # nothing worth a file's flags


def _project(root: Path) -> Path:
    """A generated CUDA target of FILES files (k00.cu, k01.cu, ..., one kernel each) whose host program stands
    in for the GPU run: it writes the CUPTI collector's file itself (SHARES)."""
    src = root / "many"
    (src / "src").mkdir(parents=True)
    for i in range(FILES):
        (src / "src" / f"k{i:02d}.cu").write_text(
            f'extern "C" __global__ void k{i:02d}(float *out, const float *in, int n) {{\n'
            "  int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (j < n) "
            f"{{ float x = in[j]; for (int k = 0; k < {8 + i % 5}; ++k) x = sinf(x) * 0.9f + 0.1f; out[j] = x; }}\n"
            "}\n"
        )
    lines = "".join(f"11\\t{ns}\\tk{i:02d}\\n" for i, ns in SHARES.items())
    (src / "src" / "main.cu").write_text(
        "#include <chrono>\n#include <cstdio>\n#include <cstdlib>\n"
        "int main() {\n"
        "  auto start = std::chrono::steady_clock::now();\n"
        "  volatile double acc = 0.0;\n"
        "  for (int i = 0; i < 2000000; ++i) acc = acc + 1.0 / (1.0 + i);\n"
        "  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();\n"
        '  if (const char *path = std::getenv("COMPILEIQ_KERNEL_TIMES")) {\n'
        '    if (FILE *f = std::fopen(path, "w")) {\n'
        f'      std::fprintf(f, "# compileiq kernel times v1\\n{lines}");\n'
        "      std::fclose(f);\n    }\n  }\n"
        '  std::printf("time_ms=%.6f\\n%s\\n", ms, acc > 0.0 ? "PASS" : "FAIL");\n'
        "  return 0;\n}\n"
    )
    sources = " ".join(f"src/k{i:02d}.cu" for i in range(FILES))
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(many LANGUAGES CXX CUDA)\n"
        f"add_executable(many_bench src/main.cu {sources})\n"
    )
    return src


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_a_focus_trial_of_a_many_file_target_rebuilds_only_its_hot_files(tmp_path, monkeypatch):
    from compileiq_cmake.flags.fingerprint import find_tool

    if find_tool("cuobjdump", NVCC) is None:
        pytest.skip("cuobjdump is not installed")
    try:
        kernel_times.build_collector(NVCC, tmp_path / "probe-cupti")
    except CompileIQError as exc:
        pytest.skip(str(exc))
    src = _project(tmp_path)
    build = src / "build"
    assert configure(src, build, "-DCMAKE_CUDA_ARCHITECTURES=90", "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    monkeypatch.setenv("COMPILEIQ_SIMULATE_GPUS", "1")  # the tune's runs need no GPU here
    proc = run_cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        "many_bench",
        "--bench",
        "many_bench",
        "--metric",
        "time_ms=([0-9.]+)",
        "--pass-regex",
        "PASS",
        "--cuda-arch",
        "90",
        "--budget",
        "4",
        "--workers",
        "3",
        "--exclude-flags",
        "device_lto",
        "--max-rounds",
        "6",
        "--no-prior",
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert f"static screening skipped: many_bench compiles {FILES + 1} CUDA files" in out
    assert (
        f"hot-file focus: many_bench compiles {FILES + 1} CUDA files; 90% of the benchmark's kernel time is in "
        "src/k07.cu 60%, src/k23.cu 30%" in out
    ), out[-3000:]
    assert (
        f"2 trials in flight instead of 3 (--workers): a variant tree's first build compiles all {FILES + 1} files"
        in out
    )
    # the search's other tree was built with the project's own flags before the search (tune.tree_warm)
    assert "hot-file focus ahead: worker-1 built with the project's own flags while the GPU profiles" in out
    assert "hot-file focus ahead: 1 variant tree built in " in out, out[-3000:]
    trials = next(iter(json.loads(run_cli("trials", "-B", str(build), "--json").stdout).values()))
    searched = [t for t in trials if t["flags"]]
    assert searched and all(f.startswith(("[src/k07.cu]", "[src/k23.cu]")) for t in searched for f in t["flags"])
    assert any(t["status"] == "ok" for t in searched), [t["reason"] for t in searched]
    hot = {"CMakeFiles/many_bench.dir/src/k07.cu.o", "CMakeFiles/many_bench.dir/src/k23.cu.o"}
    logs = build / "compileiq" / "logs"
    builds = {log.name: [line.split() for line in log.read_text().splitlines()] for log in logs.glob("*-compiled.log")}
    assert builds, sorted(p.name for p in logs.iterdir())
    for name, per_build in builds.items():  # the build tool's own lines: what each build compiled
        assert len(per_build[0]) == FILES + 1, (name, len(per_build[0]))  # the tree's first build: every file
        later = {obj for objects in per_build[1:] for obj in objects}
        assert later <= hot, (name, sorted(later - hot)[:5])
    assert any(hot & set(objects) for per_build in builds.values() for objects in per_build[1:])  # trials rebuilt them
    # the hot files' flags reach nvcc through files of their own: CMake runs again only when a hot file gets flags
    # for the first time in a tree (at most once per hot file), not at every trial
    without_cmake = 0  # trial builds that compiled a hot file with CMake not running again
    for name, per_build in builds.items():
        reruns = (logs / name.replace("-compiled.log", "-reconfigured.log")).read_text().split()
        assert len(reruns) == len(per_build) and reruns.count("1") <= len(hot), (name, reruns)
        without_cmake += sum(
            1 for again, objects in zip(reruns[1:], per_build[1:], strict=False) if again == "0" and hot & set(objects)
        )
    assert without_cmake >= 1, builds


@pytest.mark.unit
def test_the_interaction_rules_apply_to_each_files_flags_under_the_focus():
    """A focus space's values are `[path]flag` tokens; the nvcc rules (a redundant flag dropped, a repair
    added) apply to each file's flags as they do to the target's."""
    from dataclasses import replace

    from compileiq_cmake.flags.space import load_space
    from compileiq_cmake.model import build_flags

    space = load_space("nvcc", "NVIDIA", "13.0.88", (), (), arch="90")
    plain = {d.name: d for d in space.dimensions}
    fast = next(i for i, v in enumerate(plain["use_fast_math"].values) if v)
    ftz = next(i for i, v in enumerate(plain["ftz"].values) if v) if "ftz" in plain else None
    focused = replace(
        space,
        dimensions=tuple(
            replace(
                d,
                values=tuple(
                    tuple(build_flags.source_token(p, t) for p in ("a.cu", "b.cu") for t in v) for v in d.values
                ),
            )
            for d in space.dimensions
        ),
    )
    choice = {"use_fast_math": fast, **({"ftz": ftz} if ftz is not None else {})}
    target = space.flagset(choice).flags
    per_file = focused.flagset(choice).flags
    for path in ("a.cu", "b.cu"):
        mine = tuple(build_flags.parse_token(t)[1] for t in per_file if build_flags.parse_token(t)[0] == path)
        assert sorted(mine) == sorted(target), (mine, target)
    assert focused.flagset_from_flags(list(per_file)).flags == per_file  # restored from a store


@pytest.mark.unit
def test_the_ablation_of_a_focus_winner_removes_each_dimensions_per_file_tokens_and_repeats_none():
    """H200, biglib: under the focus every dimension's value is per-file tokens, and the ablation took them for
    the per-file stage's own: removing a dimension put its tokens back (every step "same device code"), and
    the written entry listed each file's flags up to five times, -Xptxas=-O1 among them after its step said
    "dropped". Here every step builds the same device code: each dimension's step removes exactly its tokens,
    the minimal set is empty, and a per-file stage's own token beside a plain space is still its own step."""
    from dataclasses import replace

    from compileiq_cmake.decide.ablation import ablate
    from compileiq_cmake.flags.space import load_space
    from compileiq_cmake.model import build_flags
    from compileiq_cmake.model.records import BuildResult

    space = load_space("nvcc", "NVIDIA", "13.0.88", ("use_fast_math", "store_cache", "fmad"), (), arch="90")
    files = ("hot/a.cu", "hot/b.cu")
    focused = replace(
        space,
        dimensions=tuple(
            replace(d, values=tuple(tuple(build_flags.source_token(p, t) for p in files for t in v) for v in d.values))
            for d in space.dimensions
        ),
    )
    choice = {d.name: next(i for i, v in enumerate(d.values) if v) for d in focused.dimensions}
    winner = focused.flagset(choice)
    built: list[tuple[str, ...]] = []

    def build(tree, flagset):
        built.append(flagset.flags)
        return BuildResult(ok=True, seconds=0.1, fingerprint="same")

    minimal, contributions = ablate(None, build, ("t0", "t1"), focused, winner, 0.01, 0, lambda e: None)
    assert minimal.flags == () and not any(c.kept for c in contributions), (minimal.flags, contributions)
    for c in contributions:  # each step: exactly its dimension's tokens, on both files
        assert len(c.flags) == 2 and {build_flags.parse_token(t)[0] for t in c.flags} == set(files), c
    assert all(len(flags) == len(set(flags)) for flags in built), [f for f in built if len(f) != len(set(f))]
    own = build_flags.source_token("hot/a.cu", "-Xptxas=-O1")
    plain = space.flagset(choice)
    with_own = replace(plain, flags=plain.flags + (own,))
    minimal, contributions = ablate(None, build, ("t0", "t1"), space, with_own, 0.01, 0, lambda e: None)
    assert minimal.flags == () and [c.flags for c in contributions if c.dimension.startswith("per-file")] == [(own,)]

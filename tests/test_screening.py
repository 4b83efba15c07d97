"""Static screening: the target's nvcc commands re-run to cubins per single flag value, without CMake."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compileiq_cmake.flags import load_space
from compileiq_cmake.flags.fingerprint import find_tool
from compileiq_cmake.flags.screen_cache import ScreenCache
from compileiq_cmake.flags.screen_compile import cubin_command
from compileiq_cmake.flags.screening import SAME_AS_BASELINE, screen, screen_target
from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.project.nvcc_command import project_flags

from conftest import EXAMPLES, PROJECTS, needs_nvcc, run_cli

needs_cuobjdump = pytest.mark.skipif(
    find_tool("cuobjdump") is None,
    reason="cuobjdump missing: pip install nvidia-cuda-cuobjdump",
)
NINJA_COMMAND = [
    "/usr/local/bin/nvcc",
    "-forward-unknown-to-host-compiler",
    "-I/src/include",
    "--expt-relaxed-constexpr",
    "-O3",
    "-DNDEBUG",
    "-std=c++17",
    "--generate-code=arch=compute_90,code=[sm_90]",
    "-Xcompiler=-fPIE",
    "-MD",
    "-MT",
    "CMakeFiles/k.dir/src/k.cu.o",
    "-MF",
    "CMakeFiles/k.dir/src/k.cu.o.d",
    "-x",
    "cu",
    "-c",
    "/src/k.cu",
    "-o",
    "CMakeFiles/k.dir/src/k.cu.o",
]


@pytest.mark.unit
def test_cubin_command_rewrites_outputs_dependencies_and_architectures():
    cmd = cubin_command(NINJA_COMMAND, Path("/tmp/out.cubin"), "90", ("-Xptxas=-O1",))
    assert cmd[0] == "/usr/local/bin/nvcc" and cmd[-5:] == [
        "-arch=sm_90",
        "-cubin",
        "-o",
        "/tmp/out.cubin",
        "-Xptxas=-O1",
    ]
    for gone in (
        "-c",
        "-MD",
        "-MT",
        "-MF",
        "CMakeFiles/k.dir/src/k.cu.o",
        "--generate-code=arch=compute_90,code=[sm_90]",
    ):
        assert gone not in cmd
    assert "/src/k.cu" in cmd and "--expt-relaxed-constexpr" in cmd and "-Xcompiler=-fPIE" in cmd
    # architecture from the command when none is given; several -> a one-line error
    assert "-arch=sm_90" in cubin_command(NINJA_COMMAND, Path("o"), "", ())
    two = NINJA_COMMAND + ["-gencode", "arch=compute_80,code=sm_80"]
    with pytest.raises(CompileIQError, match="--cuda-arch"):
        cubin_command(two, Path("o"), "", ())
    assert cubin_command(["nvcc", "-dc", "k.cu", "-ok.o"], Path("o"), "90", ())[:3] == ["nvcc", "-rdc=true", "k.cu"]


@pytest.mark.unit
def test_project_flags_leave_out_outputs_and_sources():
    flags = project_flags([{"file": "/src/k.cu", "command": " ".join(NINJA_COMMAND), "directory": "/b"}])
    assert (
        "--expt-relaxed-constexpr" in flags and "/src/k.cu" not in flags and "CMakeFiles/k.dir/src/k.cu.o" not in flags
    )


@pytest.mark.cuda
@needs_nvcc
@needs_cuobjdump
def test_screen_a_single_file_drops_values_without_effect_and_failures(tmp_path: Path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(const int* a, int* c) { c[threadIdx.x] = a[threadIdx.x] * 3; }\n")
    entry = {
        "directory": str(tmp_path),
        "file": str(src),
        "arguments": [shutil.which("nvcc"), "-c", str(src), "-o", "k.o"],
    }
    space = load_space("nvcc", "NVIDIA", "13.0", include=("store_cache", "prec_div", "fmad", "ptxas_opt_level"))
    result = screen(space, [entry], "90", cache_dir=tmp_path / "cache")
    rows = {(r.dimension, " ".join(r.value)): r for r in result.rows}
    assert rows[("store_cache", "-Xptxas=-dscm=cg")].kept
    assert rows[("prec_div", "--prec-div=false")].reason == SAME_AS_BASELINE  # integer kernel: no division
    assert not rows[("fmad", "--fmad=false")].kept
    assert {d.name for d in result.space.dimensions} == {"store_cache"} | (
        {"ptxas_opt_level"} & {d.name for d in result.space.dimensions}
    )
    assert result.points_after < result.points_before and result.seconds > 0
    assert not any(tmp_path.joinpath("cache").iterdir()), "cubins of the screen are cleaned up"


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.slow
@needs_nvcc
@needs_cuobjdump
@pytest.mark.parametrize("example,target", [("cuda_stencil", "stencil_kernels"), ("cuda_nbody", "nbody")])
def test_screening_the_examples(tmp_path: Path, example: str, target: str):
    ts = screen_target(EXAMPLES / example, tmp_path / "build", target, "90")
    r = ts.result
    rows = {(row.dimension, " ".join(row.value)): row for row in r.rows}
    assert r.points_after < r.points_before / 10
    assert len(r.baseline.kernels) == 1 and r.baseline.kernels[0].registers > 0
    assert all(rows[("store_cache", f"-Xptxas=-dscm={v}")].kept for v in ("wt", "cg", "cs"))  # stores exist
    assert rows[("ptxas_opt_level", "-Xptxas=-O2")].reason == SAME_AS_BASELINE  # O2 == O3 here
    assert rows[("use_fast_math", "--use_fast_math")].kept
    assert not rows[("maxrregcount", "-maxrregcount=255")].kept
    kept = [row for row in r.rows if row.kept]
    assert all(row.effects for row in kept)
    assert (tmp_path / "build" / "compileiq" / "worker-0" / "compile_commands.json").is_file()


@pytest.mark.cmake
@pytest.mark.cuda
@needs_nvcc
@needs_cuobjdump
def test_space_command_prints_the_screened_space(tmp_path: Path):
    out = run_cli(
        "space",
        "-S",
        str(EXAMPLES / "cuda_stencil"),
        "-B",
        str(tmp_path / "b"),
        "--target",
        "stencil_kernels",
        "--cuda-arch",
        "90",
        "--include-flags",
        "store_cache,restrict,ptxas_opt_level",
    )
    assert out.returncode == 0, out.stderr
    assert "screened flag space" in out.stdout and "kept    store_cache" in out.stdout
    assert "same device code as the project's own build" in out.stdout
    bad = run_cli("space", "--target", "stencil_kernels")
    assert bad.returncode == 2 and "needs -S" in bad.stderr
    assert run_cli("space", "nvcc").returncode == 0


def _entries(src: Path, build: Path) -> list[dict]:
    """compile_commands.json entries of tests/projects/screen_tus as CMake writes them for nvcc (main.cpp
    marked CUDA: -x cu), object and dependency files inside `build`."""
    nvcc = shutil.which("nvcc")
    build.mkdir(parents=True, exist_ok=True)
    out = []
    for name in ("main.cpp", "a.cu", "b.cu"):
        obj = f"CMakeFiles/screen_app.dir/src/{name}.o"
        out.append(
            {
                "directory": str(build),
                "file": str(src / "src" / name),
                "arguments": [
                    nvcc,
                    f"-I{src}/include",
                    "-O3",
                    "-std=c++17",
                    "--generate-code=arch=compute_90,code=[sm_90]",
                    "-MD",
                    "-MT",
                    obj,
                    "-MF",
                    f"{obj}.d",
                    "-x",
                    "cu",
                    "-c",
                    str(src / "src" / name),
                    "-o",
                    obj,
                ],
            }
        )
    return out


@pytest.mark.cuda
@needs_nvcc
@needs_cuobjdump
def test_screening_a_multi_file_project_skips_host_files_and_is_cached_per_file(tmp_path: Path):
    src = tmp_path / "screen_tus"
    shutil.copytree(PROJECTS / "screen_tus", src)
    space = load_space("nvcc", "NVIDIA", "13.0", include=("store_cache", "prec_div", "fmad"))
    n_values = sum(len(d.values) - 1 for d in space.dimensions)
    cache = ScreenCache.in_dir(tmp_path / "user-cache")
    cold = screen(space, _entries(src, tmp_path / "build"), "90", cache=cache)
    assert cold.no_kernel_files == ("main.cpp",) and set(cold.screened_files) == {"a.cu", "b.cu"}
    assert cold.compiles == 3 + 2 * n_values and cold.cache_hits == 0
    rows = {" ".join(r.value): r for r in cold.rows}
    assert rows["--prec-div=false"].kept and {e.kernel.split(":")[1] for e in rows["--prec-div=false"].effects} == {
        "_Z8a_kernelPfPKfi"
    }
    # a second tune, another build tree: nothing compiled, the same outcome
    warm = screen(
        space, _entries(src, tmp_path / "other-build"), "90", cache=ScreenCache.in_dir(tmp_path / "user-cache")
    )
    assert warm.compiles == 0 and warm.cache_hits == 3 + 2 * n_values
    assert [(r.kept, r.reason, r.effects) for r in warm.rows] == [(r.kept, r.reason, r.effects) for r in cold.rows]
    # a_ops.cuh is included by a.cu alone: exactly its own build and its values compile again
    header = src / "include" / "a_ops.cuh"
    header.write_text(header.read_text().replace("3.0f", "5.0f"))
    edited = screen(space, _entries(src, tmp_path / "build"), "90", cache=cache)
    assert edited.compiles == 1 + n_values and edited.cache_hits == 2 + n_values
    print(
        f"screen_tus: cold {cold.compiles} compiles {cold.seconds:.1f} s; warm {warm.compiles} compiles "
        f"{warm.cache_hits} hits {warm.seconds:.1f} s; after the header edit {edited.compiles} compiles "
        f"{edited.seconds:.1f} s"
    )

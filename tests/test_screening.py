"""Static screening: the target's nvcc commands re-run to cubins per single flag value, without CMake."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.flags.fingerprint import find_tool
from compileiq_cmake.flags import load_space
from compileiq_cmake.project.nvcc_command import project_flags
from compileiq_cmake.flags.screening import SAME_AS_BASELINE, cubin_command, screen, screen_target

from conftest import EXAMPLES, needs_nvcc, run_cli

needs_cuobjdump = pytest.mark.skipif(
    find_tool("cuobjdump") is None or find_tool("nvdisasm") is None,
    reason="cuobjdump/nvdisasm missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm",
)
NINJA_COMMAND = [
    "/usr/local/bin/nvcc", "-forward-unknown-to-host-compiler", "-I/src/include", "--expt-relaxed-constexpr", "-O3",
    "-DNDEBUG", "-std=c++17", "--generate-code=arch=compute_90,code=[sm_90]", "-Xcompiler=-fPIE", "-MD", "-MT",
    "CMakeFiles/k.dir/src/k.cu.o", "-MF", "CMakeFiles/k.dir/src/k.cu.o.d", "-x", "cu", "-c", "/src/k.cu", "-o",
    "CMakeFiles/k.dir/src/k.cu.o",
]


@pytest.mark.unit
def test_cubin_command_rewrites_outputs_dependencies_and_architectures():
    cmd = cubin_command(NINJA_COMMAND, Path("/tmp/out.cubin"), "90", ("-Xptxas=-O1",))
    assert cmd[0] == "/usr/local/bin/nvcc" and cmd[-5:] == ["-arch=sm_90", "-cubin", "-o", "/tmp/out.cubin", "-Xptxas=-O1"]
    for gone in ("-c", "-MD", "-MT", "-MF", "CMakeFiles/k.dir/src/k.cu.o", "--generate-code=arch=compute_90,code=[sm_90]"):
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
    assert "--expt-relaxed-constexpr" in flags and "/src/k.cu" not in flags and "CMakeFiles/k.dir/src/k.cu.o" not in flags


@pytest.mark.cuda
@needs_nvcc
@needs_cuobjdump
def test_screen_a_single_file_drops_values_without_effect_and_failures(tmp_path: Path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(const int* a, int* c) { c[threadIdx.x] = a[threadIdx.x] * 3; }\n")
    entry = {"directory": str(tmp_path), "file": str(src), "arguments": [shutil.which("nvcc"), "-c", str(src), "-o", "k.o"]}
    space = load_space("nvcc", "NVIDIA", "13.0", include=("store_cache", "prec_div", "fmad", "ptxas_opt_level"))
    result = screen(space, [entry], "90", cache_dir=tmp_path / "cache")
    rows = {(r.dimension, " ".join(r.value)): r for r in result.rows}
    assert rows[("store_cache", "-Xptxas=-dscm=cg")].kept
    assert rows[("prec_div", "--prec-div=false")].reason == SAME_AS_BASELINE  # integer kernel: no division
    assert not rows[("fmad", "--fmad=false")].kept
    assert {d.name for d in result.space.dimensions} == {"store_cache"} | ({"ptxas_opt_level"} & {d.name for d in result.space.dimensions})
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
    out = run_cli("space", "-S", str(EXAMPLES / "cuda_stencil"), "-B", str(tmp_path / "b"), "--target", "stencil_kernels",
                  "--cuda-arch", "90", "--include-flags", "store_cache,restrict,ptxas_opt_level")
    assert out.returncode == 0, out.stderr
    assert "screened flag space" in out.stdout and "kept    store_cache" in out.stdout
    assert "same device code as the project's own build" in out.stdout
    bad = run_cli("space", "--target", "stencil_kernels")
    assert bad.returncode == 2 and "needs -S" in bad.stderr
    assert run_cli("space", "nvcc").returncode == 0

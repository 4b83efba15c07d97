"""A project the tool has never seen, hostile in every way at once, tuned without editing it: old
cmake_minimum_required, -arch by hand in CMAKE_CUDA_FLAGS (top level and a subdirectory), fast-math
already on, -rdc=true."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.tune.setup import setup
from compileiq_cmake.tune.trial import build_variant as _build

from conftest import configure, needs_nvcc

PROJECT = Path(__file__).parent / "projects" / "hostile_cuda"


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.slow
@needs_nvcc
def test_hostile_cuda_project_is_tuned_around_its_own_flags(tmp_path):
    src = tmp_path / "hostile"
    shutil.copytree(PROJECT, src)
    build = tmp_path / "build"
    proc = configure(src, build, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_POLICY_VERSION_MINIMUM=3.5")
    assert proc.returncode == 0, proc.stderr
    spec = TuneSpec(
        source_dir=src,
        build_dir=build,
        target="hostile_kernels",
        benchmark=("hostile_bench",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=src / "compileiq.toml",
        pass_regex="PASS",
        cuda_arch="90",
        workers=1,
    )
    lines: list[str] = []
    ts = setup(spec, lines.append)
    names = {d.name for d in ts.space.dimensions}
    assert not names & {"use_fast_math", "ftz", "prec_div", "prec_sqrt"}, "fast-math is already on: not tuned again"
    assert any("already builds with --use_fast_math" in ln for ln in lines), lines
    assert any(ln.startswith("compileiq: screening:") for ln in lines)
    result = _build(ts, ts.trees[0], ts.space.baseline())
    assert result.ok, result.log_tail
    assert result.fingerprint and result.kernels, "device code of an -rdc=true static library is fingerprinted"
    for entry in ts.trees[0].compile_commands(ts.project.target.sources):
        tokens = shlex.split(entry["command"])
        archs = [t for t in tokens if t.startswith(("-arch", "--generate-code", "-gencode"))]
        assert archs and not [
            t for t in archs if any(a in t for a in ("sm_75", "compute_75", "sm_80", "compute_80"))
        ], f"hand-written architectures (top level sm_75, subdirectory sm_80) must be stripped: {archs}"
        assert "-rdc=true" in tokens or "--relocatable-device-code=true" in tokens or "-dc" in tokens

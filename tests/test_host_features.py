"""Issue 52: what the prior reads of host code (flags/host_features.py): the instruction mix of the target's
objects in the classes of the CUDA features; a math library call counts as a special-function instruction
(what fast math changes), a libgcc bit helper as the integer instruction it becomes with the CPU's own set."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from compileiq_cmake.flags.features import TargetFeatures
from compileiq_cmake.flags.host_features import object_features, parse_objdump
from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.results.store import TrialStore
from compileiq_cmake.tune import prior_use
from compileiq_cmake.tune.setup import setup
from compileiq_cmake.tune.trial import build_variant

from conftest import configure

OBJDUMP = """
t.o:     file format elf64-x86-64

Disassembly of section .text:

0000000000000000 <_Z4workPfi>:
   0:	push   %rbx
   1:	movss  (%rdi),%xmm0
   5:	call   a <_Z4workPfi+0xa>
			6: R_X86_64_PLT32	expf-0x4
   a:	mulss  %xmm1,%xmm0
   e:	vfmadd231ps %ymm2,%ymm1,%ymm0
  13:	movss  %xmm0,(%rdi)
  17:	call   1c <_Z4workPfi+0x1c>
			18: R_X86_64_PLT32	__popcountdi2-0x4
  1c:	add    $0x1,%eax
  1f:	jne    1 <_Z4workPfi+0x1>
  21:	ret

0000000000000030 <main>:
  30:	cvtsi2sd %eax,%xmm0
  34:	call   39 <main+0x9>
			35: R_X86_64_PLT32	_Z4workPfi-0x4
  39:	ret
"""


@pytest.mark.unit
def test_the_objdump_of_an_object_is_read_per_function_in_the_cuda_classes():
    work, main = parse_objdump(OBJDUMP, prefix="t.o")
    assert work.name == "t.o:_Z4workPfi" and work.instructions == 10 and main.instructions == 3
    assert work.mix["mufu"] == 1 and work.mix["call"] == 1  # expf: a math call; __popcountdi2: not a call
    assert work.mix["int"] == 2  # the popcount helper and the add
    assert work.mix["fp32"] == 2 and work.mix["fma"] == 1  # mulss, the packed single FMA
    assert work.mix["ld_global"] == 1 and work.mix["st_global"] == 1 and work.mix["branch"] == 1
    assert main.mix == {"conv": 1, "call": 1}  # a call to the project's own function is a call
    vec = TargetFeatures(kernels=(work, main), units=1, arch="").vector()
    assert vec["share_mufu"] == pytest.approx(1 / 13) and vec["log2_kernels"] == 1.0


@pytest.mark.unit
def test_without_objdump_the_features_are_refused_in_one_line(tmp_path):
    with pytest.raises(CompileIQError, match="objdump"):
        object_features([tmp_path / "x.o"], objdump=str(tmp_path / "no-objdump"))


SOURCES = {
    "transcend": "#include <cmath>\nfloat f(const float* x, int n) { float s = 0; "
    "for (int i = 0; i < n; ++i) s += std::exp(x[i]) * std::log(x[i] + 1.f); return s; }\n",
    "bits": "unsigned long f(const unsigned long* x, int n) { unsigned long s = 0; "
    "for (int i = 0; i < n; ++i) s += __builtin_popcountl(x[i] ^ x[i + 1]); return s; }\n",
}


@pytest.mark.cmake
@pytest.mark.skipif(shutil.which("objdump") is None or shutil.which("g++") is None, reason="needs g++ and objdump")
def test_real_objects_tell_math_heavy_code_from_bit_twiddling(tmp_path):
    vec = {}
    for name, code in SOURCES.items():
        (tmp_path / f"{name}.cpp").write_text(code)
        obj = tmp_path / f"{name}.o"
        subprocess.run(["g++", "-O3", "-c", str(tmp_path / f"{name}.cpp"), "-o", str(obj)], check=True)
        vec[name] = TargetFeatures(kernels=tuple(object_features([obj])), units=1, arch="").vector()
    assert vec["transcend"]["share_mufu"] > 0 and vec["bits"]["share_mufu"] == 0
    assert vec["bits"]["share_call"] == 0 and vec["bits"]["share_int"] > vec["transcend"]["share_int"]
    assert vec["transcend"]["share_fp32"] > 0 and vec["bits"]["share_fp32"] == 0


@pytest.mark.cmake
@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_a_host_tune_reads_its_baseline_objects_and_keeps_the_features_for_a_resume(tmp_path, host_example):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    spec = TuneSpec(
        source_dir=host_example,
        build_dir=build,
        target="host_kernels",
        benchmark=("host_kernels",),
        metric=MetricSpec.parse("time_ms=([0-9.]+)", True),
        output=host_example / "compileiq.toml",
        pass_regex="PASS",
        workers=1,
        screen=False,
    )
    lines: list[str] = []
    ts = setup(spec, lines.append)
    assert build_variant(ts, ts.baseline_tree, ts.space.baseline()).ok
    store = TrialStore(tmp_path / "trials.sqlite", spec.identity())
    features = prior_use._features(ts, store, True, lines.append)
    assert features is not None and features["share_fp32"] > 0 and features["share_int"] > 0
    assert features["log2_instructions"] > 5 and not any("instruction mix is unknown" in str(x) for x in lines)
    assert store.load_result("prior_features") == features

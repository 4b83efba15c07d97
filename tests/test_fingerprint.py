"""Device-code fingerprints: the machine code words per function, not the cubin bytes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from compileiq_cmake.flags.fingerprint import DeviceFingerprint, find_tool, fingerprint, parse_elf, parse_res_usage

from conftest import needs_nvcc

NVCC = shutil.which("nvcc") or "nvcc"
KERNEL = """
__global__ void divide(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] / b[i] + sqrtf(a[i]);
}
__global__ void scale(int* c, int s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] *= s;
}
"""

needs_cuobjdump = pytest.mark.skipif(
    find_tool("cuobjdump") is None,
    reason="cuobjdump missing: pip install nvidia-cuda-cuobjdump",
)


def _compile(tmp: Path, name: str, *flags: str, kind: str = "-cubin") -> Path:
    src = tmp / "k.cu"
    if not src.is_file():
        src.write_text(KERNEL)
    out = tmp / name
    subprocess.run([NVCC, "-arch=sm_90", kind, "-o", str(out), str(src), *flags], check=True, capture_output=True)
    return out


ELF_DUMP = """
Fatbin elf code:
================
arch = sm_90
code version = [1,8]
identifier = /home/someone/build/k.cu

64-bit ELF: type=ET_REL, ABI=8, sm=90, toolkit=13.0, flags=0x6005a04
Sections:
Index Offset   Size ES Align                      Type    Flags Link     Info Name
    e    780    900  0 80                     PROGBITS        6    3        b .text._Z1kv

.section .note.nv.tkinfo
\tTool Name: ptxas
\tTool Options: -arch sm_90 -O3

.section .symtab
   0xb                0            0x900  FUNC          GLOBAL  DEFAULT    ENTRY                                0xe
    _Z1kv

.text._Z1kv
lmem=0\tsmem=0
0xff017b82 0x00000a00 0x00000800 0x000e2200
0x00027919 0x00000000 0x00002500 0x000e6200

.section .rela.text._Z1kv\tRELA
0xc0    _Z6helperf    R_CUDA_ABS55_16_34    0x0
0xa0    _Z1kv    R_CUDA_ABS32_LO_32    0xd0

Resource usage:
 Common:
  GLOBAL:24
 Function _Z1kv:
  REG:21 STACK:32 SHARED:0 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


@pytest.mark.unit
def test_the_machine_code_words_count_and_the_notes_paths_and_offsets_do_not():
    """Issue 21 (driver overhead): the fingerprint hashes each function's instruction words and relocations
    from the ELF dump (no disassembly). The ptxas options in the notes, the source path, section offsets and
    the relocations' order leave it unchanged; one scheduling bit of one instruction changes it."""
    [(key, digest, count)] = parse_elf(ELF_DUMP)
    assert key == "sm_90:_Z1kv" and count == 2 and len(digest) == 64
    same = (
        ELF_DUMP.replace("-O3", "-O1")
        .replace("/home/someone", "/elsewhere")
        .replace("780    900", "7c0    900")
        .replace(
            "0xc0    _Z6helperf    R_CUDA_ABS55_16_34    0x0\n0xa0    _Z1kv    R_CUDA_ABS32_LO_32    0xd0",
            "0xa0    _Z1kv    R_CUDA_ABS32_LO_32    0xd0\n0xc0    _Z6helperf    R_CUDA_ABS55_16_34    0x0",
        )
    )
    assert same != ELF_DUMP and parse_elf(same)[0][1] == digest
    scheduled = ELF_DUMP.replace("0x000e6200", "0x000e6a00")  # another stall/barrier field, same SASS text
    assert parse_elf(scheduled)[0][1] != digest
    called = ELF_DUMP.replace("_Z6helperf", "_Z6otherf")
    assert parse_elf(called)[0][1] != digest
    assert parse_res_usage(ELF_DUMP, "sm_90")["sm_90:_Z1kv"]["REG"] == 21


@pytest.mark.cuda
@needs_nvcc
@needs_cuobjdump
def test_ptxas_verbose_changes_the_cubin_bytes_but_not_the_fingerprint(tmp_path: Path):
    plain = _compile(tmp_path, "plain.cubin")
    verbose = _compile(tmp_path, "verbose.cubin", "-Xptxas=-v")
    assert plain.read_bytes() != verbose.read_bytes()
    assert fingerprint(plain) == fingerprint(verbose)


@pytest.mark.cuda
@needs_nvcc
@needs_cuobjdump
def test_fast_math_changes_the_fingerprint_of_the_dividing_kernel_only(tmp_path: Path):
    plain = fingerprint(_compile(tmp_path, "plain.cubin"))
    fast = fingerprint(_compile(tmp_path, "fast.cubin", "--use_fast_math"))
    assert plain.digest != fast.digest
    assert plain.kernel("sm_90:_Z6dividePKfS0_Pfi").sass_sha256 != fast.kernel("sm_90:_Z6dividePKfS0_Pfi").sass_sha256
    assert plain.kernel("sm_90:_Z5scalePiii").sass_sha256 == fast.kernel("sm_90:_Z5scalePiii").sass_sha256


@pytest.mark.cuda
@needs_nvcc
@needs_cuobjdump
def test_resources_are_sane_and_objects_libraries_executables_work(tmp_path: Path):
    cubin = fingerprint(_compile(tmp_path, "k.cubin"))
    assert [k.name for k in cubin.kernels] == ["sm_90:_Z5scalePiii", "sm_90:_Z6dividePKfS0_Pfi"]
    for k in cubin.kernels:
        assert k.registers > 0 and k.instructions > 0 and k.spill_bytes == 0 and k.shared_bytes == 0
        assert len(k.sass_sha256) == 64
    obj = _compile(tmp_path, "k.o", kind="-c")
    assert fingerprint(obj) == cubin
    lib = tmp_path / "libk.a"
    subprocess.run(["ar", "rcs", str(lib), str(obj)], check=True)
    assert fingerprint(lib) == cubin
    spilled = fingerprint(_compile(tmp_path, "spill.cubin", "-maxrregcount=24"))
    assert all(k.registers <= 24 for k in spilled.kernels)


@pytest.mark.cuda
@needs_cuobjdump
def test_files_without_device_code_give_the_empty_fingerprint(tmp_path: Path):
    host = tmp_path / "host.o"
    host.write_bytes(Path(shutil.which("true") or "/bin/true").read_bytes())
    empty = fingerprint(host)
    assert empty == DeviceFingerprint.of([]) and empty.kernels == ()
    assert empty.digest == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.cuda
@needs_nvcc
@needs_cuobjdump
def test_a_fat_object_is_fingerprinted_for_the_tuned_architecture_only(tmp_path: Path):
    """Issue 21 (driver overhead): a tune measures one architecture's code; disassembling every
    architecture of a fat binary cost several times more. With `arch`, only that one's kernels; an
    architecture the file has no SASS for falls back to all of them."""
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    fat = tmp_path / "fat.o"
    subprocess.run(
        [
            NVCC,
            "-c",
            "-o",
            str(fat),
            str(src),
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_90,code=sm_90",
        ],
        check=True,
        capture_output=True,
    )
    every = fingerprint(fat)
    only = fingerprint(fat, arch="90")
    assert {k.name.split(":")[0] for k in every.kernels} == {"sm_80", "sm_90"}
    assert {k.name.split(":")[0] for k in only.kernels} == {"sm_90"} and len(only.kernels) == 2
    assert only.digest != every.digest
    assert fingerprint(fat, arch="86").digest == every.digest  # no sm_86 SASS: all architectures
    thin = _compile(tmp_path, "thin.o", kind="-c")
    assert fingerprint(thin, arch="90").digest == fingerprint(thin).digest  # one architecture: the same

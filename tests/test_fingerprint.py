"""Device-code fingerprints: normalized SASS per kernel, not the cubin bytes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from compileiq_cmake.flags.fingerprint import DeviceFingerprint, find_tool, fingerprint, parse_sass

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
    find_tool("cuobjdump") is None or find_tool("nvdisasm") is None,
    reason="cuobjdump/nvdisasm missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm",
)


def _compile(tmp: Path, name: str, *flags: str, kind: str = "-cubin") -> Path:
    src = tmp / "k.cu"
    if not src.is_file():
        src.write_text(KERNEL)
    out = tmp / name
    subprocess.run([NVCC, "-arch=sm_90", kind, "-o", str(out), str(src), *flags], check=True, capture_output=True)
    return out


@pytest.mark.unit
def test_sass_normalization_strips_addresses_encodings_and_headers():
    text = """
Fatbin elf code:
================
arch = sm_90
code version = [1,8]
identifier = /home/someone/build/k.cu

\tcode for sm_90
\t\tFunction : _Z1kv
\t.headerflags\t@"EF_CUDA_SM90"
        /*0000*/                   EXIT ;                 /* 0x000000000000794d */
                                                          /* 0x000fea0003800000 */

        /*0010*/                   BRA 0x10;              /* 0x0000000000007947 */
"""
    moved = text.replace("/*0000*/", "/*0a10*/").replace("0x000fea0003800000", "0x000fea0003800001")
    moved = moved.replace("/home/someone", "/elsewhere")
    [(key, digest, count)] = parse_sass(text)
    assert key == "sm_90:_Z1kv" and count == 2
    assert parse_sass(moved)[0][1] == digest


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
    subprocess.run([NVCC, "-c", "-o", str(fat), str(src), "-gencode", "arch=compute_80,code=sm_80",
                    "-gencode", "arch=compute_90,code=sm_90"], check=True, capture_output=True)
    every = fingerprint(fat)
    only = fingerprint(fat, arch="90")
    assert {k.name.split(":")[0] for k in every.kernels} == {"sm_80", "sm_90"}
    assert {k.name.split(":")[0] for k in only.kernels} == {"sm_90"} and len(only.kernels) == 2
    assert only.digest != every.digest
    assert fingerprint(fat, arch="86").digest == every.digest  # no sm_86 SASS: all architectures
    thin = _compile(tmp_path, "thin.o", kind="-c")
    assert fingerprint(thin, arch="90").digest == fingerprint(thin).digest  # one architecture: the same

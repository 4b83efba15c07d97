#!/usr/bin/env python3
"""Record host (CPU, g++) flag landscapes of the small C++ kernels in kernels/ (the gcc flag family).

For each kernel, every point of the learning design over the gcc space (compileiq_cmake/flags/gcc.toml as
`load_space("gcc", "GNU", <g++ version>)` gives it: the default, every single value of every dimension, the
full product of the core values (CORE below) and --learn-random uniform random points) is

  1. built: `g++ -std=c++17 -O3 -DNDEBUG <point's flags> kernel.cpp -o exe` (the flags appended after -O3,
     as a CMake Release build plus target_compile_options puts them), --jobs builds at a time; a failing
     build is an invalid code with the compiler's error line;
  2. fingerprinted: sha256 over the executable's loaded sections (every SHF_ALLOC section except .note.*:
     code, read-only data, data, init arrays, PLT/GOT, dynamic symbols; the build-id note and non-loaded
     sections such as .comment are left out). Points whose executables load byte-identical images share
     one *code*, as the CUDA recorder groups points by SASS fingerprint;
  3. timed in interleaved rounds: every round runs every code of every kernel once in a fresh random order
     (random.Random(seed + round)); the default code of each kernel also runs at the start and at the end of
     every round (drift anchors, meta.default_anchors_us). One sample = the program's own `time_ms` line
     (steady_clock around its compute part), stored in microseconds; the process CPU time it prints on
     stderr (`cpu_ms`, std::clock) is kept beside it as `cpu_us`. --rounds rounds (default 5); --deadline
     stops adding rounds (at least 3 are always made);
  4. checked: each code's `checksum` line against the default code's: relative error |c - c0| / max(|c0|,
     1e-300), valid when <= the kernel's tolerance (KERNELS); a crash, a non-zero exit, output that is not
     the two expected lines, or a run past 10x the default's time (at least 5 s) is invalid with its reason
     (status "launch_failed": the format's status for code that built but could not be run to the end);
  5. written to <out>/<kernel>.json in the landscape format (../README.md), after every round (a cut-short
     recording leaves complete files of the rounds made), and checked with Landscape.load.

Usage: python record_host.py --out DIR [--kernels a,b] [--rounds N] [--deadline SECONDS] [--jobs N]
       [--pin-core N] [--learn-random N] [--seed N] [--work DIR] [--dry-run]
       python record_host.py --cpu-from DIR --out DIR2   (DIR's landscapes with the CPU time as the sample)
(--dry-run: builds, fingerprints and one timed round; writes <kernel>.dryrun.json, which Landscape.load refuses)
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import itertools
import json
import math
import os
import platform
import random
import re
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/landscapes/host
KERNEL_DIR = HERE / "kernels"
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))  # the repository's package when it is not installed

from compileiq_cmake.flags.space import canonical_flags, load_space  # noqa: E402
from compileiq_cmake.search.landscape import Landscape  # noqa: E402

sys.path.insert(0, str(HERE.parent))  # benchmarks/landscapes: the CUDA recorder's file writer
from record import write_landscape  # noqa: E402

FORMAT = "compileiq-landscape"
FORMAT_VERSION = 1
FAMILY = "gcc"
COMPILER = "g++"
BASE_FLAGS = ("-std=c++17", "-O3", "-DNDEBUG")
# The core sub-space (every value of these dimensions, the others at their default): 3*2*2*2*3 = 72 points,
# a complete sub-landscape a replayed search can run on (benchmarks/evaluation/prior_eval.py reads meta.core).
CORE = ("opt_level", "march_native", "fast_math", "unroll_loops", "vect_cost_model")
TINY = 1e-300

# Tolerances (relative checksum error vs the default build's): 0 for integer kernels (any change is a bug);
# 1e-9 for double kernels without reductions whose order a flag may change (FMA contraction under
# -march=native or reassociation under -ffast-math move double results by ~1e-13 at most here); 1e-4 for
# float kernels (reductions, transcendentals, stencils: -ffast-math's reassociation and vector libm, FMA
# contraction, flush-to-zero move float results by 1e-7..1e-5; a larger change is reported as invalid).
INT_TOL, DOUBLE_TOL, FLOAT_TOL = 0.0, 1e-9, 1e-4


@dataclass
class KernelSpec:
    name: str
    kind: str
    function: str
    character: str
    problem: str
    tolerance: float
    tolerance_why: str


KERNELS = {
    k.name: k
    for k in (
        KernelSpec(
            "matmul_naive_f32",
            "gemm",
            "matmul",
            "compute with strided access: i-j-k triple loop, the inner k loop a float dot product whose B "
            "operand strides by a row",
            "C = A B, 640 x 640 float, A and B uniform in [-1, 1)",
            FLOAT_TOL,
            "float reduction (the k sum)",
        ),
        KernelSpec(
            "matmul_blocked_f64",
            "gemm",
            "matmul_blocked",
            "compute-bound: 64x64x64 cache blocks, i-k-j order (contiguous inner loop, no reduction)",
            "C += A B, 896 x 896 double, A and B uniform in [-1, 1)",
            DOUBLE_TOL,
            "double, no reordered reduction (FMA contraction only)",
        ),
        KernelSpec(
            "stencil2d_f32",
            "stencil",
            "jacobi_step",
            "memory / streaming: 5-point Jacobi, ping-pong buffers, vectorizable",
            "1024 x 1024 float grid in [0, 1), fixed boundary, 500 steps, out = 0.2 in + 0.2 (4 neighbours)",
            FLOAT_TOL,
            "float arithmetic over 500 steps (reassociation, FMA contraction)",
        ),
        KernelSpec(
            "nbody_f32",
            "nbody",
            "accelerations",
            "math: all-pairs forces with 1/sqrtf of the softened distance, float sums over j",
            "4096 bodies (SoA float), eps2 = 1e-2, 4 leapfrog steps of dt = 1e-3",
            FLOAT_TOL,
            "float reductions and sqrt/division (reciprocal approximations under fast math)",
        ),
        KernelSpec(
            "dot_reduce_f32",
            "reduction",
            "dot",
            "reduction: one float dot product of 16384 per lag (cross-correlation), L2-resident",
            "signal 36864 floats in [0, 1), template 16384 floats in [-0.5, 0.5), 20480 lags",
            FLOAT_TOL,
            "float reduction (its order is what -ffast-math changes)",
        ),
        KernelSpec(
            "transcend_f32",
            "transcendental",
            "evaluate",
            "transcendental: expf, sinf, logf, sqrtf per element (libm-call bound)",
            "1 Mi floats in [0, 8), 10 passes of exp(-d t) sin(f t) + log(1 + t) / 4 + sqrt(t) / 8",
            FLOAT_TOL,
            "float transcendentals (vector libm under fast math)",
        ),
        KernelSpec(
            "hamming_popcount_u64",
            "bitops",
            "search",
            "integer bit operations: popcount of xor over 64-bit fingerprints, integer sums",
            "16384 database fingerprints x 4096 queries, radius 12",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "insertion_sort_i32",
            "sort",
            "insertion_sort",
            "branchy: insertion sort of small int arrays and binary searches (unpredictable branches)",
            "160000 arrays of 48 ints in [0, 100000), 8 binary searches each",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "spmv_csr_f32",
            "spmv",
            "spmv",
            "irregular memory: CSR gathers through column indices, float row sums",
            "131072 x 131072 CSR, 8..40 random columns per row (~3.1 M nonzeros), 56 products x <- A x / 12",
            FLOAT_TOL,
            "float reductions (row sums)",
        ),
        KernelSpec(
            "bytes_crc_runs",
            "bytes",
            "crc32",
            "byte processing: ASCII lower-casing and a run-length scan (vectorizable), table-driven CRC-32 "
            "(a serial lookup chain)",
            "8 MiB pseudo-text, 8 passes",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "saxpy_alias_f32",
            "axpy",
            "saxpy",
            "streaming FMA through possibly aliasing float pointers (runtime alias check or scalar code)",
            "4 vectors of 3000 floats in one buffer (y0, y1 accumulate, x2, x3 fixed), 600000 calls y += a x "
            "with a = +-2^-10",
            FLOAT_TOL,
            "float arithmetic (FMA contraction)",
        ),
        KernelSpec(
            "fft_radix2_c64",
            "fft",
            "fft",
            "complex double arithmetic: iterative radix-2 FFT over std::complex<double> (the complex "
            "multiply's NaN/Inf recovery path unless -ffast-math)",
            "2^16 points, 20 forward + inverse transforms with 1/n scaling",
            DOUBLE_TOL,
            "double FFT: rounding only (no reordered reduction across the data)",
        ),
        KernelSpec(
            "kahan_sum_f32",
            "reduction",
            "kahan_moments",
            "compensated reduction: Kahan sums of x and x*x in float (a serial chain of dependent adds); "
            "reassociation (-ffast-math) deletes the compensation",
            "4 Mi floats 100 + U[0, 1), 32 windows of 2 Mi: mean and variance",
            FLOAT_TOL,
            "float sums, kept accurate by the compensation: a result that lost it is wrong",
        ),
        KernelSpec(
            "histogram_u8",
            "histogram",
            "histogram",
            "scatter increments: one ++bins[byte] per byte (a dependency through memory when consecutive bytes repeat)",
            "16 MiB of skewed bytes with runs of repeats, 256 uint32 bins, 23 passes",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "prefix_scan_f32",
            "scan",
            "inclusive_scan",
            "serial float dependency: segmented inclusive prefix sum (one loop-carried add per element; not "
            "vectorized, no reduction for -ffast-math to reorder)",
            "4 Mi floats in [-1, 1), rows of 1024 each scanned from zero, 44 passes",
            FLOAT_TOL,
            "float sums (rounding only: the scan's order is fixed)",
        ),
        KernelSpec(
            "conv2d_3x3_f32",
            "convolution",
            "conv3x3",
            "compute-bound float multiply-adds: 3x3 convolution layer, 4 to 4 channels (144 per output pixel), "
            "vectorizable along a row, ping-pong buffers",
            "512 x 512 x 4 channels in [0, 1), positive weights summing to 1 per output channel, 56 steps",
            FLOAT_TOL,
            "float 9-term sums over 56 steps (FMA contraction, reassociation)",
        ),
        KernelSpec(
            "horner_poly_f64",
            "polynomial",
            "horner",
            "double multiply-add chains: Horner's rule of degree 20 per point, independent points "
            "(vectorizable across them)",
            "1 Mi points in [-1, 1), 21 polynomials (coefficients 1 + U(-1, 1) / (2 (k + 1))), summed per point",
            DOUBLE_TOL,
            "double, no reordered reduction (FMA contraction only)",
        ),
        KernelSpec(
            "mandelbrot_f32",
            "escape_time",
            "mandelbrot",
            "branchy float iteration: z <- z^2 + c per pixel until |z|^2 > 4 (a data-dependent exit, not vectorized)",
            "1280 x 928 pixels over [-2.2, 0.8] x [-1, 1], at most 160 iterations",
            FLOAT_TOL,
            "escape counts of float iterations: FMA contraction and -ffast-math change a few "
            "boundary pixels' counts (relative checksum change up to 2.9e-5 measured)",
        ),
        KernelSpec(
            "substring_search_u8",
            "string_search",
            "find_all",
            "branchy byte comparisons: naive substring search, early exit at the first mismatch (a 4-letter "
            "alphabet: partial matches are common)",
            "4.25 MiB DNA-like text with planted copies, 12 patterns of 8..30 bytes",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "hash_probe_u64",
            "hash_table",
            "lookup_all",
            "random memory access and branchy probe loops: open addressing, linear probing, inserts then lookups",
            "2^20 slots (12 MiB), 5 rounds of 600000 inserts and 1.2 M lookups (half present)",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "thomas_heat_f64",
            "tridiagonal",
            "heat_step",
            "double recurrences with division: Thomas algorithm per implicit step, 8 interleaved systems (the "
            "system loop contiguous and vectorizable, each sweep serial along its rod)",
            "8 rods x 2048 points, diffusion numbers 5..50, fixed ends 1 and 0, 2800 backward Euler steps",
            DOUBLE_TOL,
            "double, no reduction (FMA contraction, reciprocals under -ffast-math: rounding only)",
        ),
        KernelSpec(
            "bitonic_sort_i32",
            "sorting_network",
            "bitonic_sort",
            "branch-free integer min/max: bitonic network over contiguous halves (vectorizable; a packed "
            "signed 32-bit min/max needs SSE4.1)",
            "7680 blocks of 1024 random int32",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "lu_nopivot_f64",
            "factorization",
            "lu_solve",
            "dense double row updates with shrinking trip counts: LU without pivoting (k-i-j), then column "
            "oriented triangular solves (axpys, no reductions)",
            "64 x 64 strictly diagonally dominant matrices (16 stored), 7600 factorizations and solves",
            DOUBLE_TOL,
            "double, no reordered reduction (FMA contraction, the pivot's reciprocal: rounding only)",
        ),
        KernelSpec(
            "chacha20_u32",
            "cipher",
            "chacha20_xor",
            "integer add-rotate-xor rounds: the ChaCha20 block function over uint32_t[16] (four independent "
            "quarter-rounds, SLP-vectorizable; rotates)",
            "4 MiB buffer, 23 passes with a new nonce each",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "divmod_digits_u64",
            "integer_division",
            "divmod",
            "integer division: base-10 digit sums (division by the constant 10: multiply-high) and Euclid's gcd "
            "(chains of hardware divisions by a variable divisor)",
            "1.25 Mi pairs of 64-bit values below 2^48 with shared factors",
            INT_TOL,
            "integer results: exact",
        ),
        KernelSpec(
            "mat4_aos_f32",
            "matvec4",
            "transform",
            "array-of-structures float: a 4x4 matrix times each float4 and a division by the new w (SLP "
            "vectorization; a reciprocal under -ffast-math)",
            "512 Ki float4 points, 220 passes in place, each a rotation + small translation + projective row",
            FLOAT_TOL,
            "float 4-term dot products and a division over 220 passes (FMA contraction, reciprocals)",
        ),
    )
}


# ---------------------------------------------------------------- the space and its points


def gxx_version() -> tuple[str, str]:
    line = subprocess.run([COMPILER, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    found = re.search(r"(\d+\.\d+(?:\.\d+)?)\s*$", line) or re.search(r"(\d+\.\d+(?:\.\d+)?)", line)
    return (found.group(1) if found else "0"), line


def gcc_dimensions(version: str) -> list[tuple[str, list[tuple[str, ...]]]]:
    """The gcc space as the tool loads it for a GNU compiler of this version (every dimension, every value)."""
    space = load_space(FAMILY, "GNU", version)
    return [(d.name, [tuple(v) for v in d.values]) for d in space.dimensions]


def learn_points(dims, n_random: int, seed: int) -> tuple[list[tuple[int, ...]], str, int]:
    """The learning design (record.py learn_points): the full product of the CORE dimensions' values (the
    others at their default), every single change, then n_random uniform random points of the whole space."""
    sizes = [len(v) for _, v in dims]
    for name in CORE:
        if name not in [n for n, _ in dims]:
            raise SystemExit(f"core dimension {name} is not in the gcc space")
    core_ranges = [list(range(len(values))) if name in CORE else [0] for name, values in dims]
    chosen: dict[tuple[int, ...], None] = dict.fromkeys(itertools.product(*core_ranges))
    n_core = len(chosen)
    for d in range(len(dims)):
        for v in range(1, sizes[d]):
            p = [0] * len(dims)
            p[d] = v
            chosen[tuple(p)] = None
    rng = random.Random(seed)
    target = len(chosen) + n_random
    while len(chosen) < target:
        chosen[tuple(rng.randrange(s) for s in sizes)] = None
    sampling = (
        f"learn: the full product of the core values ({n_core} points: {', '.join(CORE)}), every single "
        f"change and {n_random} uniform random points, {len(chosen)} of {math.prod(sizes)}"
    )
    return sorted(chosen), sampling, n_core


def point_flags(dims, point: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(t for (_, values), i in zip(dims, point, strict=True) for t in values[i])


# ---------------------------------------------------------------- builds and fingerprints


@dataclass
class Build:
    flags: tuple[str, ...]
    exe: Path
    digest: str | None = None
    text_digest: str | None = None
    text_bytes: int | None = None
    error: str | None = None
    seconds: float = 0.0


def _error_line(text: str) -> str:
    for line in text.splitlines():
        if "error" in line.lower():
            return line.strip()[:300]
    lines = [x for x in text.splitlines() if x.strip()]
    return (lines[-1].strip() if lines else "build failed (no message)")[:300]


def elf_digests(path: Path) -> tuple[str, str, int]:
    """(sha256 over every loaded section but .note.*, sha256 of .text, .text size) of an ELF64 executable."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"{path}: not an ELF64 file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = []
    for k in range(shnum):
        name, stype, flags, addr, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + k * shentsize)
        headers.append((name, stype, flags, addr, offset, size))
    strtab_off, strtab_size = headers[shstrndx][4], headers[shstrndx][5]
    strtab = data[strtab_off : strtab_off + strtab_size]

    def name_of(off: int) -> str:
        return strtab[off : strtab.index(b"\0", off)].decode()

    whole, text = hashlib.sha256(), hashlib.sha256()
    text_bytes = 0
    for name_off, stype, flags, addr, offset, size in headers:
        name = name_of(name_off)
        if not flags & 0x2 or name.startswith(".note"):  # SHF_ALLOC only; build-id and ABI notes left out
            continue
        content = b"" if stype == 8 else data[offset : offset + size]  # SHT_NOBITS (.bss): its size only
        whole.update(f"{name}:{addr:x}:{size:x}\n".encode())
        whole.update(content)
        if name == ".text":
            text.update(content)
            text_bytes = size
    return whole.hexdigest(), text.hexdigest(), text_bytes


def build_one(source: Path, b: Build) -> None:
    cmd = [COMPILER, *BASE_FLAGS, *b.flags, str(source), "-o", str(b.exe)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    b.seconds = time.perf_counter() - t0
    if proc.returncode != 0 or not b.exe.is_file():
        b.error = _error_line(proc.stderr + proc.stdout)
        return
    b.digest, b.text_digest, b.text_bytes = elf_digests(b.exe)


# ---------------------------------------------------------------- running


@dataclass
class Run:
    ok: bool
    time_ms: float | None = None
    cpu_ms: float | None = None
    checksum: float | None = None
    checksum_text: str = ""
    wall_s: float = 0.0
    why: str = ""


def run_exe(exe: Path, timeout: float) -> Run:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Run(
            False,
            wall_s=time.perf_counter() - t0,
            why=f"timeout: still running after {timeout:.1f} s (10x the default's run time)",
        )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        rc = proc.returncode
        sig = f" (signal {-rc})" if rc < 0 else ""
        return Run(False, wall_s=wall, why=f"exit status {rc}{sig}: {_error_line(proc.stderr) if proc.stderr else ''}")
    lines = proc.stdout.splitlines()
    m_time = re.fullmatch(r"time_ms=([-+0-9.eE]+)", lines[0]) if len(lines) == 2 else None
    m_sum = re.fullmatch(r"checksum=(\S+)", lines[1]) if len(lines) == 2 else None
    if not (m_time and m_sum):
        return Run(False, wall_s=wall, why=f"unexpected output: {proc.stdout[:200]!r}")
    m_cpu = re.search(r"cpu_ms=([-+0-9.eE]+)", proc.stderr)
    try:
        checksum = float(m_sum.group(1))
    except ValueError:
        return Run(False, wall_s=wall, why=f"checksum not a number: {m_sum.group(1)!r}")
    t = float(m_time.group(1))
    if not (math.isfinite(t) and t > 0):
        return Run(False, wall_s=wall, why=f"time_ms not positive: {t}")
    return Run(
        True,
        time_ms=t,
        cpu_ms=float(m_cpu.group(1)) if m_cpu else None,
        checksum=checksum,
        checksum_text=m_sum.group(1),
        wall_s=wall,
    )


def rel_error(c: float, c0: float) -> float:
    if math.isnan(c) or math.isinf(c):
        return math.inf
    return abs(c - c0) / max(abs(c0), TINY)


# ---------------------------------------------------------------- statistics


def _median(xs) -> float:
    return float(statistics.median(xs))


def noise_estimate(series: list[list[float]]) -> dict:
    """Relative spread between consecutive rounds of each code: d = (t[r+1] - t[r]) / mean(t[r], t[r+1]) over
    every valid code and round pair; rel_sd = 1.4826 MAD(d) / sqrt(2), the relative standard deviation of one
    sample (the CUDA recorder's estimator, there with one pair of passes per code)."""
    d = [(b - a) / (0.5 * (a + b)) for s in series for a, b in zip(s, s[1:], strict=False) if a > 0 and b > 0]
    if not d:
        return {"pairs": 0, "rel_sd": 0.0}
    ad = sorted(abs(x) for x in d)
    med = statistics.median(d)
    mad = statistics.median(abs(x - med) for x in d)
    return {
        "pairs": len(d),
        "median_abs_rel_diff": round(statistics.median(ad), 6),
        "p90_abs_rel_diff": round(ad[min(len(ad) - 1, int(0.9 * len(ad)))], 6),
        "max_abs_rel_diff": round(ad[-1], 6),
        "mean_rel_diff": round(statistics.fmean(d), 6),
        "rel_sd": round(1.4826 * mad / math.sqrt(2), 6),
    }


def mad_rel(xs: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    m = _median(xs)
    return _median([abs(x - m) for x in xs]) / m


# ---------------------------------------------------------------- per-kernel state


@dataclass
class KernelPlan:
    spec: KernelSpec
    dims: list
    points: list
    sampling: str
    n_core: int
    builds: list[Build]  # one per point (the same order)
    codes: list[dict] = field(default_factory=list)
    code_exe: list[Path | None] = field(default_factory=list)
    rows: list[list[int]] = field(default_factory=list)
    default_code: int = 0
    reference: float | None = None
    reference_text: str = ""
    timeout: float = 5.0
    anchors_us: list[float] = field(default_factory=list)
    anchors_cpu_us: list[float] = field(default_factory=list)
    build_seconds: float = 0.0


def group_codes(plan: KernelPlan) -> None:
    """Points -> codes: one per loaded-image digest, one per distinct build error line (the default's first)."""
    code_of: dict[str, int] = {}
    dflt = plan.builds[plan.points.index(tuple([0] * len(plan.dims)))]
    if dflt.error:
        raise SystemExit(f"{plan.spec.name}: the default build fails: {dflt.error}")
    for b in [dflt, *plan.builds]:
        key = b.digest if b.error is None else "error:" + b.error
        if key in code_of:
            continue
        code_of[key] = len(plan.codes)
        if b.error is None:
            plan.codes.append(
                {
                    "digest": b.digest,
                    "status": "untimed",
                    "valid": False,
                    "error": None,
                    "time_us": [],
                    "cpu_us": [],
                    "checksum": None,
                    "flags": list(b.flags),
                    "text_digest": b.text_digest,
                    "text_bytes": b.text_bytes,
                }
            )
            plan.code_exe.append(b.exe)
        else:
            plan.codes.append(
                {
                    "digest": None,
                    "status": "build_failed",
                    "valid": False,
                    "error": None,
                    "time_us": [],
                    "message": b.error,
                    "flags": list(b.flags),
                }
            )
            plan.code_exe.append(None)
    plan.rows = [
        [*p, code_of[b.digest if b.error is None else "error:" + b.error]]
        for p, b in zip(plan.points, plan.builds, strict=True)
    ]
    plan.default_code = 0


def record_run(plan: KernelPlan, k: int, r: Run, first: bool) -> None:
    """One run of code k: its verdict on its first run, its samples while it stays runnable."""
    c = plan.codes[k]
    if not r.ok:
        c.update(status="launch_failed", valid=False, message=r.why[:300])
        return
    err = rel_error(r.checksum, plan.reference)
    if first:
        c["checksum"] = r.checksum_text
        c["error"] = float(f"{err:.3g}") if math.isfinite(err) else None
        ok = err <= plan.spec.tolerance
        c["status"], c["valid"] = ("ok", True) if ok else ("wrong_result", False)
        if not ok:
            c["message"] = (
                f"checksum {r.checksum_text} vs the default's {plan.reference_text}: relative error "
                f"{err:.3g} > tolerance {plan.spec.tolerance:g}"
            )
    elif r.checksum_text != c["checksum"]:  # the same executable must print the same checksum every round
        c.update(
            status="wrong_result",
            valid=False,
            message=f"checksum not reproducible: {c['checksum']} then {r.checksum_text}",
        )
    c["time_us"].append(round(r.time_ms * 1000.0, 1))
    if r.cpu_ms is not None:
        c["cpu_us"].append(round(r.cpu_ms * 1000.0, 1))


# ---------------------------------------------------------------- writing


def cpu_info() -> dict:
    model, flags = "", []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1].split()
    except OSError:
        pass
    native = ""
    try:
        out = subprocess.run(
            [COMPILER, "-march=native", "-Q", "--help=target"], capture_output=True, text=True, check=False
        ).stdout
        m = re.search(r"^\s*-march=\s+(\S+)", out, re.M)
        native = m.group(1) if m else ""
    except OSError:
        pass
    isa = [
        f
        for f in (
            "sse4_2",
            "popcnt",
            "avx",
            "avx2",
            "fma",
            "bmi2",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512_vpopcntdq",
        )
        if f in flags
    ]
    return {"model": model, "cores": os.cpu_count(), "machine": platform.machine(), "march_native": native, "isa": isa}


def document(plan: KernelPlan, ctx: dict, rounds_done: int, load: list, truncated: bool) -> dict:
    spec = plan.spec
    valid_series = [c["time_us"] for c in plan.codes if c["valid"] and len(c["time_us"]) >= 2]
    cpu_series = [c["cpu_us"] for c in plan.codes if c["valid"] and len(c.get("cpu_us", [])) >= 2]
    dflt = plan.codes[plan.default_code]
    meta = {
        "synthetic": False,
        "dry_run": False,
        "character": spec.character,
        "kind": spec.kind,
        "source": f"benchmarks/landscapes/host/kernels/{spec.name}.cpp",
        "function": spec.function,
        "problem": spec.problem,
        "gpu": None,
        "cpu": ctx["cpu"],
        "arch": "",
        "compiler": ctx["compiler_line"],
        "compiler_id": "GNU",
        "compiler_version": ctx["version"],
        "base_flags": list(BASE_FLAGS),
        "compile_command": f"{COMPILER} {' '.join(BASE_FLAGS)} <point's flags> <source> -o <exe>",
        "host": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "kernel": platform.release(),
        },
        "date": ctx["date"],
        "command": ctx["command"],
        "sampling": plan.sampling,
        "core": {name: [list(v) for v in values] for name, values in plan.dims if name in CORE},
        "space_size": math.prod(len(v) for _, v in plan.dims),
        "tolerance": {
            "metric": "relative checksum error |c - c0| / max(|c0|, 1e-300) vs the default build's "
            "checksum (the program's %.17g checksum line)",
            "max": spec.tolerance,
            "why": spec.tolerance_why,
        },
        "digest": "sha256 over the executable's loaded (SHF_ALLOC) sections except .note.* (name, address, "
        "size and bytes of each); text_digest: sha256 of .text alone",
        "timing": (
            "one sample = the program's time_ms line (std::chrono::steady_clock around its compute part, "
            "one run of a fixed amount of work, in a fresh process), stored in microseconds; cpu_us: the "
            "process CPU time (std::clock) over the same part, printed on stderr; interleaved rounds: each "
            "round runs every code of every kernel once in its own random order, the default code of "
            "each kernel also at the start and end of the round (default_anchors_us); "
            + (
                f"every run on CPU core {ctx['pin_core']} only (sched_setaffinity), no priority change"
                if ctx.get("pin_core", -1) >= 0
                else "no pinning, no priority change: the machine is shared (load_avg)"
            )
        ),
        "rounds": rounds_done,
        "truncated": truncated,
        "timeout_s": round(plan.timeout, 2),
        "seconds": {"build_mean": round(plan.build_seconds / max(1, len(plan.builds)), 3)},
        "noise": {
            **noise_estimate(valid_series),
            "method": "relative difference of consecutive rounds' samples per valid code (wall time_ms)",
        },
        "noise_cpu": {**noise_estimate(cpu_series), "method": "the same over cpu_us"},
        "default_mad_rel": mad_rel(dflt["time_us"]),
        "default_mad_rel_cpu": mad_rel(dflt.get("cpu_us", [])),
        "default_anchors_us": plan.anchors_us,
        "default_anchors_cpu_us": plan.anchors_cpu_us,
        "load_avg": load,
    }
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "kernel": spec.name,
        "family": FAMILY,
        "metric": {"name": "kernel_time", "unit": "us", "higher_is_better": False},
        "meta": meta,
        "dimensions": [{"name": n, "values": [list(v) for v in vals]} for n, vals in plan.dims],
        "default_code": plan.default_code,
        "points": plan.rows,
        "codes": plan.codes,
    }


def write_all(
    plans: dict[str, KernelPlan],
    out_dir: Path,
    ctx: dict,
    rounds_done: int,
    load: list,
    truncated: bool,
    check: bool,
    log,
    dry_run: bool = False,
) -> None:
    for name, plan in plans.items():
        doc = document(plan, ctx, rounds_done, load, truncated)
        doc["meta"]["dry_run"] = dry_run  # a dry run's file (one round) is for a look only: the loader refuses it
        path = out_dir / (f"{name}.dryrun.json" if dry_run else f"{name}.json")
        write_landscape(doc, path)
        if check:
            land = Landscape.load(path)  # the repository's loader must accept every file written
            log(f"  {name}: {land.describe()}")


def cpu_variant(src_dir: Path, out_dir: Path, log) -> int:
    """The landscapes of src_dir with the process CPU time as the sample (time_us := cpu_us, the wall samples
    kept as wall_us; noise, anchors and the default's spread recomputed): on a loaded machine CPU time is
    far less noisy than the wall time_ms (meta.noise_cpu vs meta.noise of the recorded files)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if src_dir.resolve() == out_dir.resolve():
        raise SystemExit("--cpu-from: --out must be another folder than the recorded files'")
    n = 0
    for path in sorted(src_dir.glob("*.json")):
        doc = json.loads(path.read_text())
        if doc.get("format") != FORMAT or doc.get("family") != FAMILY or doc["meta"].get("dry_run"):
            continue
        for c in doc["codes"]:
            if c.get("digest") is None:
                continue
            wall, cpu = c.get("time_us", []), c.get("cpu_us", [])
            if len(cpu) != len(wall):
                raise SystemExit(f"{path}: a code without one cpu_us per time_us sample")
            c["wall_us"], c["time_us"] = wall, cpu
            c.pop("cpu_us", None)
        meta = doc["meta"]
        valid = [c["time_us"] for c in doc["codes"] if c["valid"] and len(c["time_us"]) >= 2]
        dflt = doc["codes"][doc["default_code"]]
        meta["noise_wall"], meta["noise"] = (
            meta["noise"],
            {
                **noise_estimate(valid),
                "method": "relative difference of consecutive rounds' samples per valid code (process CPU time)",
            },
        )
        meta.pop("noise_cpu", None)
        meta["default_mad_rel_wall"], meta["default_mad_rel"] = meta["default_mad_rel"], mad_rel(dflt["time_us"])
        meta.pop("default_mad_rel_cpu", None)
        meta["default_anchors_wall_us"], meta["default_anchors_us"] = (
            meta["default_anchors_us"],
            meta.pop("default_anchors_cpu_us"),
        )
        meta["sample"] = "cpu"
        meta["timing"] = (
            "one sample = the process CPU time (std::clock) over the program's compute part, in "
            "microseconds (the program prints it on stderr as cpu_ms); wall_us: its time_ms line. "
            f"Made by --cpu-from from {path.name}: " + meta["timing"]
        )
        target = out_dir / path.name
        write_landscape(doc, target)
        log(f"  {Landscape.load(target).describe()}")
        n += 1
    return n


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for <kernel>.json and record.log")
    ap.add_argument("--kernels", default=",".join(KERNELS), help=f"comma-separated, of {', '.join(KERNELS)}")
    ap.add_argument("--rounds", type=int, default=5, help="timing rounds (each runs every code once)")
    ap.add_argument(
        "--deadline",
        type=float,
        default=0.0,
        help="seconds from the start after which no further round starts (0: none; 3 rounds at least)",
    )
    ap.add_argument("--jobs", type=int, default=2, help="parallel builds")
    ap.add_argument(
        "--pin-core",
        type=int,
        default=-1,
        help="after the builds, run every timed code on this CPU core only (sched_setaffinity; -1: any core)",
    )
    ap.add_argument("--learn-random", type=int, default=16, help="uniform random points of the whole space")
    ap.add_argument("--seed", type=int, default=20261215)
    ap.add_argument("--work", default="", help="folder for the executables (default: a temporary folder)")
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="build, fingerprint and time one round; writes <kernel>.dryrun.json (the loader refuses those)",
    )
    ap.add_argument(
        "--cpu-from",
        default="",
        metavar="DIR",
        help="record nothing: write DIR's landscapes to --out with the CPU time as the sample",
    )
    args = ap.parse_args(argv)
    args.kernel_list = [k.strip() for k in args.kernels.split(",") if k.strip()]
    if not args.cpu_from:
        for k in args.kernel_list:
            if k not in KERNELS:
                ap.error(f"unknown kernel {k}; known: {', '.join(KERNELS)}")
    return args


def plan_and_build(kernels: list[str], dims, args: argparse.Namespace, work: Path, log) -> dict[str, KernelPlan]:
    """Every kernel's points, built --jobs at a time and grouped into codes."""
    plans: dict[str, KernelPlan] = {}
    jobs: list[tuple[Path, Build]] = []
    for name in kernels:
        points, sampling, n_core = learn_points(dims, args.learn_random, args.seed)
        (work / name).mkdir(exist_ok=True)
        builds = []
        for n, p in enumerate(points):
            b = Build(flags=canonical_flags(point_flags(dims, p), FAMILY), exe=work / name / f"p{n}")
            builds.append(b)
            jobs.append((KERNEL_DIR / f"{name}.cpp", b))
        plans[name] = KernelPlan(KERNELS[name], dims, points, sampling, n_core, builds)
        log(f"{name}: {len(points)} points ({sampling})")
    log(f"building {len(jobs)} executables, {args.jobs} at a time")
    t_build = time.perf_counter()
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for _ in pool.map(lambda job: build_one(*job), jobs):
            done += 1
            if done % 100 == 0:
                log(f"  {done}/{len(jobs)} built")
    log(f"built in {time.perf_counter() - t_build:.0f} s")
    for plan in plans.values():
        plan.build_seconds = sum(b.seconds for b in plan.builds)
        group_codes(plan)
        n_ok = sum(1 for c in plan.codes if c["digest"])
        log(f"{plan.spec.name}: {len(plan.points)} points -> {n_ok} codes, {len(plan.codes) - n_ok} build-error kinds")
    return plans


def reference_runs(plans: dict[str, KernelPlan], log) -> None:
    """The reference run of each default (checksum, run time -> timeout); its sample is not kept."""
    for plan in plans.values():
        r = run_exe(plan.code_exe[plan.default_code], 120.0)
        if not r.ok:
            raise SystemExit(f"{plan.spec.name}: the default build does not run: {r.why}")
        plan.reference, plan.reference_text = r.checksum, r.checksum_text
        plan.timeout = max(5.0, 10.0 * r.wall_s)
        log(
            f"{plan.spec.name}: default time_ms {r.time_ms:.1f} (cpu {r.cpu_ms:.1f}, process {r.wall_s:.2f} s), "
            f"checksum {r.checksum_text}"
        )


def run_anchor(plan: KernelPlan) -> None:
    """One run of a kernel's default code as a drift anchor."""
    r = run_exe(plan.code_exe[plan.default_code], plan.timeout)
    if r.ok:
        plan.anchors_us.append(round(r.time_ms * 1000.0, 1))
        if r.cpu_ms is not None:
            plan.anchors_cpu_us.append(round(r.cpu_ms * 1000.0, 1))


def one_round(plans: dict[str, KernelPlan], rnd: int, seed: int, log) -> int:
    """Round rnd: the anchors, every runnable code of every kernel once in a random order, the anchors again;
    returns the number of code runs."""
    order = [
        (name, k)
        for name, plan in plans.items()
        for k, c in enumerate(plan.codes)
        if c["digest"] and c["status"] != "launch_failed"
    ]
    random.Random(seed + rnd).shuffle(order)
    anchor_order = list(plans)
    random.Random(seed + 1000 + rnd).shuffle(anchor_order)
    for name in anchor_order:
        run_anchor(plans[name])
    for name, k in order:
        plan = plans[name]
        r = run_exe(plan.code_exe[k], plan.timeout)
        record_run(plan, k, r, first=(rnd == 0))
        if not r.ok:
            log(f"  {name} code {k} ({' '.join(plan.codes[k]['flags']) or 'default'}): {r.why}")
    for name in reversed(anchor_order):
        run_anchor(plans[name])
    return len(order)


def run_rounds(
    plans: dict[str, KernelPlan], args: argparse.Namespace, ctx: dict, out_dir: Path, t_start: float, log
) -> int:
    """The interleaved rounds (files rewritten after each); returns the number of rounds made."""
    load: list[dict] = []
    rounds_done, truncated, last_round = 0, False, 0.0
    n_rounds = 1 if args.dry_run else max(3, args.rounds)
    for rnd in range(n_rounds):
        elapsed = time.perf_counter() - t_start
        if rnd >= 3 and args.deadline and elapsed + last_round > args.deadline:
            truncated = True
            log(
                f"deadline: round {rnd + 1} would end after {elapsed + last_round:.0f} s > {args.deadline:.0f} s; "
                f"stopping after {rounds_done} rounds"
            )
            break
        t_round = time.perf_counter()
        load_start = os.getloadavg()
        n_runs = one_round(plans, rnd, args.seed, log)
        rounds_done += 1
        last_round = time.perf_counter() - t_round
        load.append(
            {
                "round": rnd + 1,
                "start": [round(x, 2) for x in load_start],
                "end": [round(x, 2) for x in os.getloadavg()],
                "seconds": round(last_round, 1),
            }
        )
        log(
            f"round {rnd + 1}: {n_runs} runs + {2 * len(plans)} anchors in {last_round:.0f} s "
            f"(load {load_start[0]:.2f} -> {os.getloadavg()[0]:.2f})"
        )
        write_all(
            plans, out_dir, ctx, rounds_done, load, truncated, check=not args.dry_run, log=log, dry_run=args.dry_run
        )
    return rounds_done


def summary(plans: dict[str, KernelPlan], table) -> None:
    """The closing table (console and record.log)."""
    table("")
    table(f"{'kernel':22} {'points':>6} {'codes':>5} {'invalid':>7} {'default':>9} {'mad':>6} {'best':>7} {'noise':>6}")
    for name, plan in plans.items():
        dflt = plan.codes[plan.default_code]
        d_us = _median(dflt["time_us"]) if dflt["time_us"] else None
        valid = [c for c in plan.codes if c["valid"] and c["time_us"]]
        best = d_us / min(_median(c["time_us"]) for c in valid) if valid and d_us else None
        n_inv = sum(1 for row in plan.rows if not plan.codes[row[-1]]["valid"])
        noise = noise_estimate([c["time_us"] for c in valid if len(c["time_us"]) >= 2])["rel_sd"]
        mad = mad_rel(dflt["time_us"])
        table(
            f"{name:22} {len(plan.points):6d} {sum(1 for c in plan.codes if c['digest']):5d} {n_inv:7d} "
            f"{(d_us or 0) / 1000:7.1f}ms {f'{100 * mad:.1f}%' if mad is not None else '-':>6} "
            f"{f'{best:.3f}x' if best else '-':>7} {100 * noise:5.1f}%"
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.cpu_from:
        n = cpu_variant(Path(args.cpu_from), out_dir, print)
        print(f"wrote {n} landscapes to {out_dir}")
        return 0
    log_file = (out_dir / "record.log").open("a")

    def log(msg: str) -> None:
        line = f"[{time.perf_counter() - t_start:7.1f}s] {msg}"
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    def table(line: str) -> None:
        print(line)
        log_file.write(line + "\n")

    kernels = args.kernel_list
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="host-landscape-"))
    work.mkdir(parents=True, exist_ok=True)
    version, version_line = gxx_version()
    dims = gcc_dimensions(version)
    try:
        rel_cmd = Path(__file__).resolve().relative_to(ROOT)
    except ValueError:
        rel_cmd = Path(__file__)
    ctx = {
        "version": version,
        "compiler_line": version_line,
        "cpu": cpu_info(),
        "pin_core": args.pin_core,
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": f"python {rel_cmd} "
        + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
    }
    log(
        f"{version_line}; CPU {ctx['cpu']['model']} ({ctx['cpu']['cores']} cores, -march=native = "
        f"{ctx['cpu']['march_native']}); load {os.getloadavg()}; work folder {work}"
    )
    log(f"gcc space: {', '.join(f'{n} ({len(v)})' for n, v in dims)}; kernels {kernels}")

    plans = plan_and_build(kernels, dims, args, work, log)
    if args.pin_core >= 0:  # the runs (children inherit it) on one core; the builds used every core
        os.sched_setaffinity(0, {args.pin_core})
        log(f"timing on core {args.pin_core} only")
    reference_runs(plans, log)
    rounds_done = run_rounds(plans, args, ctx, out_dir, t_start, log)
    summary(plans, table)
    total = time.perf_counter() - t_start
    log(f"done: {rounds_done} rounds, total {total:.0f} s")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

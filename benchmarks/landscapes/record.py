#!/usr/bin/env python3
"""Record full flag landscapes of standalone CUDA kernels (issue 5; KERNELS below).

For each kernel: every point of a flag sub-space of the nvcc space (or, above --max-points, the default,
every single- and double-flag change and a random sample) is

  1. compiled to a cubin for sm_90 (`nvcc -cubin -arch=sm_90 -O3 <flags> kernel.cu`, flags as
     catalogue.canonical_flags gives them to nvcc; points with the same canonical flags share one build),
     in parallel; a build failure makes an invalid point with the error line;
  2. fingerprinted (compileiq_cmake.flags.fingerprint: sha256 of the normalized SASS); points are grouped by
     digest ("codes"); cubins whose code sections are byte-identical are fingerprinted once;
  3. timed, one unique code at a time, in-process with pycuda (module_from_file, random non-zero inputs,
     a warm-up launch, CUDA events around each of --launches back-to-back launches; the median is one
     sample), in two passes, each in its own random order; the default code is also measured at the
     start and end of each pass (drift anchors);
  4. checked: the output of each code is compared with the default build's output on the GPU (relative
     L2 error, per-kernel tolerance);
  5. written to <out>/<kernel>.json (format: README.md next to this file).

`--dry-run` stops after step 2 (no GPU, no pycuda) and writes <out>/<kernel>.dryrun.json.

Usage: python3 benchmarks/landscapes/record.py --out DIR
       [--kernels nbody,stencil,sgemm,blackscholes,spmv_csr,rk4_oscillators,softmax_rows,layernorm_gelu,conv2d_5x5]
       [--max-points N] [--jobs N] [--launches N] [--dry-run] [--deadline SECONDS]
       (default: every kernel in KERNELS)
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
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNEL_DIR = HERE / "kernels"
sys.path.insert(0, str(HERE.parent.parent))  # the repository's package when it is not installed

from compileiq_cmake.flags.fingerprint import fingerprint  # noqa: E402
from compileiq_cmake.flags.catalogue import canonical_flags  # noqa: E402
from compileiq_cmake.flags.space import load_space  # noqa: E402

FORMAT = "compileiq-landscape"
FORMAT_VERSION = 1
ARCH = "sm_90"
BASE_COMMAND = ["-cubin", f"-arch={ARCH}", "-O3"]

# Sub-spaces: dimension name -> the values kept (token tuples exactly as in flags/nvcc.toml; the default ()
# is always first). Sizes: nbody 1152 points (648 builds after canonical dedupe), stencil 600, sgemm 720,
# blackscholes 1152 (648 builds), spmv_csr 720, rk4_oscillators 576 (324 builds), softmax_rows 720,
# layernorm_gelu 768 (432 builds), conv2d_5x5 768.
_NUMERICS = {
    "use_fast_math": [(), ("--use_fast_math",)],
    "ftz": [(), ("--ftz=true",)],
    "prec_div": [(), ("--prec-div=false",)],
    "prec_sqrt": [(), ("--prec-sqrt=false",)],
    "fmad": [(), ("--fmad=false",)],
}
SUBSPACES: dict[str, dict[str, list[tuple[str, ...]]]] = {
    "nbody": {
        **_NUMERICS,
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "maxrregcount": [(), ("-maxrregcount=32",)],
        "load_cache": [(), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",)],
        "restrict": [(), ("--restrict",)],
    },
    "stencil": {
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "use_fast_math": [(), ("--use_fast_math",)],
        "fmad": [(), ("--fmad=false",)],
        "load_cache": [(), ("-Xptxas=-dlcm=ca",), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",), ("-Xptxas=-dlcm=lu",)],
        "store_cache": [(), ("-Xptxas=-dscm=wb",), ("-Xptxas=-dscm=wt",), ("-Xptxas=-dscm=cg",), ("-Xptxas=-dscm=cs",)],
        "restrict": [(), ("--restrict",)],
    },
    "sgemm": {
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "register_usage_level": [(), ("-Xptxas=--register-usage-level=0",), ("-Xptxas=--register-usage-level=2",),
                                 ("-Xptxas=--register-usage-level=8",), ("-Xptxas=--register-usage-level=10",)],
        "maxrregcount": [(), ("-maxrregcount=32",), ("-maxrregcount=64",), ("-maxrregcount=96",),
                         ("-maxrregcount=128",), ("-maxrregcount=255",)],
        "fmad": [(), ("--fmad=false",)],
        "load_cache": [(), ("-Xptxas=-dlcm=cg",)],
        "restrict": [(), ("--restrict",)],
    },
    # No maxrregcount: the default build already uses 32 registers, so every cap in the catalogue (>= 32)
    # leaves the code unchanged; the streaming loads get cache operators and --restrict instead.
    # --extra-device-vectorization is kept although it changed no code here (nvcc 13.0): it also
    # exercises the --restrict repair rule.
    "blackscholes": {
        **_NUMERICS,
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "load_cache": [(), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",)],
        "restrict": [(), ("--restrict",)],
        "extra_device_vectorization": [(), ("--extra-device-vectorization",)],
    },
    "spmv_csr": {
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "load_cache": [(), ("-Xptxas=-dlcm=ca",), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",), ("-Xptxas=-dlcm=lu",)],
        "restrict": [(), ("--restrict",)],
        "maxrregcount": [(), ("-maxrregcount=32",)],
        "fmad": [(), ("--fmad=false",)],
        "use_fast_math": [(), ("--use_fast_math",)],
        # cicc unroll count of the per-lane loop (loads in flight per lane vs loop overhead)
        "unroll_count": [(), ("-Xcicc=--Xopt,-unroll-count=2",), ("-Xcicc=--Xopt,-unroll-count=4",)],
    },
    # The default build uses 70 registers (no __launch_bounds__, so the cap applies): 32 spills, 64 squeezes.
    "rk4_oscillators": {
        **_NUMERICS,
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "maxrregcount": [(), ("-maxrregcount=32",), ("-maxrregcount=64",)],
        "restrict": [(), ("--restrict",)],
    },
    # No fmad (it changed no code here, nvcc 13.0: expf uses explicit fmaf) and no prec_sqrt (no sqrt);
    # the store cache operator instead (128 MiB of streaming stores).
    "softmax_rows": {
        "use_fast_math": [(), ("--use_fast_math",)],
        "ftz": [(), ("--ftz=true",)],
        "prec_div": [(), ("--prec-div=false",)],
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "load_cache": [(), ("-Xptxas=-dlcm=ca",), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",), ("-Xptxas=-dlcm=lu",)],
        "store_cache": [(), ("-Xptxas=-dscm=cg",), ("-Xptxas=-dscm=cs",)],
        "restrict": [(), ("--restrict",)],
    },
    # All the numerics flags change code here (tanhf, 1 / sqrtf, the normalization's mul-adds); every
    # -dlcm value changes the loads (nvcc 13.0), cg / cs / lu kept.
    "layernorm_gelu": {
        **_NUMERICS,
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "load_cache": [(), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",), ("-Xptxas=-dlcm=lu",)],
        "restrict": [(), ("--restrict",)],
    },
    # The default build uses 40 registers (no __launch_bounds__, so the cap applies): 32 is the only cap
    # in the catalogue below it. No ftz: --use_fast_math gives the same code as --ftz=true here (no
    # transcendentals, no division). The forced cicc unroll count also overrides the #pragma unroll of the
    # filter loops: 2 and 4 leave the weight array in a local-memory stack frame (160 / 120 bytes), 8
    # unrolls the halo-load loop (43 registers).
    "conv2d_5x5": {
        "ptxas_opt_level": [(), ("-Xptxas=-O1",), ("-Xptxas=-O2",)],
        "fmad": [(), ("--fmad=false",)],
        "use_fast_math": [(), ("--use_fast_math",)],
        "load_cache": [(), ("-Xptxas=-dlcm=ca",), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",)],
        "maxrregcount": [(), ("-maxrregcount=32",)],
        "restrict": [(), ("--restrict",)],
        "unroll_count": [(), ("-Xcicc=--Xopt,-unroll-count=2",), ("-Xcicc=--Xopt,-unroll-count=4",),
                         ("-Xcicc=--Xopt,-unroll-count=8",)],
    },
}


# The learning design (issue 23: the prior's data), for the kernels declared in inputs_*.py: every single
# value of every single-token dimension of the nvcc space (device LTO needs relocatable code and a link,
# not a cubin), the full product of the CORE values (the other dimensions at their default: a complete
# sub-landscape a replayed search can run on) and `--learn-random` uniform random points of the whole
# space (combinations across all dimensions). enumerate_points(..., core=LEARN_CORE).
LEARN_CORE = {
    "use_fast_math": 2, "ftz": 2, "prec_div": 2, "fmad": 2,  # the first N values of each dimension
    "ptxas_opt_level": 2, "restrict": 2,  # -Xptxas=-O2 gave the default's code on all nine earlier kernels
}
LEARN_CORE_VALUES = {  # dimensions whose core values are not their first N
    "maxrregcount": [(), ("-maxrregcount=32",), ("-maxrregcount=64",), ("-maxrregcount=128",)],
    "load_cache": [(), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",)],
}
LEARN_DIMENSIONS = ("ptxas_opt_level", "register_usage_level", "maxrregcount", "use_fast_math", "ftz", "prec_div",
                    "prec_sqrt", "fmad", "load_cache", "store_cache", "restrict", "ofast_compile", "cicc_opt_level",
                    "extra_device_vectorization", "unroll_count", "disable_loop_unroll", "disable_licm", "sched4reg",
                    "disable_nvvm_remat", "opt_fdiv", "no_device_inline", "nvvm_latest", "ptxas_cloning",
                    "limit_fold_fp", "jump_table_density")


@dataclass
class KernelSpec:
    name: str
    source: str
    function: str
    character: str
    tolerance: float  # relative L2 error vs the default build's output
    problem: str
    setup: object = None  # inputs.Entry.setup for the declarative kernels (inputs_*.py), else None
    kind: str = ""
    extra_flags: tuple[str, ...] = ()


KERNELS = {
    "nbody": KernelSpec("nbody", "nbody_soa.cu", "nbody_forces", "math-heavy", 1e-3,
                        "n=32768 bodies, 8 j-slices, grid (256, 8) x 128 threads, eps2=1e-4"),
    "stencil": KernelSpec("stencil", "stencil_diffuse.cu", "diffuse5", "memory-bound", 1e-5,
                          "8192 x 8192 float, variable coefficient, dt=0.2, grid (32, 512) x 256 threads"),
    "sgemm": KernelSpec("sgemm", "sgemm_reg8x8.cu", "sgemm_128x128_8x8", "register-pressure-bound", 1e-3,
                        "M=N=K=2048 float, 128x128 tiles, 8x8 per thread, grid (16, 16) x 256 threads"),
    "blackscholes": KernelSpec("blackscholes", "blackscholes.cu", "bs_price",
                               "math-heavy (transcendentals, divisions; memory-streaming)", 1e-3,
                               "n=2^25 options (S in [5, 30], K in [1, 100], T in [0.25, 10]), r=0.02, v=0.30, "
                               "call and put outputs, grid 2048 x 256 threads (grid-stride)"),
    "spmv_csr": KernelSpec("spmv_csr", "spmv_csr.cu", "spmv_csr_vector",
                           "memory-bound, irregular (gathers through column indices)", 1e-5,
                           "CSR 2^20 x 2^20, 8..56 (mean 32) random columns per row, ~33.5M nonzeros, float, "
                           "one warp per row, grid 131072 x 256 threads"),
    "rk4_oscillators": KernelSpec("rk4_oscillators", "rk4_oscillators.cu", "rk4_step",
                                  "math-heavy, register-heavy (sinf, sincosf, divisions; 70 registers)", 1e-3,
                                  "n=2^20 damped driven pendulum-Duffing oscillators (m in [0.5, 2], c in [0.3, 0.8], "
                                  "k in [0.5, 4], F in [0.2, 1], 8 drive harmonics with weights in [0.05, 0.25]), "
                                  "beta=0.2, omega=1.3, 64 RK4 steps of h = 0.1 / sqrt(k / m), "
                                  "grid 4096 x 256 threads"),
    "softmax_rows": KernelSpec("softmax_rows", "softmax_rows.cu", "softmax_rows",
                               "mixed memory / math (expf, a division per element, warp-shuffle reductions)", 1e-5,
                               "32768 x 1024 float (inputs normal, sigma 2), row-wise stable softmax, "
                               "one warp per row, values cached in registers, grid 4096 x 256 threads"),
    "layernorm_gelu": KernelSpec("layernorm_gelu", "layernorm_gelu.cu", "layernorm_gelu",
                                 "mixed memory / math (tanhf per element, 1 / sqrtf per row, block reductions)",
                                 1e-4,
                                 "16384 x 2048 float (inputs normal, mean 0.5, sigma 2), bias and beta in "
                                 "[-0.5, 0.5], gamma in [0.5, 1.5], eps=1e-5, GELU tanh form, one block per "
                                 "row, grid 16384 x 256 threads"),
    "conv2d_5x5": KernelSpec("conv2d_5x5", "conv2d_5x5.cu", "conv2d_5x5",
                             "FMA-bound (shared-memory tiles, 25 FMAs per output)", 1e-5,
                             "8192 x 8192 float image in [0, 1], 5x5 filter in [-0.5, 0.5] (pointer argument), "
                             "zero padding, 32x8 output tiles with halo, 4 outputs per thread, "
                             "grid (256, 1024) x (32, 2) threads"),
}


def _declared_kernels() -> dict[str, KernelSpec]:
    """The kernels declared in inputs_*.py (issue 23), each with the learning design's dimensions."""
    sys.path.insert(0, str(HERE))
    found: dict[str, KernelSpec] = {}
    for module in ("inputs_llm", "inputs_hpc"):
        try:
            entries = __import__(module).ENTRIES
        except ImportError:
            continue
        for name, e in entries.items():
            found[name] = KernelSpec(name, e.source, e.function, e.character, e.tolerance, e.problem,
                                     setup=e.setup, kind=e.kind, extra_flags=tuple(e.extra_flags))
    return found


for _name, _spec in _declared_kernels().items():
    if _name not in KERNELS:
        KERNELS[_name] = _spec
        SUBSPACES[_name] = {d: None for d in LEARN_DIMENSIONS}  # None: every value of the dimension


# ---------------------------------------------------------------- the sub-space and its points

def subspace_dimensions(kernel: str, nvcc_version: str) -> list[tuple[str, list[tuple[str, ...]]]]:
    """The kernel's dimensions, each value checked against the installed nvcc's flag space."""
    wanted = SUBSPACES[kernel]
    space = load_space("nvcc", "NVIDIA", nvcc_version, include=tuple(wanted), arch="90")
    by_name = {d.name: d for d in space.dimensions}
    dims = []
    for name, values in wanted.items():
        if name not in by_name:
            raise SystemExit(f"dimension {name} is not in the nvcc {nvcc_version} space")
        if values is None:
            values = list(by_name[name].values)
        for v in values:
            if tuple(v) not in by_name[name].values:
                raise SystemExit(f"value {v} of {name} is not in the nvcc space")
        if tuple(values[0]) != ():
            raise SystemExit(f"{name}: the first value must be the default ()")
        dims.append((name, [tuple(v) for v in values]))
    return dims


def learn_points(dims, n_random: int, seed: int) -> tuple[list[tuple[int, ...]], str]:
    """The learning design: the full product of the core values, every single change, random points."""
    sizes = [len(v) for _, v in dims]
    core_ranges = []
    for name, values in dims:
        if name in LEARN_CORE_VALUES:
            core_ranges.append([values.index(tuple(v)) for v in LEARN_CORE_VALUES[name]])
        else:
            core_ranges.append(list(range(LEARN_CORE.get(name, 1))))
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
    return sorted(chosen), (f"learn: the full product of the core values ({n_core} points: "
                            f"{', '.join(n for n, _ in dims if n in LEARN_CORE or n in LEARN_CORE_VALUES)}), "
                            f"every single change and {n_random} uniform random points, "
                            f"{len(chosen)} of {math.prod(sizes)}")


def enumerate_points(dims, max_points: int, seed: int) -> tuple[list[tuple[int, ...]], str]:
    sizes = [len(v) for _, v in dims]
    total = math.prod(sizes)
    if total <= max_points:
        return list(itertools.product(*[range(s) for s in sizes])), "full"
    rng = random.Random(seed)
    nd = len(dims)
    chosen: dict[tuple[int, ...], None] = {tuple([0] * nd): None}
    for d in range(nd):
        for v in range(1, sizes[d]):
            p = [0] * nd
            p[d] = v
            chosen[tuple(p)] = None
    doubles = []
    for a, b in itertools.combinations(range(nd), 2):
        for va in range(1, sizes[a]):
            for vb in range(1, sizes[b]):
                p = [0] * nd
                p[a], p[b] = va, vb
                doubles.append(tuple(p))
    rng.shuffle(doubles)
    for p in doubles[: max(0, max_points - len(chosen))]:
        chosen[p] = None
    while len(chosen) < max_points:
        chosen[tuple(rng.randrange(s) for s in sizes)] = None
    return sorted(chosen), f"sampled: default + single + double changes + uniform random, {max_points} of {total}"


def point_flags(dims, point: tuple[int, ...]) -> tuple[str, ...]:
    flags: list[str] = []
    for (_, values), i in zip(dims, point):
        flags.extend(values[i])
    return tuple(flags)


# ---------------------------------------------------------------- step 1 + 2: compile and fingerprint

def nvcc_version() -> tuple[str, str]:
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return (m.group(1) if m else "0"), out.strip().splitlines()[-2] if out.strip() else ""


def _error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower() or "fatal" in ln.lower():
            return ln[:300]
    return (lines[0] if lines else "unknown error")[:300]


def compile_one(source: Path, flags: tuple[str, ...], cubin: Path, extra: tuple[str, ...] = ()) -> str | None:
    """None on success, else the error line."""
    cmd = ["nvcc", *BASE_COMMAND, *extra, *flags, str(source), "-o", str(cubin)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "nvcc timed out after 300 s"
    if proc.returncode != 0 or not cubin.is_file():
        return _error_line(proc.stderr + proc.stdout)
    return None


def elf_code_key(path: Path) -> str:
    """sha256 over every ELF section of a cubin except .note.nv.tkinfo (which holds the tool command line):
    equal keys mean byte-identical code, resources and metadata, hence equal SASS fingerprints. Used only
    to avoid disassembling identical cubins twice; the code identity is always the SASS digest."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return hashlib.sha256(data).hexdigest()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    str_off, str_size = headers[shstrndx][4], headers[shstrndx][5]
    strtab = data[str_off:str_off + str_size]
    h = hashlib.sha256()
    for name_off, typ, flags, _addr, off, size, link, info, _align, entsize in headers:
        name = strtab[name_off:strtab.index(b"\0", name_off)] if name_off < len(strtab) else b""
        if name == b".note.nv.tkinfo":
            continue
        h.update(name + b"\0" + struct.pack("<IQQIIQ", typ, flags, size, link, info, entsize))
        if typ != 8:  # SHT_NOBITS
            h.update(data[off:off + size])
    return h.hexdigest()


@dataclass
class Build:
    flags: tuple[str, ...]  # canonical
    cubin: Path
    error: str | None = None
    elf_key: str | None = None
    digest: str | None = None
    resources: dict = field(default_factory=dict)
    seconds: float = 0.0


def build_all(jobs: list[tuple[str, Build, Path]], workers: int, log) -> None:
    """Compile every build (in parallel), then fingerprint one cubin per ELF key."""
    def comp(item):
        kernel, b, src = item
        t0 = time.perf_counter()
        b.error = compile_one(src, b.flags, b.cubin, KERNELS[kernel].extra_flags if kernel in KERNELS else ())
        if b.error is None:
            b.elf_key = elf_code_key(b.cubin)
        b.seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for k, _ in enumerate(pool.map(comp, jobs), 1):
            if k % 250 == 0 or k == len(jobs):
                log(f"  compiled {k}/{len(jobs)} ({time.perf_counter() - t0:.0f} s)")
    reps: dict[tuple[str, str], Build] = {}
    for kernel, b, _ in jobs:
        if b.error is None:
            reps.setdefault((kernel, b.elf_key), b)

    def fp(b: Build):
        f = fingerprint(b.cubin)
        k = f.kernels[0] if f.kernels else None
        b.digest = f.digest
        b.resources = {} if k is None else {
            "regs": k.registers, "spill": k.spill_bytes, "shared": k.shared_bytes, "instr": k.instructions}

    t1 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(fp, reps.values()))
    for kernel, b, _ in jobs:
        if b.error is None:
            r = reps[(kernel, b.elf_key)]
            b.digest, b.resources = r.digest, r.resources
    log(f"  fingerprinted {len(reps)} distinct cubins ({time.perf_counter() - t1:.0f} s)")


# ---------------------------------------------------------------- step 3 + 4: timing and verdicts (pycuda)

class GpuBench:
    """Inputs, launch configuration and the output check of one kernel, in one pycuda context."""

    def __init__(self, spec: KernelSpec, l2diff_cubin: Path, launches: int, seed: int):
        import numpy as np
        import pycuda.driver as cuda
        self.np, self.cuda, self.spec, self.launches = np, cuda, spec, launches
        rng = np.random.default_rng(seed)
        self.allocs = []

        def upload(a, dtype=np.float32):
            a = np.ascontiguousarray(a, dtype=dtype)
            d = cuda.mem_alloc(a.nbytes)
            cuda.memcpy_htod(d, a)
            self.allocs.append(d)
            return int(d)

        def empty(count):
            d = cuda.mem_alloc(count * 4)
            self.allocs.append(d)
            return int(d)

        if spec.setup is not None:
            import inputs  # noqa: PLC0415 (benchmarks/landscapes, on sys.path)
            st = spec.setup(rng)
            out = empty(st.out_count)
            self.out_count, self.sig, self.grid, self.block = st.out_count, st.sig, tuple(st.grid), tuple(st.block)
            self.args = tuple(out if a is inputs.OUT else upload(a, a.dtype) if isinstance(a, np.ndarray) else a
                              for a in st.args)
        elif spec.name == "nbody":
            n, slices = 32768, 8
            px, py, pz = (upload(rng.uniform(-1.0, 1.0, n)) for _ in range(3))
            mass = upload(rng.uniform(0.5, 1.5, n) / n)
            self.out_count = 4 * slices * n
            out = empty(self.out_count)
            self.sig = "iifPPPPP"
            self.args = (n, (n + slices - 1) // slices, 1e-4, px, py, pz, mass, out)
            self.grid, self.block = ((n + 127) // 128, slices), (128, 1, 1)
        elif spec.name == "stencil":
            n = 8192
            u = upload(0.1 + 0.9 * rng.random((n, n), dtype=np.float32))
            kappa = upload(0.5 + 0.5 * rng.random((n, n), dtype=np.float32))
            self.out_count = n * n
            out = empty(self.out_count)
            self.sig = "ifPPP"
            self.args = (n, 0.2, u, kappa, out)
            self.grid, self.block = ((n + 255) // 256, (n + 15) // 16), (256, 1, 1)
        elif spec.name == "sgemm":
            m = 2048
            a = upload(rng.random((m, m), dtype=np.float32) * 2 - 1)
            b = upload(rng.random((m, m), dtype=np.float32) * 2 - 1)
            self.out_count = m * m
            out = empty(self.out_count)
            self.sig = "iiiPPP"
            self.args = (m, m, m, a, b, out)
            self.grid, self.block = (m // 128, m // 128), (256, 1, 1)
        elif spec.name == "blackscholes":
            n = 1 << 25
            s = upload(rng.uniform(5.0, 30.0, n))
            k = upload(rng.uniform(1.0, 100.0, n))
            t = upload(rng.uniform(0.25, 10.0, n))
            self.out_count = 2 * n  # calls out[0, n), puts out[n, 2n)
            out = empty(self.out_count)
            self.sig = "iffPPPP"
            self.args = (n, 0.02, 0.30, s, k, t, out)
            self.grid, self.block = (2048, 1), (256, 1, 1)
        elif spec.name == "spmv_csr":
            n_rows = n_cols = 1 << 20
            lengths = rng.integers(8, 57, n_rows)  # 8..56 nonzeros per row, mean 32
            row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
            np.cumsum(lengths, out=row_ptr[1:])
            nnz = int(row_ptr[-1])
            assert nnz < 2**31
            cols = rng.integers(0, n_cols, nnz, dtype=np.int32)  # in [0, n_cols): no guard in the kernel
            rp = upload(row_ptr, np.int32)
            ci = upload(cols, np.int32)
            vals = upload(rng.uniform(-1.0, 1.0, nnz))
            x = upload(rng.uniform(0.5, 1.5, n_cols))
            self.out_count = n_rows
            out = empty(self.out_count)
            self.sig = "iPPPPP"
            self.args = (n_rows, rp, ci, vals, x, out)
            self.grid, self.block = ((n_rows + 7) // 8, 1), (256, 1, 1)  # 8 warps per block, one row each
        elif spec.name == "rk4_oscillators":
            n, steps, harmonics = 1 << 20, 64, 8
            x0 = upload(rng.uniform(-1.0, 1.0, n))
            v0 = upload(rng.uniform(-1.0, 1.0, n))
            params = upload(np.stack([rng.uniform(0.5, 2.0, n),    # m
                                      rng.uniform(0.3, 0.8, n),    # c
                                      rng.uniform(0.5, 4.0, n),    # k
                                      rng.uniform(0.2, 1.0, n)],   # F
                                     axis=1))  # (n, 4): float4 params[i] = (m, c, k, F)
            amp = upload(rng.uniform(0.05, 0.25, (harmonics, n)))  # amp[j * n + i]
            self.out_count = 2 * n  # x out[0, n), x' out[n, 2n)
            out = empty(self.out_count)
            self.sig = "iifffPPPPP"
            self.args = (n, steps, 0.1, 0.2, 1.3, x0, v0, params, amp, out)
            self.grid, self.block = ((n + 255) // 256, 1), (256, 1, 1)
        elif spec.name == "softmax_rows":
            n_rows, cols = 32768, 1024  # cols: COLS in the kernel
            x = upload(rng.normal(0.0, 2.0, (n_rows, cols)))
            self.out_count = n_rows * cols
            out = empty(self.out_count)
            self.sig = "iPP"
            self.args = (n_rows, x, out)
            self.grid, self.block = ((n_rows + 7) // 8, 1), (256, 1, 1)  # 8 warps per block, one row each
        elif spec.name == "layernorm_gelu":
            n_rows, cols = 16384, 2048  # cols: COLS in the kernel
            x = upload(rng.normal(0.5, 2.0, (n_rows, cols)))
            gamma = upload(rng.uniform(0.5, 1.5, cols))
            beta = upload(rng.uniform(-0.5, 0.5, cols))
            bias = upload(rng.uniform(-0.5, 0.5, cols))
            self.out_count = n_rows * cols
            out = empty(self.out_count)
            self.sig = "ifPPPPP"
            self.args = (n_rows, 1e-5, x, gamma, beta, bias, out)
            self.grid, self.block = (n_rows, 1), (256, 1, 1)  # one block (THREADS = 256) per row
        elif spec.name == "conv2d_5x5":
            n = 8192
            img = upload(rng.random((n, n), dtype=np.float32))
            w = upload(rng.uniform(-0.5, 0.5, 25))  # w[fr * 5 + fc]
            self.out_count = n * n
            out = empty(self.out_count)
            self.sig = "iPPP"
            self.args = (n, img, w, out)
            self.grid, self.block = ((n + 31) // 32, (n + 7) // 8), (32, 2, 1)  # 32x8 outputs per block
        else:
            raise ValueError(spec.name)
        self.out = out
        self.ref = empty(self.out_count)
        self.acc = empty(4)  # two doubles
        self.l2_module = cuda.module_from_file(str(l2diff_cubin))
        self.l2 = self.l2_module.get_function("l2diff")
        self.l2.prepare("QPPP")
        self.stream = cuda.Stream()
        self.modules: dict[str, object] = {}

    def function(self, cubin: Path):
        key = str(cubin)
        if key not in self.modules:
            mod = self.cuda.module_from_file(key)
            f = mod.get_function(self.spec.function)
            f.prepare(self.sig)
            self.modules[key] = (mod, f)
        return self.modules[key][1]

    def drop(self, cubin: Path) -> None:
        self.modules.pop(str(cubin), None)

    def _launch(self, f) -> None:
        f.prepared_async_call(self.grid, self.block, self.stream, *self.args)

    def time(self, cubin: Path, launches: int | None = None) -> list[float]:
        """Per-launch times in microseconds: one warm-up launch, then `launches` timed back to back."""
        cuda = self.cuda
        f = self.function(cubin)
        n = launches or self.launches
        self._launch(f)
        events = [cuda.Event() for _ in range(n + 1)]
        events[0].record(self.stream)
        for k in range(n):
            self._launch(f)
            events[k + 1].record(self.stream)
        events[-1].synchronize()
        return [events[k].time_till(events[k + 1]) * 1000.0 for k in range(n)]

    def warm_up(self, cubin: Path, seconds: float) -> None:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            self.time(cubin, 10)

    def poison_output(self) -> None:
        self.cuda.memset_d32(self.out, 0x7FC00000, self.out_count)  # quiet NaN: a code that writes nothing fails

    def save_reference(self) -> None:
        self.cuda.memcpy_dtod(self.ref, self.out, self.out_count * 4)

    def rel_error(self) -> float:
        np, cuda = self.np, self.cuda
        self.stream.synchronize()
        cuda.memset_d32(self.acc, 0, 4)
        self.l2.prepared_call((1024, 1), (256, 1, 1), self.out_count, self.out, self.ref, self.acc)
        cuda.Context.synchronize()
        acc = np.zeros(2, dtype=np.float64)
        cuda.memcpy_dtoh(acc, self.acc)
        if not np.all(np.isfinite(acc)):
            return float("nan")
        return float(math.sqrt(acc[0] / acc[1])) if acc[1] > 0 else float("nan")

    def release(self) -> None:
        self.modules.clear()
        for d in self.allocs:
            d.free()
        self.allocs.clear()


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def noise_estimate(pairs: list[tuple[float, float]]) -> dict:
    """Relative spread between the two passes of each code (d = (t2 - t1) / mean(t1, t2))."""
    if not pairs:
        return {"pairs": 0}
    d = [(b - a) / (0.5 * (a + b)) for a, b in pairs if a > 0 and b > 0]
    if not d:
        return {"pairs": 0}
    ad = sorted(abs(x) for x in d)
    mad = statistics.median(abs(x - statistics.median(d)) for x in d)
    return {
        "pairs": len(d),
        "median_abs_rel_diff": round(statistics.median(ad), 6),
        "p90_abs_rel_diff": round(ad[min(len(ad) - 1, int(0.9 * len(ad)))], 6),
        "max_abs_rel_diff": round(ad[-1], 6),
        "mean_rel_diff": round(statistics.fmean(d), 6),
        # per-sample (one median of launches) relative standard deviation, robust: 1.4826 MAD(d) / sqrt(2)
        "rel_sd": round(1.4826 * mad / math.sqrt(2), 6),
    }


# ---------------------------------------------------------------- the recorder

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for <kernel>.json and record.log")
    ap.add_argument("--kernels", default=",".join(KERNELS), help=f"comma-separated, of {', '.join(KERNELS)}")
    ap.add_argument("--max-points", type=int, default=2000, help="per kernel; above it the space is sampled")
    ap.add_argument("--learn-random", type=int, default=60,
                    help="uniform random points of the whole space per declared kernel (inputs_*.py)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--launches", type=int, default=20, help="timed launches per sample (median kept)")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--work", default="", help="folder for the cubins (default: a temporary folder)")
    ap.add_argument("--dry-run", action="store_true", help="compile and fingerprint only (no GPU)")
    ap.add_argument("--deadline", type=float, default=330.0,
                    help="seconds from start; pass-2 timing stops when it is near (files record it)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_file = (out_dir / "record.log").open("a")

    def log(msg: str) -> None:
        line = f"[{time.perf_counter() - t_start:6.1f}s] {msg}"
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    for k in kernels:
        if k not in KERNELS:
            ap.error(f"unknown kernel {k}; known: {', '.join(KERNELS)}")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="landscape-"))
    work.mkdir(parents=True, exist_ok=True)
    version, version_line = nvcc_version()
    command = "python3 benchmarks/landscapes/record.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    log(f"nvcc {version}; {args.jobs} workers; work folder {work}; kernels {kernels}")

    # ---- plan: points -> canonical builds
    plans = {}
    jobs: list[tuple[str, Build, Path]] = []
    l2diff = Build(flags=(), cubin=work / "l2diff.cubin")
    jobs.append(("_l2diff", l2diff, KERNEL_DIR / "l2diff.cu"))
    for kname in kernels:
        spec = KERNELS[kname]
        dims = subspace_dimensions(kname, version)
        points, sampling = (enumerate_points(dims, args.max_points, args.seed) if spec.setup is None
                            else learn_points(dims, args.learn_random, args.seed))
        builds: dict[tuple[str, ...], Build] = {}
        point_build = []
        (work / kname).mkdir(exist_ok=True)
        for p in points:
            cf = canonical_flags(point_flags(dims, p))
            if cf not in builds:
                builds[cf] = Build(flags=cf, cubin=work / kname / f"b{len(builds)}.cubin")
                jobs.append((kname, builds[cf], KERNEL_DIR / spec.source))
            point_build.append(builds[cf])
        plans[kname] = (spec, dims, points, sampling, point_build, builds)
        log(f"{kname}: {len(points)} points ({sampling}), {len(builds)} builds after canonical flags")

    log(f"step 1-2: compiling {len(jobs)} cubins")
    t_build = time.perf_counter()
    build_all(jobs, args.jobs, log)
    build_seconds = time.perf_counter() - t_build
    if l2diff.error:
        raise SystemExit(f"cannot build the l2diff helper: {l2diff.error}")

    bench_ctx = None
    if not args.dry_run:
        import pycuda.driver as cuda
        cuda.init()
        dev = cuda.Device(0)
        bench_ctx = dev.make_context()
        gpu = {"name": dev.name(), "compute_capability": "%d.%d" % dev.compute_capability(),
               "driver": cuda.get_driver_version(), "memory_gib": round(dev.total_memory() / 2**30, 1)}
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
            gpu["nvidia_smi"] = smi
        except (OSError, subprocess.SubprocessError):
            pass
    else:
        gpu = {"name": None}
    summary = []
    try:
        for kname in kernels:
            spec, dims, points, sampling, point_build, builds = plans[kname]
            t_k = time.perf_counter()
            # ---- codes: one per SASS digest, one per distinct build error line
            code_of: dict[str, int] = {}
            codes: list[dict] = []
            code_cubin: list[Path | None] = []
            build_seconds_list = [b.seconds for b in builds.values()]
            default_build = point_build[points.index(tuple([0] * len(dims)))]
            if default_build.error:
                raise SystemExit(f"{kname}: the default build fails: {default_build.error}")
            for b in [default_build, *builds.values()]:
                key = b.digest if b.error is None else "error:" + b.error
                if key in code_of:
                    continue
                code_of[key] = len(codes)
                if b.error is None:
                    codes.append({"digest": b.digest, "status": "untimed", "valid": None, "error": None,
                                  **b.resources, "flags": list(b.flags)})
                    code_cubin.append(b.cubin)
                else:
                    codes.append({"digest": None, "status": "build_failed", "valid": False, "error": None,
                                  "message": b.error, "flags": list(b.flags), "time_us": []})
                    code_cubin.append(None)
            point_rows = [[*p, code_of[b.digest if b.error is None else "error:" + b.error]]
                          for p, b in zip(points, point_build)]
            timed = [i for i, c in enumerate(codes) if c["status"] == "untimed"]
            log(f"{kname}: {len(points)} points -> {len(builds)} builds -> {len(timed)} unique device codes, "
                f"{len(codes) - len(timed)} build-error kinds")
            meta_extra: dict = {}
            if not args.dry_run:
                meta_extra = time_codes(spec, codes, code_cubin, timed, l2diff.cubin, args, log, t_start)
            n_invalid_points = sum(1 for r in point_rows if codes[r[-1]]["valid"] is False)
            doc = {
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "kernel": kname,
                "family": "nvcc",
                "metric": {"name": "kernel_time", "unit": "us", "higher_is_better": False},
                "meta": {
                    "synthetic": False,
                    "dry_run": bool(args.dry_run),
                    "character": spec.character,
                    **({"kind": spec.kind} if spec.kind else {}),
                    **({"extra_flags": list(spec.extra_flags)} if spec.extra_flags else {}),
                    "source": f"benchmarks/landscapes/kernels/{spec.source}",
                    "function": spec.function,
                    "problem": spec.problem,
                    "gpu": gpu,
                    "arch": ARCH,
                    "nvcc_version": version,
                    "nvcc": version_line,
                    "compile_command": "nvcc " + " ".join(BASE_COMMAND) + " <canonical flags> <source> -o <cubin>",
                    "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                             "machine": platform.machine()},
                    "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "command": command,
                    "sampling": sampling,
                    "space_size": math.prod(len(v) for _, v in dims),
                    "tolerance": {"metric": "relative L2 error vs the default build's output", "max": spec.tolerance},
                    "timing": (f"pycuda in-process, CUDA events around each of {args.launches} back-to-back "
                               "launches after one warm-up launch; a sample is the median launch time (us); "
                               f"{args.passes} passes over the unique codes, each in its own random order"),
                    "seconds": {"build_mean_per_cubin": round(statistics.fmean(build_seconds_list), 3)
                                if build_seconds_list else None},
                    **meta_extra,
                },
                "dimensions": [{"name": n, "values": [list(v) for v in vals]} for n, vals in dims],
                "default_code": point_rows[points.index(tuple([0] * len(dims)))][-1],
                "points": point_rows,
                "codes": codes,
            }
            path = out_dir / (f"{kname}.dryrun.json" if args.dry_run else f"{kname}.json")
            write_landscape(doc, path)
            best = None
            if not args.dry_run:
                dflt = codes[doc["default_code"]]
                valid = [c for c in codes if c["valid"] and c["time_us"]]
                if dflt["time_us"] and valid:
                    best = _median(dflt["time_us"]) / min(_median(c["time_us"]) for c in valid)
            summary.append((kname, len(points), len(builds), len(timed), n_invalid_points, best,
                            doc["meta"].get("noise", {}).get("rel_sd"), time.perf_counter() - t_k,
                            path.stat().st_size))
            log(f"{kname}: wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    finally:
        if bench_ctx is not None:
            bench_ctx.pop()
    total = time.perf_counter() - t_start
    print()
    print(f"{'kernel':12} {'points':>6} {'builds':>6} {'codes':>5} {'invalid':>7} {'best':>7} {'noise':>7} "
          f"{'time s':>7} {'KiB':>5}")
    for k, npts, nb, nc, ninv, best, noise, secs, size in summary:
        print(f"{k:12} {npts:6d} {nb:6d} {nc:5d} {ninv:7d} {('%.3fx' % best) if best else '-':>7} "
              f"{('%.2f%%' % (100 * noise)) if noise is not None else '-':>7} {secs:7.1f} {size / 1024:5.0f}")
    print(f"builds + fingerprints {build_seconds:.0f} s; total {total:.0f} s")
    log(f"done in {total:.0f} s")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def time_codes(spec: KernelSpec, codes: list[dict], cubins: list, timed: list[int], l2diff_cubin: Path,
               args, log, t_start: float) -> dict:
    """Steps 3 and 4 for one kernel: every code in `timed` measured in `args.passes` passes, then checked."""
    import pycuda.driver as cuda
    bench = GpuBench(spec, l2diff_cubin, args.launches, args.seed)
    rng = random.Random(args.seed + zlib.crc32(spec.name.encode()))
    default = timed[0]
    launches: dict[int, list[list[float]]] = {i: [] for i in timed}
    anchors: list[float] = []
    truncated = False
    try:
        # reference output and GPU warm-up (clocks) on the default code
        bench.poison_output()
        bench.time(cubins[default], 1)
        bench.save_reference()
        bench.warm_up(cubins[default], 1.0)
        t_pass0 = time.perf_counter()
        for p in range(args.passes):
            order = [i for i in timed if codes[i]["status"] != "launch_failed"]
            rng.shuffle(order)
            anchors.append(_median(bench.time(cubins[default])))
            for n_done, i in enumerate(order):
                if p > 0 and time.perf_counter() - t_start > args.deadline:
                    truncated = True
                    log(f"  deadline reached in pass {p + 1} after {n_done} codes")
                    break
                try:
                    if p == 0:
                        bench.poison_output()
                    launches[i].append(bench.time(cubins[i]))
                    if p == 0:
                        err = bench.rel_error()
                        codes[i]["error"] = None if math.isnan(err) else float("%.3g" % err)
                        ok = not math.isnan(err) and err <= spec.tolerance
                        codes[i]["status"] = "ok" if ok else "wrong_result"
                        codes[i]["valid"] = ok
                except cuda.Error as exc:  # launch failure: invalid, never timed again
                    codes[i].update(status="launch_failed", valid=False, message=str(exc).splitlines()[0][:300])
                    launches[i] = []
                if p == args.passes - 1:
                    bench.drop(cubins[i])
            anchors.append(_median(bench.time(cubins[default])))
            log(f"  {spec.name}: pass {p + 1} done ({time.perf_counter() - t_pass0:.0f} s)")
            if truncated:
                break
    finally:
        bench.release()
    pairs = []
    for i, runs in launches.items():
        c = codes[i]
        c["time_us"] = [round(_median(r), 3) for r in runs]
        c["launches_us"] = [[round(x, 2) for x in r] for r in runs]
        if len(runs) >= 2 and c["status"] == "ok":
            pairs.append((c["time_us"][0], c["time_us"][1]))
        if c["status"] == "untimed":
            c["status"], c["valid"] = "untimed", False
    within = [(max(r) - min(r)) / _median(r) for runs in launches.values() for r in runs if r]
    return {
        "noise": {**noise_estimate(pairs), "method": "relative difference of the two pass medians per valid code"},
        "within_sample_spread_median": round(statistics.median(within), 6) if within else None,
        "default_anchors_us": [round(a, 3) for a in anchors],
        "launches_per_sample": args.launches,
        "passes": args.passes,
        "truncated": truncated,
    }


def write_landscape(doc: dict, path: Path) -> None:
    """Compact JSON, one point / one code per line (small diffs, < 2 MB)."""
    parts = ["{"]
    keys = list(doc)
    for n, k in enumerate(keys):
        sep = "," if n < len(keys) - 1 else ""
        v = doc[k]
        if k in ("points", "codes", "dimensions"):
            rows = [json.dumps(x, separators=(",", ":")) for x in v]
            parts.append(f'"{k}":[\n' + ",\n".join(rows) + "\n]" + sep)
        else:
            parts.append(f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}{sep}")
    parts.append("}")
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(parts) + "\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())

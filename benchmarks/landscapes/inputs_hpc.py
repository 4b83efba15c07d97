"""Inputs of the HPC-style landscape kernels (kernels/<name>.cu), read by record.py next to its own
`KERNELS` and inputs_llm.py: `ENTRIES` maps each kernel name to its `Entry` (see inputs.py).

Sizes are chosen so that one launch takes roughly 0.1-5 ms on an H200; where a size differs from the
original plan (2^26 bytes histogram, 2^22 sort, 2^20 ELL rows, 8192 FFTs, 2^20 Monte Carlo paths),
the kernel's header comment says why. `python inputs_hpc.py` runs a self-check of every setup.
"""

from __future__ import annotations

import os
import sys

import numpy as np

if __package__:
    from .inputs import OUT, Entry, Setup
else:
    try:
        from inputs import OUT, Entry, Setup
    except ImportError:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from inputs import OUT, Entry, Setup


# ----------------------------------------------------------------------------------------------
# sizes (the self-check asserts the launch shapes against these)

SCAN_N = 1 << 26          # floats; segments of 1024, 256 threads x float4 per segment
SCAN_SEG = 1024
REDUCE_N = 1 << 27        # floats
REDUCE_BLOCKS = 1024
HIST_N = 1 << 28          # bytes
HIST_BLOCKS = 1024
SORT_N = 1 << 24          # floats; segments of 1024, 512 threads per segment
SORT_SEG = 1024
ELL_ROWS = 1 << 21
ELL_K = 32
ELL_BAND = 4096
ST3_N = 512               # 512^3
J2_N = 8192               # 8192^2, fp64
NB_N = 16384
FFT_LEN = 1024
FFT_BATCH = 16384
MC_PATHS = 1 << 21
MC_OPTIONS = 4096
MC_STEPS = 64
TR_ROWS = 8192
TR_COLS = 8192
LBM_NX = 4096
LBM_NY = 4096


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ----------------------------------------------------------------------------------------------
# setups

def _setup_scan(rng):
    x = rng.random(SCAN_N, dtype=np.float32)
    x -= np.float32(0.25)  # mostly positive increments, some negative
    return Setup("PPi", [x, OUT, SCAN_N], SCAN_N, (SCAN_N // SCAN_SEG, 1), (256, 1, 1))


def _setup_reduce(rng):
    x = rng.random(REDUCE_N, dtype=np.float32)
    x *= np.float32(2.0)  # uniform [0, 2): mean 1
    return Setup("PPi", [x, OUT, REDUCE_N], 1 + REDUCE_BLOCKS, (REDUCE_BLOCKS, 1), (256, 1, 1))


def _setup_hist(rng):
    a = rng.integers(0, 256, size=HIST_N, dtype=np.uint8)
    b = rng.integers(0, 256, size=HIST_N, dtype=np.uint8)
    np.minimum(a, b, out=a)  # skewed toward low bins (more same-bin conflicts than uniform)
    del b
    return Setup("PPi", [a, OUT, HIST_N], HIST_BLOCKS * 256, (HIST_BLOCKS, 1), (256, 1, 1))


def _setup_sort(rng):
    x = rng.random(SORT_N, dtype=np.float32)
    x -= np.float32(0.5)
    x *= np.float32(200.0)
    return Setup("PPi", [x, OUT, SORT_N], SORT_N, (SORT_N // SORT_SEG, 1), (512, 1, 1))


def _setup_spmv(rng):
    n, k = ELL_ROWS, ELL_K
    rows = np.arange(n, dtype=np.int32)
    cols = rng.integers(-ELL_BAND, ELL_BAND + 1, size=(k, n), dtype=np.int32)
    cols += rows[None, :]
    np.remainder(cols, n, out=cols)                      # banded, wrapped: 0 <= col < n
    vals = rng.random((k, n), dtype=np.float32)
    vals -= np.float32(0.5)
    lens = rng.integers(24, k + 1, size=n, dtype=np.int32)
    pad = np.arange(k, dtype=np.int32)[:, None] >= lens[None, :]
    vals[pad] = 0.0
    cols = np.where(pad, rows[None, :], cols).astype(np.int32, copy=False)
    x = rng.random(n, dtype=np.float32)
    x += np.float32(0.5)
    # column-major ELL: slot k of row r at k * nrows + r (C order of the (k, n) arrays)
    return Setup("PPPPii", [cols.reshape(-1), vals.reshape(-1), x, OUT, n, k], n,
                 (_cdiv(n, 256), 1), (256, 1, 1))


def _setup_stencil3d(rng):
    n = ST3_N
    u = rng.random(n * n * n, dtype=np.float32)
    u -= np.float32(0.5)
    return Setup("PPiiiff", [u, OUT, n, n, n, 0.4, 0.1], n * n * n,
                 (_cdiv(n, 32), _cdiv(n, 8)), (32, 8, 1))


def _setup_jacobi2d(rng):
    n = J2_N
    u = rng.random(n * n)
    u -= 0.5
    f = rng.random(n * n, dtype=np.float32).astype(np.float64)
    f -= 0.5
    f *= 100.0
    h2 = 1.0 / float((n - 1) * (n - 1))
    return Setup("PPPiidd", [u, f, OUT, n, n, h2, 0.8], n * n,
                 (_cdiv(n, 32), _cdiv(n, 8)), (32, 8, 1))


def _setup_nbody(rng):
    n = NB_N
    pos = np.empty((n, 4), dtype=np.float64)
    pos[:, :3] = rng.normal(0.0, 1.0, size=(n, 3))
    pos[:, 3] = rng.uniform(0.5, 1.5, size=n) / n
    return Setup("PPid", [pos.reshape(-1), OUT, n, 1e-4], 3 * n, (_cdiv(n, 64), 1), (64, 4, 1))


def _setup_fft(rng):
    x = rng.random(2 * FFT_LEN * FFT_BATCH, dtype=np.float32)
    x -= np.float32(0.5)
    return Setup("PPi", [x, OUT, FFT_BATCH], 2 * FFT_LEN * FFT_BATCH, (FFT_BATCH, 1), (512, 1, 1))


def _setup_montecarlo(rng):
    spot = rng.uniform(80.0, 120.0, size=MC_OPTIONS).astype(np.float32)
    strike = (spot * rng.uniform(0.9, 1.1, size=MC_OPTIONS)).astype(np.float32)
    vol = rng.uniform(0.1, 0.5, size=MC_OPTIONS).astype(np.float32)
    seed = int(rng.integers(0, 1 << 32))
    return Setup("PPPPiiiffI",
                 [spot, strike, vol, OUT, MC_PATHS, MC_OPTIONS, MC_STEPS, 0.03, 1.0, seed],
                 MC_PATHS, (_cdiv(MC_PATHS, 256), 1), (256, 1, 1))


def _setup_transpose(rng):
    a = rng.random(TR_ROWS * TR_COLS, dtype=np.float32)
    return Setup("PPii", [a, OUT, TR_ROWS, TR_COLS], TR_ROWS * TR_COLS,
                 (_cdiv(TR_COLS, 32), _cdiv(TR_ROWS, 32)), (32, 8, 1))


_LBM_C = ((0, 0), (1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, 1), (-1, -1), (1, -1))
_LBM_W = (4 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 36, 1 / 36, 1 / 36, 1 / 36)


def _setup_lbm(rng):
    n = LBM_NX * LBM_NY
    rho = rng.random(n, dtype=np.float32)      # density 1 +- 5 %
    rho -= np.float32(0.5)
    rho *= np.float32(0.1)
    rho += np.float32(1.0)
    ux = rng.random(n, dtype=np.float32)       # velocity components in [-0.05, 0.05)
    ux -= np.float32(0.5)
    ux *= np.float32(0.1)
    uy = rng.random(n, dtype=np.float32)
    uy -= np.float32(0.5)
    uy *= np.float32(0.1)
    usq = ux * ux
    usq += uy * uy
    usq *= np.float32(1.5)
    f = np.empty((9, n), dtype=np.float32)
    cu = np.empty(n, dtype=np.float32)
    tmp = np.empty(n, dtype=np.float32)
    for q, ((cx, cy), w) in enumerate(zip(_LBM_C, _LBM_W)):
        fq = f[q]
        # cu = cx*ux + cy*uy
        np.multiply(ux, np.float32(cx), out=cu)
        np.multiply(uy, np.float32(cy), out=tmp)
        cu += tmp
        # feq = w rho (1 + 3cu + 4.5cu^2 - usq)
        np.multiply(cu, np.float32(4.5), out=tmp)
        tmp += np.float32(3.0)
        tmp *= cu
        tmp += np.float32(1.0)
        tmp -= usq
        np.multiply(tmp, rho, out=fq)
        fq *= np.float32(w)
        # small non-equilibrium part: +-1 %
        r = rng.random(n, dtype=np.float32)
        r -= np.float32(0.5)
        r *= np.float32(0.02)
        r += np.float32(1.0)
        fq *= r
    return Setup("PPiif", [f.reshape(-1), OUT, LBM_NX, LBM_NY, 1.0 / 0.6], 9 * n,
                 (_cdiv(LBM_NX, 128), _cdiv(LBM_NY, 2)), (128, 2, 1))


# ----------------------------------------------------------------------------------------------
# entries

ENTRIES: dict[str, Entry] = {
    "scan_blocks": Entry(
        source="scan_blocks.cu", function="scan_blocks", kind="scan",
        character="memory-bound segmented inclusive scan: float4 loads, warp shuffles, 2 block barriers",
        tolerance=1e-5,
        problem="2^26 float32 in 1024-element segments; grid 65536 x 256 threads (float4 per thread)",
        setup=_setup_scan),
    "reduce_sum_atomic": Entry(
        source="reduce_sum_atomic.cu", function="reduce_sum_atomic", kind="reduction",
        character="memory-bound grid-stride float4 sum, shuffle + block reduction, 1 float atomic per block",
        tolerance=1e-4,
        problem="2^27 float32; grid 1024 x 256 threads (128 float4 each); out[0] = sum, out[1+b] = block partial",
        setup=_setup_reduce),
    "histogram_shared": Entry(
        source="histogram_shared.cu", function="histogram_shared", kind="histogram",
        character="shared-memory atomic bound (per-warp sub-histograms, skewed data), uint4 loads",
        tolerance=1e-5,
        problem="2^28 uint8 -> 256 bins per block; grid 1024 x 256 threads; out[block*256 + bin]",
        setup=_setup_hist),
    "bitonic_sort_block": Entry(
        source="bitonic_sort_block.cu", function="bitonic_sort_block", kind="sort",
        character="shared-memory latency and barrier bound bitonic network (55 stages per 1024 segment)",
        tolerance=1e-5,
        problem="2^24 float32 in 1024-element segments; grid 16384 x 512 threads",
        setup=_setup_sort),
    "spmv_ell": Entry(
        source="spmv_ell.cu", function="spmv_ell", kind="spmv",
        character="memory-bound ELLPACK SpMV, coalesced column-major slots, banded x gather from L2",
        tolerance=1e-5,
        problem="2^21 rows x 32 slots (24-32 nonzeros, zero padded), banded +-4096; grid 8192 x 256 threads",
        setup=_setup_spmv),
    "stencil3d_7pt": Entry(
        source="stencil3d_7pt.cu", function="stencil3d_7pt", kind="stencil",
        character="memory-bound 7-point 3D Jacobi, z-marching columns with register reuse",
        tolerance=1e-5,
        problem="512^3 float32; grid 16 x 64 of 32 x 8 threads, each marching 512 z-planes",
        setup=_setup_stencil3d),
    "jacobi2d_f64": Entry(
        source="jacobi2d_f64.cu", function="jacobi2d_f64", kind="fp64-stencil",
        character="memory-bound fp64 5-point weighted Jacobi (u, f fp64 in, float32 out)",
        tolerance=1e-5,
        problem="8192^2 fp64 u and f; grid 256 x 1024 of 32 x 8 threads",
        setup=_setup_jacobi2d),
    "nbody_f64_tiles": Entry(
        source="nbody_f64_tiles.cu", function="nbody_f64_tiles", kind="nbody",
        character="FP64-pipe bound all-pairs n-body (IEEE fp64 sqrt + division), shared-memory tiles",
        tolerance=1e-5,
        problem="n = 16384 bodies, 256-body fp64 tiles; grid 256 x (64, 4) threads (4-way split of sources)",
        setup=_setup_nbody),
    "fft_radix2_shared": Entry(
        source="fft_radix2_shared.cu", function="fft_radix2_shared", kind="fft",
        character="sincosf twiddles + shared-memory butterflies, 10 barriers per transform",
        tolerance=1e-4,
        problem="16384 batched 1024-point complex float FFTs; grid 16384 x 512 threads",
        setup=_setup_fft),
    "montecarlo_asian": Entry(
        source="montecarlo_asian.cu", function="montecarlo_asian", kind="montecarlo",
        character="compute-bound: counter-based RNG integer multiplies + logf/sqrtf/sincosf/expf",
        tolerance=1e-3,
        problem="2^21 paths x 64 steps, 4096 options; grid 8192 x 256 threads, one payoff per path",
        setup=_setup_montecarlo),
    "transpose_tiled": Entry(
        source="transpose_tiled.cu", function="transpose_tiled", kind="transpose",
        character="memory-bound tiled transpose through a 32x33 padded shared tile",
        tolerance=1e-5,
        problem="8192 x 8192 float32; grid 256 x 256 of 32 x 8 threads (4 rows each)",
        setup=_setup_transpose),
    "lbm_d2q9": Entry(
        source="lbm_d2q9.cu", function="lbm_d2q9", kind="lbm",
        character="memory-bound D2Q9 BGK collide + push-stream, 9 SoA planes, periodic",
        tolerance=1e-5,
        problem="4096 x 4096 cells, 9 float32 planes; grid 32 x 2048 of 128 x 2 threads",
        setup=_setup_lbm),
}


# ----------------------------------------------------------------------------------------------
# self-check

def _threads(s: Setup) -> tuple[int, int]:
    """(threads along x, threads along y) of the whole launch."""
    return s.grid[0] * s.block[0], s.grid[1] * s.block[1]


def _check_scan(s):
    n = s.args[2]
    assert n == SCAN_N and n % SCAN_SEG == 0 and s.args[0].size == n and s.out_count == n
    assert s.block == (256, 1, 1) and s.grid == (n // SCAN_SEG, 1)   # 256 threads x float4 = 1024


def _check_reduce(s):
    n = s.args[2]
    assert n == REDUCE_N and s.args[0].size == n and n % 4 == 0
    assert s.block[0] % 32 == 0 and s.block[1:] == (1, 1) and s.grid[1] == 1
    assert s.out_count == 1 + s.grid[0]
    assert s.grid[0] * s.block[0] <= n // 4   # every thread gets work; grid-stride covers the rest


def _check_hist(s):
    n = s.args[2]
    assert n == HIST_N and s.args[0].size == n and s.args[0].dtype == np.uint8
    assert s.block == (256, 1, 1) and s.grid[1] == 1
    assert s.out_count == 256 * s.grid[0]
    assert n // s.grid[0] < (1 << 24)          # per-block counts exact in float32
    assert s.args[0].max() <= 255


def _check_sort(s):
    n = s.args[2]
    assert n == SORT_N and n % SORT_SEG == 0 and s.args[0].size == n and s.out_count == n
    assert s.block == (512, 1, 1) and s.grid == (n // SORT_SEG, 1)


def _check_spmv(s):
    cols, vals, x, _, n, k = s.args
    assert cols.size == vals.size == n * k and x.size == n and s.out_count == n
    assert cols.min() >= 0 and cols.max() < x.size
    assert s.block[1:] == (1, 1) and s.grid[1] == 1 and _threads(s)[0] >= n
    assert (s.grid[0] - 1) * s.block[0] < n


def _check_stencil3d(s):
    _, _, nx, ny, nz, _, _ = s.args
    assert s.args[0].size == nx * ny * nz == s.out_count
    tx, ty = _threads(s)
    assert tx >= nx and ty >= ny and s.block[2] == 1 and nz >= 1


def _check_jacobi2d(s):
    u, f, _, nx, ny, _, _ = s.args
    assert u.size == f.size == nx * ny == s.out_count
    tx, ty = _threads(s)
    assert tx >= nx and ty >= ny and s.block[2] == 1


def _check_nbody(s):
    pos, _, n, _ = s.args
    assert pos.size == 4 * n and s.out_count == 3 * n
    assert s.block == (64, 4, 1) and s.grid[1] == 1 and s.grid[0] * 64 >= n


def _check_fft(s):
    x, _, nb = s.args
    assert x.size == 2 * FFT_LEN * nb == s.out_count
    assert s.block == (512, 1, 1) and s.grid == (nb, 1)


def _check_montecarlo(s):
    spot, strike, vol, _, npaths, nopt, nsteps, _, _, seed = s.args
    assert spot.size == strike.size == vol.size == nopt >= 1 and s.out_count == npaths
    assert s.block[1:] == (1, 1) and s.grid[1] == 1 and _threads(s)[0] >= npaths and nsteps >= 1
    assert 0 <= seed < (1 << 32)


def _check_transpose(s):
    a, _, rows, cols = s.args
    assert a.size == rows * cols == s.out_count
    assert s.block == (32, 8, 1) and s.grid[0] * 32 >= cols and s.grid[1] * 32 >= rows


def _check_lbm(s):
    f, _, nx, ny, _ = s.args
    assert f.size == 9 * nx * ny == s.out_count
    tx, ty = _threads(s)
    assert tx >= nx and ty >= ny and s.block[2] == 1


_CHECKS = {
    "scan_blocks": _check_scan,
    "reduce_sum_atomic": _check_reduce,
    "histogram_shared": _check_hist,
    "bitonic_sort_block": _check_sort,
    "spmv_ell": _check_spmv,
    "stencil3d_7pt": _check_stencil3d,
    "jacobi2d_f64": _check_jacobi2d,
    "nbody_f64_tiles": _check_nbody,
    "fft_radix2_shared": _check_fft,
    "montecarlo_asian": _check_montecarlo,
    "transpose_tiled": _check_transpose,
    "lbm_d2q9": _check_lbm,
}

_ALLOWED = (np.float32, np.float64, np.int32, np.uint8, np.uint32)


def _self_check() -> None:
    import time

    here = os.path.dirname(os.path.abspath(__file__))
    assert set(_CHECKS) == set(ENTRIES)
    for name, e in ENTRIES.items():
        assert e.source == name + ".cu" and os.path.isfile(os.path.join(here, "kernels", e.source)), name
        t0 = time.perf_counter()
        s = e.setup(np.random.default_rng(1))
        dt = time.perf_counter() - t0
        assert isinstance(s, Setup), name
        assert len(s.sig) == len(s.args), name
        assert sum(1 for a in s.args if a is OUT) == 1, name
        nbytes = 4 * s.out_count
        for letter, a in zip(s.sig, s.args):
            if a is OUT:
                assert letter == "P", name
            elif isinstance(a, np.ndarray):
                assert letter == "P", name
                assert any(a.dtype == d for d in _ALLOWED), (name, a.dtype)
                assert a.ndim == 1 and a.flags.c_contiguous, name
                assert np.isfinite(a).all() if a.dtype.kind == "f" else True, name
                nbytes += a.nbytes
            elif letter in "iI":
                assert isinstance(a, int) and not isinstance(a, bool), name
                assert (-(1 << 31) <= a < (1 << 31)) if letter == "i" else (0 <= a < (1 << 32)), name
            elif letter in "fd":
                assert isinstance(a, float), name
            else:
                raise AssertionError((name, letter, type(a)))
        assert len(s.grid) == 2 and len(s.block) == 3, name
        assert s.block[0] * s.block[1] * s.block[2] <= 1024, name
        assert 1 <= s.grid[0] < (1 << 31) and 1 <= s.grid[1] <= 65535, name
        assert nbytes < 3 * (1 << 30), name
        _CHECKS[name](s)
        print(f"{name:20s} grid {s.grid[0]:6d} x {s.grid[1]:5d}  block {s.block[0]:4d} x {s.block[1]} x"
              f" {s.block[2]}  out {s.out_count:10d}  {nbytes / (1 << 20):8.1f} MiB  setup {dt:5.2f} s")
        del s
    print("ok:", len(ENTRIES), "entries")


if __name__ == "__main__":
    _self_check()

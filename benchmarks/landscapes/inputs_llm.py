"""Landscape kernels of the kinds LLM inference runs (attention, tensor-core GEMM, quantization,
norms, RoPE, softmax, top-k, activations, embedding gathers): one `Entry` per `kernels/<name>.cu`.

See inputs.py for the interface. Every setup() draws its inputs from the numpy Generator it is given
(uniform values, drawn as float32 so that a setup stays within a few seconds) and returns the launch
shape that the kernel's indexing relies on; the checks under `__main__` assert those relations.

    python inputs_llm.py          # CPU self-check of every entry (shapes, dtypes, coverage, bytes)
    python inputs_llm.py --gpu    # on a CUDA machine with nvcc + CuPy: build, launch, compare with
                                  # a numpy reference and with a few flag variants, time the launch
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


# ----------------------------------------------------------------------------- input helpers

def _uniform(rng: np.random.Generator, n: int, lo: float, hi: float) -> np.ndarray:
    """n float32 values uniform in [lo, hi) (float32 draws: several times faster than float64)."""
    a = rng.random(n, dtype=np.float32)
    a *= np.float32(hi - lo)
    a += np.float32(lo)
    return a


def _uniform_f16(rng: np.random.Generator, n: int, lo: float, hi: float) -> np.ndarray:
    """n float16 values uniform in [lo, hi), converted in chunks to keep the float32 copy small."""
    out = np.empty(n, dtype=np.float16)
    chunk = 1 << 22
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        out[s:e] = _uniform(rng, e - s, lo, hi)
    return out


def _f16_logu(rng: np.random.Generator, n: int, exp_field: int) -> np.ndarray:
    """n float16 values with a random sign and a magnitude log-uniform over the four binades
    [2^(exp_field-15), 2^(exp_field-11)), built from raw generator bits (n % 4 == 0): a float16
    conversion of n float32 values takes seconds for the 2^27-element arrays used here."""
    assert n % 4 == 0 and 1 <= exp_field <= 26
    r = rng.bit_generator.random_raw(n // 4).view(np.uint16)
    bits = (r & np.uint16(0x0FFF)) + np.uint16(exp_field << 10)   # 2 exponent bits + 10 mantissa bits
    bits |= r & np.uint16(0x8000)
    return bits.view(np.float16)


def _bf16_bits(a: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (truncation of float32) as uint16."""
    return (a.view(np.uint32) >> 16).astype(np.uint16)


def _f32(x: float) -> float:
    """A Python float that is exactly a float32 value (what the 'f' argument will carry)."""
    return float(np.float32(x))


# ----------------------------------------------------------------------------- sizes

AD_B, AD_H, AD_S, AD_D = 8, 32, 4096, 128             # attn_decode_f16
AP_H, AP_S, AP_D = 16, 1024, 64                        # attn_prefill_tile
GH_M = GH_N = GH_K = 4096                              # gemm_wmma_f16 (128x128 block tiles)
GB_M = GB_N = GB_K = 4096                              # gemm_wmma_bf16 (64x64 block tiles)
FQ_N = 1 << 26                                         # fp8_fake_quant
IG_ROWS, IG_COLS = 65536, 8192                         # int8_rowquant_gemv
RN_ROWS, RN_D = 32768, 4096                            # rmsnorm
RP_T, RP_H, RP_D = 8192, 32, 128                       # rotary_embedding
SO_ROWS, SO_D = 16384, 4096                            # softmax_online_f16
TK_ROWS, TK_N, TK_K = 131072, 1024, 8                  # topk_rows
SW_N = 1 << 26                                         # swiglu_mlp_act
SW_GRID = 8192                                         # grid-stride: 8 float4 per thread
EB_BAGS, EB_BAG, EB_ROWS, EB_DIM = 65536, 16, 1_000_000, 64   # embedding_gather_bag


# ----------------------------------------------------------------------------- setups

def _setup_attn_decode(rng):
    bh = AD_B * AD_H
    q = _uniform(rng, bh * AD_D, -2.0, 2.0)
    k = _f16_logu(rng, bh * AD_S * AD_D, 11)   # +-[1/16, 1)
    v = _f16_logu(rng, bh * AD_S * AD_D, 11)
    return Setup("PPPP", [q, k, v, OUT], bh * AD_D, (AD_H, AD_B), (256, 1, 1))


def _setup_attn_prefill(rng):
    n = AP_H * AP_S * AP_D
    q = _uniform(rng, n, -2.0, 2.0)
    k = _uniform(rng, n, -2.0, 2.0)
    v = _uniform(rng, n, -1.0, 1.0)
    return Setup("PPPP", [q, k, v, OUT], n, (AP_S // 32, AP_H), (128, 1, 1))


def _setup_gemm_f16(rng):
    a = _uniform_f16(rng, GH_M * GH_K, -1.0, 1.0)
    b = _uniform_f16(rng, GH_K * GH_N, -1.0, 1.0)
    return Setup("PPPiii", [a, b, OUT, GH_M, GH_N, GH_K], GH_M * GH_N, (GH_N // 128, GH_M // 128), (256, 1, 1))


def _setup_gemm_bf16(rng):
    a = _bf16_bits(_uniform(rng, GB_M * GB_K, -1.0, 1.0))
    w = _bf16_bits(_uniform(rng, GB_N * GB_K, -1.0, 1.0))
    return Setup("PPPiii", [a, w, OUT, GB_M, GB_N, GB_K], GB_M * GB_N, (GB_N // 64, GB_M // 64), (128, 1, 1))


def _fq_scales(x: np.ndarray) -> tuple[float, float]:
    scale = np.float32(np.abs(x).max()) / np.float32(448.0)
    return _f32(scale), _f32(np.float32(1.0) / scale)


def _setup_fp8(rng):
    x = _uniform(rng, FQ_N, -3.0, 3.0)
    scale, inv_scale = _fq_scales(x)
    return Setup("PPffi", [x, OUT, scale, inv_scale, FQ_N], FQ_N, (FQ_N // 4 // 256, 1), (256, 1, 1))


def _setup_int8_gemv(rng):
    wq = rng.bit_generator.random_raw(IG_ROWS * IG_COLS // 8).view(np.int8)   # uniform over [-128, 127]
    row_scale = _uniform(rng, IG_ROWS, 0.5e-3, 2e-3)
    x = _uniform(rng, IG_COLS, -1.0, 1.0)
    return Setup("PPPPii", [wq, row_scale, x, OUT, IG_ROWS, IG_COLS], IG_ROWS, (IG_ROWS // 8, 1), (256, 1, 1))


def _setup_rmsnorm(rng):
    x = _uniform(rng, RN_ROWS * RN_D, -2.0, 2.0)
    w = _uniform(rng, RN_D, 0.5, 1.5)
    return Setup("PPPf", [x, w, OUT, _f32(1e-6)], RN_ROWS * RN_D, (RN_ROWS, 1), (256, 1, 1))


def _setup_rope(rng):
    n = RP_T * RP_H * RP_D
    q = _uniform(rng, n, -1.0, 1.0)
    k = _uniform(rng, n, -1.0, 1.0)
    # 8 sequences of 1024 tokens, each continuing a cache of random length (positions < 32768).
    starts = rng.integers(0, 30000, size=8).astype(np.int32)
    pos = (starts[:, None] + np.arange(RP_T // 8, dtype=np.int32)[None, :]).reshape(-1).astype(np.int32)
    return Setup("PPPPfi", [q, k, pos, OUT, _f32(10000.0), RP_T], 2 * n, (RP_T, 1), (64, 4, 1))


def _setup_softmax(rng):
    x = _f16_logu(rng, SO_ROWS * SO_D, 14)     # logits +-[0.5, 8)
    return Setup("PPi", [x, OUT, SO_ROWS], SO_ROWS * SO_D, (SO_ROWS // 8, 1), (256, 1, 1))


def _setup_topk(rng):
    x = _uniform(rng, TK_ROWS * TK_N, -4.0, 4.0)
    return Setup("PPi", [x, OUT, TK_ROWS], TK_ROWS * TK_K, (TK_ROWS // 8, 1), (256, 1, 1))


def _setup_swiglu(rng):
    gate = _uniform(rng, SW_N, -6.0, 6.0)
    up = _uniform(rng, SW_N, -2.0, 2.0)
    return Setup("PPPi", [gate, up, OUT, SW_N], SW_N, (SW_GRID, 1), (256, 1, 1))


def _setup_embedding(rng):
    table = _uniform(rng, EB_ROWS * EB_DIM, -0.1, 0.1)
    idx = rng.integers(0, EB_ROWS, size=EB_BAGS * EB_BAG, dtype=np.int32)
    return Setup("PPPii", [table, idx, OUT, EB_BAGS, EB_ROWS], EB_BAGS * EB_DIM, (EB_BAGS // 8, 1), (256, 1, 1))


# ----------------------------------------------------------------------------- entries

ENTRIES: dict[str, Entry] = {
    "attn_decode_f16": Entry(
        source="attn_decode_f16.cu", function="attn_decode_f16", kind="attention",
        character="memory: streams a 512 MiB fp16 K/V cache once with only 256 blocks (latency hiding via "
                  "unrolled 16-byte loads); shuffles, shared-memory scores, 4096 expf per block",
        tolerance=1e-3,
        problem="decode attention, batch 8 x 32 heads, cache 4096 x 128 fp16, fp32 out [256][128]; "
                "grid (32, 8) x block 256, one block per (batch, head)",
        setup=_setup_attn_decode),
    "attn_prefill_tile": Entry(
        source="attn_prefill_tile.cu", function="attn_prefill_tile", kind="attention",
        character="FMA + shared-memory bandwidth (broadcast LDS.128 of K/V tiles), online-softmax expf; "
                  "~127 registers live (scores, q, accumulator), so register caps spill",
        tolerance=1e-3,
        problem="causal flash-style attention fp32, 16 heads x 1024 x 64; grid (32 query tiles, 16) x "
                "block 128 (4 threads per query row, 32-key K/V tiles in shared memory)",
        setup=_setup_attn_prefill),
    "gemm_wmma_f16": Entry(
        source="gemm_wmma_f16.cu", function="gemm_wmma_f16", kind="gemm-tc",
        character="tensor cores (wmma 16x16x16 fp16 -> fp32) and shared-memory bandwidth; 128x128 block "
                  "tiles with register prefetch, ~124 registers",
        tolerance=1e-3,
        problem="C[4096][4096] f32 = A f16 [4096][4096] . B f16 [4096][4096]; grid (32, 32) x block 256 "
                "(8 warps, 64x32 per warp)",
        setup=_setup_gemm_f16),
    "gemm_wmma_bf16": Entry(
        source="gemm_wmma_bf16.cu", function="gemm_wmma_bf16", kind="gemm-tc",
        character="tensor cores (wmma 16x16x16 bf16 -> fp32) with small 64x64 tiles: L2 and shared-memory "
                  "traffic per FLOP twice the f16 kernel's",
        tolerance=1e-3,
        problem="C[4096][4096] f32 = A bf16 [4096][4096] . W^T, W bf16 [4096][4096] (Linear weight); "
                "grid (64, 64) x block 128 (4 warps, 32x32 per warp)",
        setup=_setup_gemm_bf16),
    "fp8_fake_quant": Entry(
        source="fp8_fake_quant.cu", function="fp8_fake_quant", kind="quantize",
        character="memory: 16-byte loads/stores, hardware cvt to/from e4m3 (satfinite), 512 MiB moved",
        tolerance=1e-5,
        problem="2^26 float32 -> e4m3 (per-tensor scale amax/448) -> float32; grid 65536 x block 256, "
                "one float4 per thread",
        setup=_setup_fp8),
    "int8_rowquant_gemv": Entry(
        source="int8_rowquant_gemv.cu", function="int8_rowquant_gemv", kind="gemv",
        character="memory: 512 MiB int8 weight stream plus 4 B of L1-resident x per weight byte, dequantized "
                  "on the fly (byte extract + I2F + FMA), warp-shuffle row reduction",
        tolerance=1e-4,
        problem="y[65536] = scale[r] * (Wq int8 [65536][8192] . x[8192]); grid 8192 x block 256, "
                "one warp per row (rows raised from 8192 so that a launch is ~0.1 ms)",
        setup=_setup_int8_gemv),
    "rmsnorm": Entry(
        source="rmsnorm.cu", function="rmsnorm", kind="norm",
        character="memory: 1 GiB moved, row kept in registers; shared-memory tree reduction (8 barriers "
                  "per row), rsqrtf",
        tolerance=1e-4,
        problem="32768 rows x 4096 float32, weight [4096], eps 1e-6; grid 32768 x block 256, one block per row",
        setup=_setup_rmsnorm),
    "rotary_embedding": Entry(
        source="rotary_embedding.cu", function="rotary_embedding", kind="rope",
        character="memory: 512 MiB moved; powf + sincosf per (token, pair) shared over 8 heads of q and k",
        tolerance=1e-3,
        problem="q, k float32 [8192 tokens][32 heads][128], rotate-half RoPE, theta 10000, positions < 32768; "
                "out = [rot q | rot k]; grid 8192 x block (64, 4)",
        setup=_setup_rope),
    "softmax_online_f16": Entry(
        source="softmax_online_f16.cu", function="softmax_online_f16", kind="softmax",
        character="memory (128 MiB fp16 in, 256 MiB f32 out) + ~2 expf per element; row slice held in "
                  "registers (~124), so register caps spill",
        tolerance=1e-3,
        problem="16384 rows x 4096 fp16 -> float32 softmax, online max+sum; grid 2048 x block 256, "
                "one warp per row",
        setup=_setup_softmax),
    "topk_rows": Entry(
        source="topk_rows.cu", function="topk_rows", kind="topk",
        character="ALU/issue: branchless fmaxf/fminf insertion chain (8 per value) + 8 shuffle-max rounds "
                  "per row, over a 512 MiB read; exact",
        tolerance=1e-5,
        problem="top-8 (sorted descending) of each of 131072 rows x 1024 float32 (rows raised from 8192 so "
                "that a launch is ~0.1 ms); grid 16384 x block 256, one warp per row",
        setup=_setup_topk),
    "swiglu_mlp_act": Entry(
        source="swiglu_mlp_act.cu", function="swiglu_mlp_act", kind="activation",
        character="memory (768 MiB moved) + one expf and one IEEE division per element; grid-stride float4 loop",
        tolerance=1e-3,
        problem="out = silu(gate) * up, gate/up/out float32 [2^26] (two input buffers); grid 8192 x block 256, "
                "8 float4 per thread",
        setup=_setup_swiglu),
    "embedding_gather_bag": Entry(
        source="embedding_gather_bag.cu", function="embedding_gather_bag", kind="gather",
        character="random-gather memory latency/bandwidth: 1M random 256-byte rows of a 256 MB table, "
                  "16 loads in flight per lane; no arithmetic",
        tolerance=1e-5,
        problem="65536 bags x 16 int32 indices into a 1,000,000 x 64 float32 table, sum per bag; "
                "grid 8192 x block 256, one warp per bag",
        setup=_setup_embedding),
}


# ----------------------------------------------------------------------------- self-check

_ALLOWED = {np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int8, np.uint8, np.uint16)}
_SCALAR = {"i": int, "I": int, "f": float, "d": float}


def _arrays(s: Setup) -> list[np.ndarray]:
    return [a for a in s.args if isinstance(a, np.ndarray)]


def _threads(s: Setup) -> int:
    return s.grid[0] * s.grid[1] * s.block[0] * s.block[1] * s.block[2]


def _coverage(name: str, s: Setup) -> None:
    """Assert the numbers each kernel's indexing relies on (sizes hard-wired in the .cu included)."""
    a = s.args
    g, b = s.grid, s.block
    if name == "attn_decode_f16":
        assert g == (AD_H, AD_B) and b == (256, 1, 1)
        assert a[0].size == AD_B * AD_H * AD_D and s.out_count == AD_B * AD_H * AD_D
        assert a[1].size == a[2].size == AD_B * AD_H * AD_S * AD_D
        assert AD_S == 4096 and AD_D == 128 and AD_S % 64 == 0   # AD_S, AD_D fixed in the .cu; 64 keys/step
    elif name == "attn_prefill_tile":
        assert g == (AP_S // 32, AP_H) and b == (128, 1, 1) and AP_S % 32 == 0
        assert AP_S == 1024 and AP_D == 64   # fixed in the .cu
        assert all(x.size == AP_H * AP_S * AP_D for x in _arrays(s)) and s.out_count == AP_H * AP_S * AP_D
        assert 128 == 32 * 4                 # 32 query rows x 4 threads
    elif name == "gemm_wmma_f16":
        M, N, K = a[3], a[4], a[5]
        assert M % 128 == 0 and N % 128 == 0 and K % 32 == 0
        assert g == (N // 128, M // 128) and b == (256, 1, 1)
        assert a[0].size == M * K and a[1].size == K * N and s.out_count == M * N
    elif name == "gemm_wmma_bf16":
        M, N, K = a[3], a[4], a[5]
        assert M % 64 == 0 and N % 64 == 0 and K % 32 == 0
        assert g == (N // 64, M // 64) and b == (128, 1, 1)
        assert a[0].size == M * K and a[1].size == N * K and s.out_count == M * N
    elif name == "fp8_fake_quant":
        n = a[4]
        assert n % 4 == 0 and g[1] == 1 and b == (256, 1, 1)
        assert g[0] * 256 * 4 >= n and (g[0] - 1) * 256 * 4 < n    # one float4 per thread, guard i < n/4
        assert a[0].size == n == s.out_count
        assert a[2] > 0 and abs(a[2] * a[3] - 1.0) < 1e-6
        assert float(np.abs(a[0]).max()) * a[3] <= 448.0 * (1 + 1e-6)
    elif name == "int8_rowquant_gemv":
        rows, cols = a[4], a[5]
        assert cols % 512 == 0 and g == (rows // 8, 1) and rows % 8 == 0 and b == (256, 1, 1)
        assert a[0].size == rows * cols and a[1].size == rows and a[2].size == cols and s.out_count == rows
    elif name == "rmsnorm":
        assert RN_D == 4096 and b == (256, 1, 1) and g == (RN_ROWS, 1)   # 4096 = 256 threads x 4 float4
        assert a[0].size == RN_ROWS * RN_D == s.out_count and a[1].size == RN_D
    elif name == "rotary_embedding":
        T = a[5]
        assert RP_H == 32 and RP_D == 128 and b == (64, 4, 1) and g == (T, 1)   # 64 pairs, 32 % 4 == 0
        assert a[0].size == a[1].size == T * RP_H * RP_D and a[2].size == T
        assert s.out_count == 2 * T * RP_H * RP_D < 2**31
        assert int(a[2].min()) >= 0 and int(a[2].max()) < 32768
    elif name == "softmax_online_f16":
        rows = a[2]
        assert SO_D == 4096 and b == (256, 1, 1) and g == (rows // 8, 1) and rows % 8 == 0
        assert a[0].size == rows * SO_D == s.out_count
    elif name == "topk_rows":
        rows = a[2]
        assert TK_N == 1024 and TK_K == 8 and b == (256, 1, 1) and g == (rows // 8, 1) and rows % 8 == 0
        assert a[0].size == rows * TK_N and s.out_count == rows * TK_K
    elif name == "swiglu_mlp_act":
        n = a[3]
        assert n % 4 == 0 and b == (256, 1, 1) and g[1] == 1 and n < 2**31
        assert a[0].size == a[1].size == n == s.out_count   # grid-stride loop covers any n
    elif name == "embedding_gather_bag":
        bags, rows = a[3], a[4]
        assert EB_DIM == 64 and EB_BAG == 16 and b == (256, 1, 1) and g == (bags // 8, 1) and bags % 8 == 0
        assert a[0].size == rows * EB_DIM and a[1].size == bags * EB_BAG and s.out_count == bags * EB_DIM
        assert int(a[1].min()) >= 0 and int(a[1].max()) < rows
    else:
        raise AssertionError(f"no coverage check for {name}")


def _self_check() -> None:
    import time
    kernels_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
    for name, e in ENTRIES.items():
        t0 = time.time()
        s = e.setup(np.random.default_rng(1))
        dt = time.time() - t0
        assert os.path.isfile(os.path.join(kernels_dir, e.source)), e.source
        assert len(s.sig) == len(s.args), name
        assert sum(1 for x in s.args if x is OUT) == 1, name
        for letter, x in zip(s.sig, s.args):
            if x is OUT:
                assert letter == "P", name
            elif isinstance(x, np.ndarray):
                assert letter == "P" and x.dtype in _ALLOWED and x.ndim == 1 and x.flags.c_contiguous, name
            else:
                assert letter in _SCALAR and isinstance(x, _SCALAR[letter]) and not isinstance(x, bool), name
                if letter == "i":
                    assert -2**31 <= x < 2**31, name
        assert len(s.grid) == 2 and len(s.block) == 3 and all(v >= 1 for v in s.grid + s.block), name
        assert s.block[0] * s.block[1] * s.block[2] <= 1024 and s.grid[1] <= 65535, name
        _coverage(name, s)
        nbytes = sum(x.nbytes for x in _arrays(s)) + 4 * s.out_count
        assert nbytes < 3 * 2**30, name
        print(f"{name:22s} grid {str(s.grid):14s} block {str(s.block):12s} threads {_threads(s):>10d}  "
              f"{nbytes / 2**20:8.1f} MiB  tol {e.tolerance:g}  setup {dt:.2f}s")
    print(f"ok: {len(ENTRIES)} entries")


# ----------------------------------------------------------------------------- optional GPU check

def _ref(name: str, s: Setup) -> np.ndarray:
    """A numpy reference of each kernel (float64 where it matters), flattened float32-comparable."""
    a = s.args
    f64 = np.float64
    if name == "attn_decode_f16":
        bh = AD_B * AD_H
        q = a[0].reshape(bh, 1, AD_D).astype(np.float32)
        k = a[1].reshape(bh, AD_S, AD_D).astype(np.float32)
        v = a[2].reshape(bh, AD_S, AD_D).astype(np.float32)
        sc = np.matmul(q, k.transpose(0, 2, 1)).astype(f64) / np.sqrt(AD_D)
        p = np.exp(sc - sc.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        return np.matmul(p.astype(np.float32), v).reshape(-1)
    if name == "attn_prefill_tile":
        q, k, v = (x.reshape(AP_H, AP_S, AP_D).astype(f64) for x in a[:3])
        sc = np.matmul(q, k.transpose(0, 2, 1)) / np.sqrt(AP_D)
        sc[:, np.triu(np.ones((AP_S, AP_S), dtype=bool), 1)] = -np.inf
        p = np.exp(sc - sc.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        return np.matmul(p, v).reshape(-1)
    if name == "gemm_wmma_f16":
        M, N, K = a[3], a[4], a[5]
        return (a[0].reshape(M, K).astype(np.float32) @ a[1].reshape(K, N).astype(np.float32)).reshape(-1)
    if name == "gemm_wmma_bf16":
        M, N, K = a[3], a[4], a[5]
        A = (a[0].astype(np.uint32) << 16).view(np.float32).reshape(M, K)
        W = (a[1].astype(np.uint32) << 16).view(np.float32).reshape(N, K)
        return (A @ W.T).reshape(-1)
    if name == "fp8_fake_quant":
        import ml_dtypes
        y = np.clip(a[0] * np.float32(a[3]), -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
        return y * np.float32(a[2])
    if name == "int8_rowquant_gemv":
        rows, cols = a[4], a[5]
        w = a[0].reshape(rows, cols)
        y = np.empty(rows, dtype=f64)
        for r0 in range(0, rows, 4096):
            y[r0:r0 + 4096] = w[r0:r0 + 4096].astype(np.float32) @ a[2]
        return y * a[1]
    if name == "rmsnorm":
        x = a[0].reshape(RN_ROWS, RN_D).astype(f64)
        return (x / np.sqrt((x * x).mean(axis=1, keepdims=True) + a[3]) * a[1]).reshape(-1)
    if name == "rotary_embedding":
        T = a[5]
        i = np.arange(RP_D // 2, dtype=f64)
        ang = a[2].astype(f64)[:, None] * (a[4] ** (-i / (RP_D // 2)))[None, :]
        c, sn = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        outs = []
        for x in (a[0], a[1]):
            x = x.reshape(T, RP_H, RP_D).astype(f64)
            x1, x2 = x[..., :RP_D // 2], x[..., RP_D // 2:]
            outs.append(np.concatenate([x1 * c - x2 * sn, x2 * c + x1 * sn], axis=-1).reshape(-1))
        return np.concatenate(outs)
    if name == "softmax_online_f16":
        x = a[0].reshape(-1, SO_D).astype(f64)
        p = np.exp(x - x.max(axis=1, keepdims=True))
        return (p / p.sum(axis=1, keepdims=True)).reshape(-1)
    if name == "topk_rows":
        x = a[0].reshape(-1, TK_N)
        part = np.partition(x, TK_N - TK_K, axis=1)[:, TK_N - TK_K:]
        return (-np.sort(-part, axis=1)).reshape(-1)
    if name == "swiglu_mlp_act":
        g, u = a[0].astype(f64), a[1].astype(f64)
        return g / (1 + np.exp(-g)) * u
    if name == "embedding_gather_bag":
        t = a[0].reshape(-1, EB_DIM)
        return t[a[1]].reshape(-1, EB_BAG, EB_DIM).astype(f64).sum(axis=1).reshape(-1)
    raise KeyError(name)


def _rel_l2(x: np.ndarray, ref: np.ndarray) -> float:
    x = x.astype(np.float64)
    ref = ref.astype(np.float64)
    return float(np.linalg.norm(x - ref) / max(np.linalg.norm(ref), 1e-300))


def _gpu_check(names: list[str], flag_sets: list[str], reps: int) -> None:
    import subprocess
    import tempfile

    import cupy as cp

    kernels_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
    tmp = tempfile.mkdtemp(prefix="inputs_llm_")
    for name in names:
        e = ENTRIES[name]
        s = e.setup(np.random.default_rng(1))
        dev = []
        for letter, x in zip(s.sig, s.args):
            if x is OUT:
                out = cp.empty(s.out_count, dtype=cp.float32)
                dev.append(out)
            elif isinstance(x, np.ndarray):
                dev.append(cp.asarray(x))
            else:
                dev.append({"i": np.int32, "I": np.uint32, "f": np.float32, "d": np.float64}[letter](x))
        results = {}
        for flags in flag_sets:
            cubin = os.path.join(tmp, f"{name}_{abs(hash(flags))}.cubin")
            cmd = ["nvcc", "-cubin", "-arch=sm_90", "-O3", *flags.split(), *e.extra_flags,
                   os.path.join(kernels_dir, e.source), "-o", cubin]
            subprocess.run(cmd, check=True)
            fn = cp.RawModule(path=cubin).get_function(e.function)
            grid = (s.grid[0], s.grid[1], 1)
            out.fill(np.nan)
            fn(grid, s.block, tuple(dev))
            cp.cuda.runtime.deviceSynchronize()
            res = cp.asnumpy(out)
            ms = float("nan")
            if reps > 0:
                fn(grid, s.block, tuple(dev))
                t0, t1 = cp.cuda.Event(), cp.cuda.Event()
                times = []
                for _ in range(reps):
                    t0.record()
                    fn(grid, s.block, tuple(dev))
                    t1.record()
                    t1.synchronize()
                    times.append(cp.cuda.get_elapsed_time(t0, t1))
                ms = float(np.median(times))
            results[flags] = (res, ms)
        base, base_ms = results[flag_sets[0]]
        finite = bool(np.isfinite(base).all())
        line = f"{name:22s} finite={finite} {base_ms:8.3f} ms"
        if os.environ.get("NO_REF") != "1":
            line += f"  ref_err={_rel_l2(base, _ref(name, s)):.2e}"
        for flags in flag_sets[1:]:
            r, ms = results[flags]
            err = _rel_l2(r, base) if np.isfinite(r).all() else float("inf")
            mark = "" if err <= e.tolerance else "(>tol)"
            line += f"  [{flags}] {err:.1e}{mark} {ms:.3f}ms"
        print(line, flush=True)
        del dev, out
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    if "--gpu" in sys.argv:
        picked = [a for a in sys.argv[1:] if a in ENTRIES] or list(ENTRIES)
        if "--quick" in sys.argv:   # one default build, one launch (e.g. under compute-sanitizer)
            _gpu_check(picked, [""], 0)
        else:
            _gpu_check(picked, ["", "-Xptxas=-O1", "--restrict", "-maxrregcount=32", "-Xptxas=-dlcm=cg",
                                "--use_fast_math"], 10)
    else:
        _self_check()

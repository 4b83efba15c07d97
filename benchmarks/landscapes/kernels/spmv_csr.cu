// Landscape kernel "spmv_csr" (memory-bound, irregular): y = A x for a random CSR matrix (float values,
// int32 row pointers and column indices), the "vector" kernel: one warp per row, lane l sums the
// products of elements row_start + l, row_start + l + 32, ... (consecutive, coalesced loads of vals and
// col_idx), then a fixed __shfl_down_sync tree (16, 8, 4, 2, 1) adds the 32 partial sums and lane 0
// writes y[row]. The reads of x go through the column indices (random gathers, one 32-byte sector per
// 4 useful bytes), so the loads' cache operators (-Xptxas=-dlcm=..., and --restrict, which lets the
// compiler use the read-only path for x, vals and col_idx) and the latency hiding of the schedule
// (ptxas level, register cap, cicc unroll count of the per-lane loop) matter; the summation order is
// fixed by the code, so only FMA contraction (--fmad) and flush-to-zero (--use_fast_math) can change the
// result bits. Pointers are not __restrict__.
//
// Every row (also an empty one) gets y[row] written by every launch; inputs are never written. Column
// indices must lie in [0, length of x) (the recorder builds them so).
//
// Launch: grid ceil(n_rows / 8), block 256 (8 warps, one row each); n_rows = 2^20.

extern "C" __global__ void __launch_bounds__(256)
spmv_csr_vector(int n_rows, const int* row_ptr, const int* col_idx, const float* vals, const float* x,
                float* y) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= n_rows) return;  // uniform per warp (blockDim.x is a multiple of 32): the shuffles stay full
  const int row = warp;
  const int start = row_ptr[row], end = row_ptr[row + 1];
  float sum = 0.f;
  for (int j = start + lane; j < end; j += 32) sum += vals[j] * x[col_idx[j]];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (lane == 0) y[row] = sum;
}

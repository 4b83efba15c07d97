// Landscape kernel "conv2d_5x5" (FMA-bound): single-channel 2D convolution (cross-correlation, as in
// CNNs) of an n x n float image (8192^2) with a 5 x 5 filter w (25 floats, row-major, a pointer
// argument), zero padding outside the image:
//   out[y][x] = sum_{fr, fc in 0..4} w[fr * 5 + fc] * in[y + fr - 2][x + fc - 2].
// One block per 32 x 8 output tile: its 64 threads (block (32, 2)) stage the 36 x 12 input tile with
// its halo in shared memory (6 or 7 loads per thread, a loop), the 25 weights go to registers, and each
// thread computes 4 outputs of one column (4 consecutive rows) from an 8-row x 5-column window of the
// tile: 40 shared loads for 100 FMAs per thread, in a fixed summation order.
//
// Every output pixel is written by every launch; inputs are never written. --fmad=false (separate
// FMUL / FADD, other rounding) and --use_fast_math (flush-to-zero FFMA.FTZ only: no transcendentals, no
// division, the same code as --ftz=true) change the arithmetic; the register cap (-maxrregcount=32: 8
// bytes of spills) and the ptxas level (-Xptxas=-O2 gives the same code as -O3 here, nvcc 13.0) the
// allocation and schedule; the load cache operators (-Xptxas=-dlcm=...) and --restrict (read-only path)
// the image and weight loads; the cicc unroll count (-Xcicc=--Xopt,-unroll-count=N) overrides the
// #pragma unroll of the filter loops too: 2 and 4 leave the weights in a local-memory stack frame
// (160 / 120 bytes), 8 unrolls the halo loop (43 registers). Pointers are not __restrict__. No
// __launch_bounds__ on purpose (-maxrregcount must stay a cap). The default build (nvcc 13.0, sm_90,
// -O3) uses 40 registers, no spills, 1728 bytes of shared memory.
//
// Launch: grid (ceil(n / 32), ceil(n / 8)), block (32, 2); n = 8192.

#define R 2                                      // filter radius (5 x 5)
#define TILE_W 32                                // output tile: 32 columns ...
#define TILE_H 8                                 // ... x 8 rows per block
#define ROWS_PER_THREAD 4                        // outputs per thread (one column, 4 consecutive rows)
#define BLOCK_Y (TILE_H / ROWS_PER_THREAD)       // 2: block (32, 2)
#define SM_W (TILE_W + 2 * R)                    // 36
#define SM_H (TILE_H + 2 * R)                    // 12

extern "C" __global__ void
conv2d_5x5(int n, const float* in, const float* w, float* out) {
  __shared__ float tile[SM_H][SM_W];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * TILE_W, y0 = blockIdx.y * TILE_H;
  // the 36 x 12 input tile with its halo (zero outside the image), 6 or 7 elements per thread
  for (int k = ty * TILE_W + tx; k < SM_H * SM_W; k += TILE_W * BLOCK_Y) {
    const int r = k / SM_W, c = k - r * SM_W;
    const int gy = y0 + r - R, gx = x0 + c - R;
    tile[r][c] = (gy >= 0 && gy < n && gx >= 0 && gx < n) ? in[static_cast<size_t>(gy) * n + gx] : 0.f;
  }
  float wr[(2 * R + 1) * (2 * R + 1)];
#pragma unroll
  for (int k = 0; k < (2 * R + 1) * (2 * R + 1); ++k) wr[k] = w[k];
  __syncthreads();
  float acc[ROWS_PER_THREAD];
#pragma unroll
  for (int o = 0; o < ROWS_PER_THREAD; ++o) acc[o] = 0.f;
  // input row r of the thread's 8-row window feeds output o through filter row r - o
#pragma unroll
  for (int r = 0; r < ROWS_PER_THREAD + 2 * R; ++r) {
    float v[2 * R + 1];
#pragma unroll
    for (int c = 0; c < 2 * R + 1; ++c) v[c] = tile[ty * ROWS_PER_THREAD + r][tx + c];
#pragma unroll
    for (int o = 0; o < ROWS_PER_THREAD; ++o) {
      const int fr = r - o;
      if (fr >= 0 && fr <= 2 * R) {
#pragma unroll
        for (int c = 0; c < 2 * R + 1; ++c) acc[o] += wr[fr * (2 * R + 1) + c] * v[c];
      }
    }
  }
  const int gx = x0 + tx;
#pragma unroll
  for (int o = 0; o < ROWS_PER_THREAD; ++o) {
    const int gy = y0 + ty * ROWS_PER_THREAD + o;
    if (gx < n && gy < n) out[static_cast<size_t>(gy) * n + gx] = acc[o];
  }
}

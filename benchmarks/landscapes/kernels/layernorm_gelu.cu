// Landscape kernel "layernorm_gelu" (mixed memory / math): fused bias + LayerNorm + GELU over a row-major
// float matrix with COLS = 2048 columns (16384 rows):
//   h = in[r] + bias,  y = (h - mean(h)) / sqrtf(var(h) + eps) * gamma + beta,
//   out[r][j] = 0.5 y (1 + tanhf(0.7978845608 (y + 0.044715 y^3)))   (GELU, tanh form).
// One block of THREADS = 256 per row: thread t loads the float4s t and t + 256 of its row (coalesced) and
// of bias, keeps its 8 values in registers (the input is read once), and the row sum and then the sum of
// squared deviations (two-pass variance) are reduced with a __shfl_xor_sync butterfly per warp and the 8
// warp sums in shared memory, added in a fixed order (every thread gets the same, bit-identical value).
// One 1 / sqrtf per row, one tanhf and ~10 mul-adds per element, 8 bytes of memory traffic per element
// (gamma, beta and bias, 24 KiB, stay in cache).
//
// Every element of every row is written by every launch; inputs are never written. The math flags
// change the tanhf, square-root and division sequences (--use_fast_math: tanh.approx, rsqrt and
// approximate division, --prec-div=false / --prec-sqrt=false: approximate 1 / sqrtf, --ftz=true:
// flush-to-zero forms, --fmad=false: no FMA contraction of the normalization and the GELU polynomial);
// the load cache operators (-Xptxas=-dlcm=...) and --restrict (read-only path for the input and the
// vectors) change the loads, the ptxas level the schedule (-Xptxas=-O2 gives the same code as -O3 here,
// nvcc 13.0). Pointers are not __restrict__. The default build (nvcc 13.0, sm_90, -O3) uses 32
// registers, no spills.
//
// Launch: grid n_rows, block 256; n_rows = 16384 (128 MiB in, 128 out), eps = 1e-5.

#define COLS 2048
#define THREADS 256
#define VEC_PER_THREAD (COLS / (4 * THREADS))  // float4s per thread
#define WARPS (THREADS / 32)

// Sum over the block: __shfl_xor_sync butterfly per warp, the 8 warp sums through shared memory, added
// in a fixed order by every thread (all threads end with the same, bit-identical value).
__device__ __forceinline__ float block_sum(float s, float* red) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) total += red[w];
  return total;
}

extern "C" __global__ void __launch_bounds__(THREADS)
layernorm_gelu(int n_rows, float eps, const float* in, const float* gamma, const float* beta, const float* bias,
               float* out) {
  __shared__ float red[2][WARPS];  // one buffer per reduction: no second barrier needed
  const int row = blockIdx.x;
  if (row >= n_rows) return;  // uniform per block: the barriers stay full
  const int t = threadIdx.x;
  const float4* src = reinterpret_cast<const float4*>(in + static_cast<size_t>(row) * COLS);
  float4* dst = reinterpret_cast<float4*>(out + static_cast<size_t>(row) * COLS);
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
  const float4* be4 = reinterpret_cast<const float4*>(beta);
  const float4* bi4 = reinterpret_cast<const float4*>(bias);
  float4 v[VEC_PER_THREAD];
  float s = 0.f;
#pragma unroll
  for (int q = 0; q < VEC_PER_THREAD; ++q) {
    const float4 x = src[q * THREADS + t], b = bi4[q * THREADS + t];
    v[q] = make_float4(x.x + b.x, x.y + b.y, x.z + b.z, x.w + b.w);
    s += (v[q].x + v[q].y) + (v[q].z + v[q].w);
  }
  const float mean = block_sum(s, red[0]) * (1.f / COLS);
  float ss = 0.f;
#pragma unroll
  for (int q = 0; q < VEC_PER_THREAD; ++q) {
    v[q].x -= mean;
    v[q].y -= mean;
    v[q].z -= mean;
    v[q].w -= mean;
    ss += (v[q].x * v[q].x + v[q].y * v[q].y) + (v[q].z * v[q].z + v[q].w * v[q].w);
  }
  const float var = block_sum(ss, red[1]) * (1.f / COLS);
  const float rstd = 1.f / sqrtf(var + eps);
#pragma unroll
  for (int q = 0; q < VEC_PER_THREAD; ++q) {
    const float4 g = g4[q * THREADS + t], be = be4[q * THREADS + t];
    float y[4] = {v[q].x * rstd * g.x + be.x, v[q].y * rstd * g.y + be.y,
                  v[q].z * rstd * g.z + be.z, v[q].w * rstd * g.w + be.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float u = y[e];
      y[e] = 0.5f * u * (1.f + tanhf(0.7978845608f * (u + 0.044715f * u * u * u)));
    }
    dst[q * THREADS + t] = make_float4(y[0], y[1], y[2], y[3]);
  }
}

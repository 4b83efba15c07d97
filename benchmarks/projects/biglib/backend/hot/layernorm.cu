// layernorm.cu: row-wise fp32 layer norm (hot). One 256-thread block per row; rows of up to
// 8192 columns stay in registers; two-pass mean/variance from registers, rsqrtf, FMA.
// Its speed depends on unrolling, register allocation and how rsqrtf/division are compiled.
#include <cuda_runtime.h>

#include <cstdint>

#include "biglib.h"
#include "hot_common.cuh"

namespace {
using namespace biglib::hot;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;

template <int V>
__global__ void __launch_bounds__(kThreads)
layernorm_reg_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                     const float* __restrict__ beta, float* __restrict__ y, int64_t rows, int cols,
                     float eps) {
  __shared__ float red[kThreads / 32];
  const int n4 = cols >> 2;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
  const float4* b4 = reinterpret_cast<const float4*>(beta);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* in = reinterpret_cast<const float4*>(x + row * cols);
    float4* out = reinterpret_cast<float4*>(y + row * cols);
    float4 v[V];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int c = threadIdx.x + k * kThreads;
      if (c < n4) {
        v[k] = in[c];
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
      }
    }
    const float mean = block_allreduce(s, SumOp(), 0.f, red) * inv_cols;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int c = threadIdx.x + k * kThreads;
      if (c < n4) {
        v[k].x -= mean; v[k].y -= mean; v[k].z -= mean; v[k].w -= mean;
        q = fmaf(v[k].x, v[k].x, q); q = fmaf(v[k].y, v[k].y, q);
        q = fmaf(v[k].z, v[k].z, q); q = fmaf(v[k].w, v[k].w, q);
      }
    }
    const float var = block_allreduce(q, SumOp(), 0.f, red) * inv_cols;
    const float rstd = rsqrtf(var + eps);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int c = threadIdx.x + k * kThreads;
      if (c < n4) {
        const float4 g = __ldg(&g4[c]), b = __ldg(&b4[c]);
        out[c] = make_float4(fmaf(v[k].x * rstd, g.x, b.x), fmaf(v[k].y * rstd, g.y, b.y),
                             fmaf(v[k].z * rstd, g.z, b.z), fmaf(v[k].w * rstd, g.w, b.w));
      }
    }
  }
}

// Any cols: mean, variance and output in three passes over global memory.
__global__ void __launch_bounds__(kThreads)
layernorm_generic_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                         const float* __restrict__ beta, float* __restrict__ y, int64_t rows,
                         int cols, float eps) {
  __shared__ float red[kThreads / 32];
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row * cols;
    float* out = y + row * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += kThreads) s += in[c];
    const float mean = block_allreduce(s, SumOp(), 0.f, red) * inv_cols;
    float q = 0.f;
    for (int c = threadIdx.x; c < cols; c += kThreads) {
      const float d = in[c] - mean;
      q = fmaf(d, d, q);
    }
    const float rstd = rsqrtf(block_allreduce(q, SumOp(), 0.f, red) * inv_cols + eps);
    for (int c = threadIdx.x; c < cols; c += kThreads)
      out[c] = fmaf((in[c] - mean) * rstd, gamma[c], beta[c]);
  }
}

}  // namespace

extern "C" int biglib_layernorm_f32(const float* x, const float* gamma, const float* beta,
                                    float* y, int64_t rows, int cols, float eps, void* stream) {
  if (rows < 0 || cols < 0 || !(eps >= 0.f)) return static_cast<int>(cudaErrorInvalidValue);
  if (rows == 0 || cols == 0) return 0;
  if (!x || !gamma || !beta || !y) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const unsigned blocks = static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
  const int n4 = cols / 4;
  const bool vec = cols % 4 == 0 && aligned16(x) && aligned16(y) && aligned16(gamma) &&
                   aligned16(beta);
  if (vec && n4 <= 1 * kThreads)
    layernorm_reg_kernel<1><<<blocks, kThreads, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
  else if (vec && n4 <= 2 * kThreads)
    layernorm_reg_kernel<2><<<blocks, kThreads, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
  else if (vec && n4 <= 4 * kThreads)
    layernorm_reg_kernel<4><<<blocks, kThreads, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
  else if (vec && n4 <= 8 * kThreads)
    layernorm_reg_kernel<8><<<blocks, kThreads, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
  else
    layernorm_generic_kernel<<<blocks, kThreads, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
  return static_cast<int>(cudaGetLastError());
}

// softmax.cu: row-wise fp32 softmax (hot). One 256-thread block per row; rows of up to 8192
// columns stay in registers (float4 x V per thread, V a template parameter), expf per element.
// Its speed depends on how expf and the division are compiled (--use_fast_math, -ftz,
// -prec-div) and on the unrolled register-resident loops.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "biglib.h"
#include "hot_common.cuh"

namespace {
using namespace biglib::hot;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;

template <int V>
__global__ void __launch_bounds__(kThreads)
softmax_reg_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int cols,
                   float scale) {
  __shared__ float red[kThreads / 32];
  const int n4 = cols >> 2;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* in = reinterpret_cast<const float4*>(x + row * cols);
    float4* out = reinterpret_cast<float4*>(y + row * cols);
    float4 v[V];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int c = threadIdx.x + k * kThreads;
      if (c < n4) {
        v[k] = in[c];
        v[k].x *= scale; v[k].y *= scale; v[k].z *= scale; v[k].w *= scale;
        m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
      }
    }
    m = block_allreduce(m, MaxOp(), -INFINITY, red);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int c = threadIdx.x + k * kThreads;
      if (c < n4) {
        v[k].x = expf(v[k].x - m); v[k].y = expf(v[k].y - m);
        v[k].z = expf(v[k].z - m); v[k].w = expf(v[k].w - m);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
      }
    }
    s = block_allreduce(s, SumOp(), 0.f, red);
    const float inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int c = threadIdx.x + k * kThreads;
      if (c < n4) out[c] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
    }
  }
}

// Any cols: three passes over the row in global memory.
__global__ void __launch_bounds__(kThreads)
softmax_generic_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int cols,
                       float scale) {
  __shared__ float red[kThreads / 32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row * cols;
    float* out = y + row * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, in[c] * scale);
    m = block_allreduce(m, MaxOp(), -INFINITY, red);
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += kThreads) s += expf(in[c] * scale - m);
    s = block_allreduce(s, SumOp(), 0.f, red);
    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += kThreads) out[c] = expf(in[c] * scale - m) * inv;
  }
}

}  // namespace

extern "C" int biglib_softmax_f32(const float* x, float* y, int64_t rows, int cols, float scale,
                                  void* stream) {
  if (rows < 0 || cols < 0) return static_cast<int>(cudaErrorInvalidValue);
  if (rows == 0 || cols == 0) return 0;
  if (!x || !y) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const unsigned blocks = static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
  const int n4 = cols / 4;
  const bool vec = cols % 4 == 0 && aligned16(x) && aligned16(y);
  if (vec && n4 <= 1 * kThreads)
    softmax_reg_kernel<1><<<blocks, kThreads, 0, s>>>(x, y, rows, cols, scale);
  else if (vec && n4 <= 2 * kThreads)
    softmax_reg_kernel<2><<<blocks, kThreads, 0, s>>>(x, y, rows, cols, scale);
  else if (vec && n4 <= 4 * kThreads)
    softmax_reg_kernel<4><<<blocks, kThreads, 0, s>>>(x, y, rows, cols, scale);
  else if (vec && n4 <= 8 * kThreads)
    softmax_reg_kernel<8><<<blocks, kThreads, 0, s>>>(x, y, rows, cols, scale);
  else
    softmax_generic_kernel<<<blocks, kThreads, 0, s>>>(x, y, rows, cols, scale);
  return static_cast<int>(cudaGetLastError());
}

// Reduction: sum of dm::poly(x[i]). Memory-bound when dm::poly is inlined; under
// plain separable compilation every element costs an ABI call into device_math.cu.
#include "device_math.h"
#include "reduce.h"

namespace reduce {
namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr std::size_t kElemsPerThread = 256;  // ~64 terms per float accumulator

__global__ void __launch_bounds__(kBlock)
    poly_sum_kernel(double* __restrict__ result, const float* __restrict__ x, std::size_t n) {
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);

  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  for (std::size_t i = tid; i < n4; i += stride) {
    const float4 v = x4[i];
    s0 += dm::poly(v.x);  // cross-TU calls
    s1 += dm::poly(v.y);
    s2 += dm::poly(v.z);
    s3 += dm::poly(v.w);
  }
  for (std::size_t i = n4 * 4 + tid; i < n; i += stride) s0 += dm::poly(x[i]);  // < 4 left
  float sum = (s0 + s1) + (s2 + s3);

  // warp, then block
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  __shared__ float warp_sums[kWarps];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < kWarps ? warp_sums[lane] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (lane == 0) atomicAdd(result, static_cast<double>(sum));
  }
}

}  // namespace

cudaError_t poly_sum(double* result, const float* x, std::size_t n, cudaStream_t st) {
  cudaError_t err = cudaMemsetAsync(result, 0, sizeof(double), st);
  if (err != cudaSuccess) return err;
  if (n == 0) return cudaSuccess;
  const std::size_t per_block = kBlock * kElemsPerThread;
  const std::size_t blocks = (n + per_block - 1) / per_block;
  if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
  poly_sum_kernel<<<static_cast<unsigned int>(blocks), kBlock, 0, st>>>(result, x, n);
  return cudaGetLastError();
}

}  // namespace reduce

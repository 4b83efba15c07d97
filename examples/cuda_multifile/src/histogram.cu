// Histogram with shared-memory atomics. The bin of each element comes from
// dm::bin_index in device_math.cu (a cross-TU call in the hot loop).
#include "device_math.h"
#include "histogram.h"

namespace histogram {
namespace {

constexpr int kBlock = 256;
constexpr std::size_t kElemsPerThread = 256;

__device__ __forceinline__ void add(unsigned int* s_bins, float v) {
  atomicAdd(&s_bins[dm::bin_index(v, kLo, kScale, kBins)], 1u);  // cross-TU call
}

__global__ void __launch_bounds__(kBlock)
    count_kernel(unsigned int* __restrict__ bins, const float* __restrict__ x, std::size_t n) {
  __shared__ unsigned int s_bins[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) s_bins[b] = 0u;
  __syncthreads();

  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (std::size_t i = tid; i < n4; i += stride) {
    const float4 v = x4[i];
    add(s_bins, v.x);
    add(s_bins, v.y);
    add(s_bins, v.z);
    add(s_bins, v.w);
  }
  for (std::size_t i = n4 * 4 + tid; i < n; i += stride) add(s_bins, x[i]);  // < 4 left
  __syncthreads();

  for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
    const unsigned int c = s_bins[b];
    if (c != 0u) atomicAdd(&bins[b], c);
  }
}

}  // namespace

cudaError_t count(unsigned int* bins, const float* x, std::size_t n, cudaStream_t st) {
  cudaError_t err = cudaMemsetAsync(bins, 0, kBins * sizeof(unsigned int), st);
  if (err != cudaSuccess) return err;
  if (n == 0) return cudaSuccess;
  const std::size_t per_block = kBlock * kElemsPerThread;
  const std::size_t blocks = (n + per_block - 1) / per_block;
  if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
  count_kernel<<<static_cast<unsigned int>(blocks), kBlock, 0, st>>>(bins, x, n);
  return cudaGetLastError();
}

}  // namespace histogram

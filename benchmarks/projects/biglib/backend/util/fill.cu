// fill.cu: deterministic device-side test data (biglib_fill_uniform, see biglib.h).
#include <cuda_runtime.h>

#include "biglib.h"

namespace {

template <typename T>
__device__ __forceinline__ T uniform_value(uint64_t seed, uint64_t i, double amplitude);
template <>
__device__ __forceinline__ float uniform_value<float>(uint64_t seed, uint64_t i, double amplitude) {
  return biglib_uniform_f32(seed, i, static_cast<float>(amplitude));
}
template <>
__device__ __forceinline__ double uniform_value<double>(uint64_t seed, uint64_t i, double amplitude) {
  return biglib_uniform_f64(seed, i, amplitude);
}
template <>
__device__ __forceinline__ int uniform_value<int>(uint64_t seed, uint64_t i, double amplitude) {
  return biglib_uniform_i32(seed, i, static_cast<int32_t>(amplitude));
}

template <typename T>
__global__ void fill_kernel(T* __restrict__ p, int64_t n, uint64_t seed, double amplitude) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = uniform_value<T>(seed, static_cast<uint64_t>(i), amplitude);
}

template <typename T>
int launch_fill(void* p, int64_t n, uint64_t seed, double amplitude, cudaStream_t s) {
  int64_t blocks = (n + 255) / 256;
  if (blocks > 8192) blocks = 8192;
  fill_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, s>>>(static_cast<T*>(p), n, seed, amplitude);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

extern "C" int biglib_fill_uniform(biglib_dtype dtype, void* p, int64_t n, uint64_t seed,
                                   double amplitude, void* stream) {
  if (n < 0 || (n > 0 && !p) || !(amplitude >= 0.0)) return static_cast<int>(cudaErrorInvalidValue);
  if (n == 0) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case BIGLIB_F32: return launch_fill<float>(p, n, seed, amplitude, s);
    case BIGLIB_F64: return launch_fill<double>(p, n, seed, amplitude, s);
    case BIGLIB_I32:
      if (amplitude > 1.0e9) return static_cast<int>(cudaErrorInvalidValue);
      return launch_fill<int>(p, n, seed, amplitude, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

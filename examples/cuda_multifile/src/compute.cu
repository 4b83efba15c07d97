// Compute-bound kernel: many sinf/expf/division/FMA operations per element. The
// hot loop calls dm::soft_sat and dm::blend, which live in device_math.cu.
#include "compute.h"
#include "device_math.h"

namespace compute {
namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    iterate_kernel(float* __restrict__ out, const float* __restrict__ x0,
                   const float* __restrict__ p, std::size_t n, int iters) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = x0[i];
  const float pi = p[i];
  for (int it = 0; it < iters; ++it) {
    const float s = sinf(x);
    const float g = expf(-x * x);
    const float r = dm::soft_sat(x);              // cross-TU call
    const float y = kA * s + kB * g + kC * r + pi;
    x = dm::blend(x, y, kW);                      // cross-TU call
  }
  out[i] = x;
}

}  // namespace

cudaError_t iterate(float* out, const float* x0, const float* p, std::size_t n, int iters,
                    cudaStream_t st) {
  if (n == 0) return cudaSuccess;
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
  iterate_kernel<<<static_cast<unsigned int>(blocks), kBlock, 0, st>>>(out, x0, p, n, iters);
  return cudaGetLastError();
}

}  // namespace compute

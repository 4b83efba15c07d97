#include "stencil.h"

namespace stencil {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

__global__ void __launch_bounds__(kBlockX * kBlockY)
jacobi5(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int j = blockIdx.x * kBlockX + threadIdx.x;  // column
  const int i = blockIdx.y * kBlockY + threadIdx.y;  // row
  if (i >= n || j >= n) return;
  const size_t idx = static_cast<size_t>(i) * n + j;
  if (i == 0 || j == 0 || i == n - 1 || j == n - 1) {
    out[idx] = in[idx];
    return;
  }
  const float c = in[idx];
  const float nb = in[idx - n] + in[idx + n] + in[idx - 1] + in[idx + 1];
  out[idx] = kCenterWeight * c + kNeighborWeight * nb;
}

}  // namespace

cudaError_t jacobi_step(const float* in, float* out, int n, cudaStream_t stream) {
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid((n + kBlockX - 1) / kBlockX, (n + kBlockY - 1) / kBlockY);
  jacobi5<<<grid, block, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t jacobi_run(const float* init, float* buf_a, float* buf_b, int n, int iters,
                       const float** result, cudaStream_t stream) {
  const float* src = init;
  float* dst = buf_a;
  for (int it = 0; it < iters; ++it) {
    const cudaError_t err = jacobi_step(src, dst, n, stream);
    if (err != cudaSuccess) return err;
    src = dst;
    dst = (dst == buf_a) ? buf_b : buf_a;
  }
  if (result) *result = src;
  return cudaSuccess;
}

}  // namespace stencil

// Stencil kernel (one thread per output cell) and its host launcher.
#include "boundary.cuh"
#include "coeffs.cuh"
#include "cuda_util.cuh"
#include "stencil.h"

// Each of the 121 taps calls cell_index() (boundary.cu) and loads two fields; the weights
// come from col_weight()/row_weight() (coeffs.cu). All three are cross-TU calls.
__global__ void stencil_kernel(const float* __restrict__ u, const float* __restrict__ kappa,
                               float* __restrict__ out, int n) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= n || y >= n) return;
  float wx[kWidth];
#pragma unroll
  for (int j = 0; j < kWidth; ++j) wx[j] = col_weight(j - kRadius);
  float acc = 0.0f;
#pragma unroll
  for (int dy = -kRadius; dy <= kRadius; ++dy) {
    float row = 0.0f;
#pragma unroll
    for (int dx = -kRadius; dx <= kRadius; ++dx) {
      const int p = cell_index(x + dx, y + dy, n);
      row = fmaf(wx[dx + kRadius], kappa[p] * u[p], row);
    }
    acc = fmaf(row_weight(dy), row, acc);
  }
  out[static_cast<std::size_t>(y) * n + x] = acc;
}

double gpu_stencil(const float* u, const float* kappa, float* out, int n, const float* wx,
                   const float* wy, int reps) {
  const std::size_t bytes = static_cast<std::size_t>(n) * n * sizeof(float);
  float *d_u, *d_kappa, *d_out;
  CUDA_CHECK(cudaMalloc(&d_u, bytes));
  CUDA_CHECK(cudaMalloc(&d_kappa, bytes));
  CUDA_CHECK(cudaMalloc(&d_out, bytes));
  CUDA_CHECK(cudaMemcpy(d_u, u, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_kappa, kappa, bytes, cudaMemcpyHostToDevice));
  upload_weights(wx, wy);

  const dim3 block(32, 8);
  const dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
  const double ms = median_time_ms(
      [&] {
        stencil_kernel<<<grid, block>>>(d_u, d_kappa, d_out, n);
        CUDA_CHECK(cudaGetLastError());
      },
      reps);

  CUDA_CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_u));
  CUDA_CHECK(cudaFree(d_kappa));
  CUDA_CHECK(cudaFree(d_out));
  return ms;
}

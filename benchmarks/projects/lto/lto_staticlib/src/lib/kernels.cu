// The library's two kernels and their host launchers (declared in include/devkern.h).
#include "cuda_util.cuh"
#include "devkern.h"
#include "helpers.cuh"

// Compute-bound: 2 cross-TU calls (curve_poly, saturate) per iteration, kCurveIters per
// element.
__global__ void curve_kernel(const float* __restrict__ in, float* __restrict__ out,
                             std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float a = in[i];
  float x = 0.5f, sum = 0.0f;
  for (int k = 0; k < kCurveIters; ++k) {
    x = saturate(a + curve_poly(x));
    sum += x;
  }
  out[i] = sum * (1.0f / kCurveIters);
}

// Gather from an L2-resident table: 3 cross-TU calls (gather_index, horner3, saturate)
// per tap, kLutTaps per element.
__global__ void lut_filter_kernel(const float* __restrict__ table, float* __restrict__ out,
                                  std::size_t n, std::uint32_t seed) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const std::uint32_t mask = static_cast<std::uint32_t>(kTableSize - 1);
  float acc = 0.0f;
  for (int k = 0; k < kLutTaps; ++k) {
    const float v = table[gather_index(i, static_cast<std::uint32_t>(k), seed, mask)];
    acc = fmaf(acc, kLutDecay, saturate(horner3(v, kLutB0, kLutB1, kLutB2, kLutB3)));
  }
  out[i] = acc;
}

namespace {
constexpr unsigned kBlock = 256;
unsigned grid_for(std::size_t n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }
}  // namespace

double devkern_curve(const float* in, float* out, std::size_t n, int reps) {
  float *d_in, *d_out;
  CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_in, in, n * sizeof(float), cudaMemcpyHostToDevice));
  const double ms = median_time_ms(
      [&] {
        curve_kernel<<<grid_for(n), kBlock>>>(d_in, d_out, n);
        CUDA_CHECK(cudaGetLastError());
      },
      reps);
  CUDA_CHECK(cudaMemcpy(out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_out));
  return ms;
}

double devkern_lut_filter(const float* table, float* out, std::size_t n, std::uint32_t seed,
                          int reps) {
  float *d_table, *d_out;
  CUDA_CHECK(cudaMalloc(&d_table, kTableSize * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_table, table, kTableSize * sizeof(float), cudaMemcpyHostToDevice));
  const double ms = median_time_ms(
      [&] {
        lut_filter_kernel<<<grid_for(n), kBlock>>>(d_table, d_out, n, seed);
        CUDA_CHECK(cudaGetLastError());
      },
      reps);
  CUDA_CHECK(cudaMemcpy(out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_table));
  CUDA_CHECK(cudaFree(d_out));
  return ms;
}

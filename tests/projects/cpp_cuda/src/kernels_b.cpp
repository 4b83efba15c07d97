// Kernel B: a power-law series with square roots and divisions per input value.
// Compiled as CUDA although the file ends in .cpp (see CMakeLists.txt).
#include <cmath>
#include "bench.h"
#include "kernels.h"

namespace {
constexpr int kTerms = 128;

__host__ __device__ inline float pow_series(float x) {
  float acc = 0.0f;
  for (int k = 0; k < kTerms; ++k) {
    float a = 1.0f + fabsf(x) + 0.015625f * k;
    float p = powf(a, -1.5f + 0.01f * k);
    float r = 1.0f / sqrtf(a * a + 0.5f);
    acc += p * r + sqrtf(a) / (a + 2.0f);
  }
  return acc / kTerms;
}

__global__ void pow_series_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = pow_series(in[i]);
}
}  // namespace

void launch_pow_series(const float* in, float* out, int n, cudaStream_t s) {
  int block = 256;
  pow_series_kernel<<<(n + block - 1) / block, block, 0, s>>>(in, out, n);
  CK(cudaGetLastError());
}

float pow_series_ref(float x) { return pow_series(x); }

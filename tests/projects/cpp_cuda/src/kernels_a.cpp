// Kernel A: a bank of Gabor-like filters evaluated at each input value.
// Compiled as CUDA although the file ends in .cpp (see CMakeLists.txt).
#include <cmath>
#include "bench.h"
#include "kernels.h"

namespace {
constexpr int kBank = 256;

__host__ __device__ inline float gabor_bank(float x) {
  float acc = 0.0f;
  for (int k = 0; k < kBank; ++k) {
    float c = -1.0f + k * (2.0f / kBank);
    float d = x - c;
    float g = expf(-8.0f * d * d);
    float s = sinf(1.2f * d + 0.0025f * k);
    acc += g * s / (1.0f + d * d);
  }
  return acc;
}

__global__ void gabor_bank_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = gabor_bank(in[i]);
}
}  // namespace

void launch_gabor_bank(const float* in, float* out, int n, cudaStream_t s) {
  int block = 256;
  gabor_bank_kernel<<<(n + block - 1) / block, block, 0, s>>>(in, out, n);
  CK(cudaGetLastError());
}

float gabor_bank_ref(float x) { return gabor_bank(x); }

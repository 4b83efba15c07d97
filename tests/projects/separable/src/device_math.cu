// Definition of the extern __device__ function called from the kernel in main.cu.
#include <cmath>
#include "device_math.cuh"

namespace {
__host__ __device__ inline float wave_term_impl(float x, int k) {
  float a = 0.5f + 0.03125f * k;
  float z = a * x - 0.25f * k;
  float softplus = logf(1.0f + expf(-fabsf(z))) + fmaxf(z, 0.0f);
  float wave = cosf(0.7f * z) * sqrtf(1.0f + a * a);
  return softplus * wave / (2.0f + z * z);
}
}  // namespace

__device__ float wave_term(float x, int k) { return wave_term_impl(x, k); }

float wave_term_host(float x, int k) { return wave_term_impl(x, k); }

// Register-heavy RK4 integrator: 16 state variables, 4 stages, fully unrolled.
#include <cmath>
#include "bench.h"
#include "kernels.h"

namespace {
constexpr float kDamp = 0.05f;
constexpr float kCouple = 0.35f;

struct State {
  float th[kPend];
  float om[kPend];
};

__host__ __device__ inline void deriv(const State& y, const float* g, State& dy) {
  float s[kPend];  // s[j] = sin(th[j+1] - th[j])
#pragma unroll
  for (int j = 0; j < kPend; ++j) s[j] = sinf(y.th[(j + 1) % kPend] - y.th[j]);
#pragma unroll
  for (int j = 0; j < kPend; ++j) {
    dy.th[j] = y.om[j];
    dy.om[j] = -g[j] * sinf(y.th[j]) - kDamp * y.om[j] +
               kCouple * (s[j] - s[(j + kPend - 1) % kPend]);
  }
}

__host__ __device__ inline float integrate(const float* theta0) {
  State y, k, acc, tmp;
  float g[kPend];
#pragma unroll
  for (int j = 0; j < kPend; ++j) {
    y.th[j] = theta0[j];
    y.om[j] = 0.0f;
    g[j] = 1.0f + 0.25f * j / (1.0f + theta0[j] * theta0[j]);
  }
  for (int step = 0; step < kSteps; ++step) {
    deriv(y, g, k);
#pragma unroll
    for (int j = 0; j < kPend; ++j) {
      acc.th[j] = k.th[j];
      acc.om[j] = k.om[j];
      tmp.th[j] = y.th[j] + 0.5f * kDt * k.th[j];
      tmp.om[j] = y.om[j] + 0.5f * kDt * k.om[j];
    }
    deriv(tmp, g, k);
#pragma unroll
    for (int j = 0; j < kPend; ++j) {
      acc.th[j] += 2.0f * k.th[j];
      acc.om[j] += 2.0f * k.om[j];
      tmp.th[j] = y.th[j] + 0.5f * kDt * k.th[j];
      tmp.om[j] = y.om[j] + 0.5f * kDt * k.om[j];
    }
    deriv(tmp, g, k);
#pragma unroll
    for (int j = 0; j < kPend; ++j) {
      acc.th[j] += 2.0f * k.th[j];
      acc.om[j] += 2.0f * k.om[j];
      tmp.th[j] = y.th[j] + kDt * k.th[j];
      tmp.om[j] = y.om[j] + kDt * k.om[j];
    }
    deriv(tmp, g, k);
#pragma unroll
    for (int j = 0; j < kPend; ++j) {
      y.th[j] += (kDt / 6.0f) * (acc.th[j] + k.th[j]);
      y.om[j] += (kDt / 6.0f) * (acc.om[j] + k.om[j]);
    }
  }
  // Total mechanical energy (positive) of the system at the end.
  float e = 0.0f;
#pragma unroll
  for (int j = 0; j < kPend; ++j) {
    e += 0.5f * y.om[j] * y.om[j] + g[j] * (1.0f - cosf(y.th[j]));
    e += kCouple * (1.0f - cosf(y.th[(j + 1) % kPend] - y.th[j]));
  }
  return e;
}

__global__ void rk4_kernel(const float* __restrict__ theta0, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float t0[kPend];
#pragma unroll
  for (int j = 0; j < kPend; ++j) t0[j] = theta0[(size_t)j * n + i];  // coalesced SoA
  out[i] = integrate(t0);
}
}  // namespace

void launch_rk4(const float* theta0, float* out, int n, cudaStream_t s) {
  int block = 128;
  rk4_kernel<<<(n + block - 1) / block, block, 0, s>>>(theta0, out, n);
  CK(cudaGetLastError());
}

float rk4_ref(const float* theta0) { return integrate(theta0); }

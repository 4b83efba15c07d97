// Heavy kernel of the static library: vol-averaged Black-Scholes call prices.
#include <cmath>
#include "bench.h"
#include "layout.h"

namespace {
constexpr float kRate = 0.03f;

// Cumulative normal distribution (Abramowitz-Stegun polynomial).
template <class T>
__host__ __device__ inline T cnd(T d) {
  const T a1 = T(0.31938153), a2 = T(-0.356563782), a3 = T(1.781477937),
          a4 = T(-1.821255978), a5 = T(1.330274429);
  const T rsqrt2pi = T(0.39894228040143267794);
  T k = T(1) / (T(1) + T(0.2316419) * fabs(d));
  T c = rsqrt2pi * exp(T(-0.5) * d * d) *
        (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
  return d > T(0) ? T(1) - c : c;
}

__host__ __device__ inline float vol_at(int v) { return 0.10f + 0.005f * v; }

__global__ void price_kernel(const float* __restrict__ spot, const float* __restrict__ strike,
                             const float* __restrict__ years, float* __restrict__ price, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float S = spot[i], X = strike[i], T = years[i];
  const float sqrtT = sqrtf(T);
  const float logSX = logf(S / X);
  const float disc = X * expf(-kRate * T);
  float sum = 0.0f;
  for (int v = 0; v < kVols; ++v) {
    float vol = vol_at(v);
    float d1 = (logSX + (kRate + 0.5f * vol * vol) * T) / (vol * sqrtT);
    float d2 = d1 - vol * sqrtT;
    sum += S * cnd(d1) - disc * cnd(d2);
  }
  price[i] = sum / kVols;
}
}  // namespace

void price_vol_averaged(const float* spot, const float* strike, const float* years,
                        float* price, int n, cudaStream_t s) {
  int block = 256;
  price_kernel<<<(n + block - 1) / block, block, 0, s>>>(spot, strike, years, price, n);
  CK(cudaGetLastError());
}

double price_vol_averaged_ref(float spot, float strike, float years) {
  double S = spot, X = strike, T = years, sum = 0.0;
  for (int v = 0; v < kVols; ++v) {
    double vol = vol_at(v);
    double d1 = (std::log(S / X) + (kRate + 0.5 * vol * vol) * T) / (vol * std::sqrt(T));
    double d2 = d1 - vol * std::sqrt(T);
    sum += S * cnd(d1) - X * std::exp(-kRate * T) * cnd(d2);
  }
  return sum / kVols;
}

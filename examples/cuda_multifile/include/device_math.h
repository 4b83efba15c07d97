// Small device helpers DEFINED in src/device_math.cu and called from the hot loops
// of kernels in other translation units (compute.cu, reduce.cu, histogram.cu).
// Under separable compilation (-rdc) each call is a real ABI call; only
// device link-time optimization (-dlto) can inline them.
//
// The inline host functions at the end are the double-precision references that
// main.cu uses; they share the constants with the device code.
#pragma once

#include <algorithm>

namespace dm {

// Lambert/Pade approximation of tanh on [-3, 3], saturating outside:
//   soft_sat(x) = x (27 + x^2) / (27 + 9 x^2),  x clamped to [-3, 3].
constexpr float kSatLimit = 3.0f;

// Degree-6 polynomial (truncated exp series), evaluated with Horner's rule.
constexpr float kPoly0 = 1.0f;
constexpr float kPoly1 = 1.0f;
constexpr float kPoly2 = 0.5f;
constexpr float kPoly3 = 0.16666667f;
constexpr float kPoly4 = 0.041666668f;
constexpr float kPoly5 = 0.008333334f;
constexpr float kPoly6 = 0.0013888889f;

__device__ float soft_sat(float x);
// a + t (b - a)
__device__ float blend(float a, float b, float t);
__device__ float poly(float x);
// floor((x - lo) * scale) clamped to [0, nbins - 1]
__device__ int bin_index(float x, float lo, float scale, int nbins);

// ------------------------------------------------------------------ host references
inline double soft_sat_ref(double x) {
  const double lim = kSatLimit;
  x = std::min(std::max(x, -lim), lim);
  const double x2 = x * x;
  return x * (27.0 + x2) / (27.0 + 9.0 * x2);
}

inline double blend_ref(double a, double b, double t) { return a + t * (b - a); }

inline double poly_ref(double x) {
  double r = kPoly6;
  r = r * x + kPoly5;
  r = r * x + kPoly4;
  r = r * x + kPoly3;
  r = r * x + kPoly2;
  r = r * x + kPoly1;
  r = r * x + kPoly0;
  return r;
}

// Exact float emulation of bin_index (same operations, same rounding).
inline int bin_index_ref(float x, float lo, float scale, int nbins) {
  float t = (x - lo) * scale;
  t = std::min(std::max(t, 0.0f), static_cast<float>(nbins - 1));
  return static_cast<int>(t);
}

}  // namespace dm

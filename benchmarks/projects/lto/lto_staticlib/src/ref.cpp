// CPU double-precision references of curve_kernel and lut_filter_kernel for one element.
#include "ref.h"

#include <algorithm>

#include "devkern.h"

namespace {

double saturate(double x) { return std::min(std::max(x, 0.0), 1.0); }

double cubic(double x, double c0, double c1, double c2, double c3) {
  return c0 + x * (c1 + x * (c2 + x * c3));
}

}  // namespace

double ref_curve(float a) {
  double x = 0.5, sum = 0.0;
  for (int k = 0; k < kCurveIters; ++k) {
    double p = kCurveCoeffs[7];
    for (int j = 6; j >= 0; --j) p = p * x + kCurveCoeffs[j];
    x = saturate(a + p);
    sum += x;
  }
  return sum / kCurveIters;
}

double ref_lut_filter(const float* table, std::uint64_t i, std::uint32_t seed) {
  const std::uint32_t mask = static_cast<std::uint32_t>(kTableSize - 1);
  double acc = 0.0;
  for (std::uint32_t k = 0; k < static_cast<std::uint32_t>(kLutTaps); ++k) {
    std::uint32_t h = k * 0x9E3779B9u + seed;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    const double v = table[(static_cast<std::uint32_t>(i) + h) & mask];
    acc = acc * static_cast<double>(kLutDecay) +
          saturate(cubic(v, kLutB0, kLutB1, kLutB2, kLutB3));
  }
  return acc;
}

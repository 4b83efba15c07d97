// Tiny helpers called 2-3 times per iteration by the kernels in kernels.cu.
#include "helpers.cuh"

#include "devkern.h"

__constant__ float c_curve[8] = {kCurveCoeffs[0], kCurveCoeffs[1], kCurveCoeffs[2],
                                 kCurveCoeffs[3], kCurveCoeffs[4], kCurveCoeffs[5],
                                 kCurveCoeffs[6], kCurveCoeffs[7]};

__device__ float curve_poly(float x) {
  float p = c_curve[7];
  for (int j = 6; j >= 0; --j) p = fmaf(p, x, c_curve[j]);
  return p;
}

__device__ float horner3(float x, float c0, float c1, float c2, float c3) {
  return fmaf(x, fmaf(x, fmaf(x, c3, c2), c1), c0);
}

__device__ float saturate(float x) {
  return __saturatef(x);
}

__device__ std::uint32_t gather_index(std::size_t i, std::uint32_t k, std::uint32_t seed,
                                      std::uint32_t mask) {
  std::uint32_t h = k * 0x9E3779B9u + seed;  // murmur3 finalizer of the tap number
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return (static_cast<std::uint32_t>(i) + h) & mask;
}

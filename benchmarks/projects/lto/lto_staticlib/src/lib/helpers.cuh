// Helpers defined in helpers.cu. kernels.cu only sees these declarations, so with
// relocatable device code each use is a real call across translation units unless
// device LTO inlines it when the executables are device-linked.
#pragma once
#include <cstddef>
#include <cstdint>

// P(x) of devkern_curve: Horner evaluation (7 FMAs) with coefficients from a
// __constant__ table in helpers.cu.
extern __device__ float curve_poly(float x);
// c0 + x * (c1 + x * (c2 + x * c3)): one Horner evaluation (3 FMAs).
extern __device__ float horner3(float x, float c0, float c1, float c2, float c3);
// Clamp to [0, 1].
extern __device__ float saturate(float x);
// Index of tap k for element i: (i + fmix32(k * 0x9E3779B9 + seed)) & mask.
extern __device__ std::uint32_t gather_index(std::size_t i, std::uint32_t k,
                                             std::uint32_t seed, std::uint32_t mask);

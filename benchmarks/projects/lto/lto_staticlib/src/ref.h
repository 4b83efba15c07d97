// CPU double-precision references of the devkern kernels (ref.cpp).
#pragma once
#include <cstdint>

// devkern_curve for one element with input a.
double ref_curve(float a);
// devkern_lut_filter for element i.
double ref_lut_filter(const float* table, std::uint64_t i, std::uint32_t seed);

// CPU double-precision reference of slow_check's kernel (host-only C++; also
// compiled alone by tools/time_reference.cpp to time it with g++).
#pragma once
#include <cmath>
#include <cstdint>

constexpr int kIters = 128;  // iterations of mix_step per element

// Input value of element i: a float in [0, 1), exactly representable, same on host and device.
inline float input_value(uint32_t i) {
  return (float)((i * 2654435761u) & 0xFFFFFFu) * (1.0f / 16777216.0f);
}

inline double mix_step_ref(double x, double acc, int k) {
  double t = x + 0.02 * k;
  double s = std::sin(0.3 * acc + 1.5 * t - 1.0);
  double e = std::exp(-0.5 * s * s);
  double p = std::pow(e + 0.25, 0.75);
  double r = std::sqrt(s * s + p);
  return acc * 0.95 + 0.1 * r;
}

inline double element_ref(float x) {
  double acc = 0.0;
  for (int k = 0; k < kIters; ++k) acc = mix_step_ref((double)x, acc, k);
  return acc;
}

// Index of the j-th of `check` elements spread evenly over n (all of them when check >= n).
inline uint32_t checked_index(uint64_t j, uint64_t check, uint64_t n) {
  return check >= n ? (uint32_t)j : (uint32_t)((j * n) / check);
}

// Checks `check` elements of out against the reference; returns the largest relative error.
inline double reference_check(const float* out, uint64_t n, uint64_t check) {
  if (check > n) check = n;
  double max_rel = 0.0;
  for (uint64_t j = 0; j < check; ++j) {
    uint32_t i = checked_index(j, check, n);
    double ref = element_ref(input_value(i));
    double rel = std::fabs((double)out[i] - ref) / std::fmax(std::fabs(ref), 1e-6);
    if (!(rel <= max_rel)) max_rel = rel;  // also catches NaN
  }
  return max_rel;
}

// Host API of the devkern static library (src/lib) and the parameters shared with the
// CPU reference (src/ref.cpp). Plain C++: no CUDA headers.
#pragma once
#include <cstddef>
#include <cstdint>

// bench_a, devkern_curve: per element, kCurveIters iterations of the saturated map
//   x <- saturate(a + P(x)),  P(x) = sum_j kCurveCoeffs[j] * x^j (degree 7),
//   x0 = 0.5,  a = in[i];  out[i] = mean of the iterates.
// P is contractive on [0, 1] (0 < P' <= 0.7), so float and double orbits stay close.
constexpr int kCurveIters = 512;
constexpr float kCurveCoeffs[8] = {0.0f,   0.7f,  -0.35f, 0.1f,
                                   -0.05f, 0.03f, -0.02f, 0.01f};

// bench_b, devkern_lut_filter: per element, kLutTaps hashed lookups in a table of
// kTableSize floats, each shaped by a saturated cubic and accumulated with decay:
//   acc <- kLutDecay * acc + saturate(B0 + v * (B1 + v * (B2 + v * B3))),
//   v = table[(i + fmix32(k * 0x9E3779B9 + seed)) & (kTableSize - 1)];  out[i] = acc.
constexpr int kLutTaps = 128;
constexpr std::size_t kTableSize = std::size_t(1) << 22;  // 16 MiB, fits in L2
constexpr float kLutB0 = -0.1f, kLutB1 = 1.5f, kLutB2 = -0.8f, kLutB3 = 0.6f;
constexpr float kLutDecay = 0.97f;

// Both run reps timed launches after 2 warm-ups and return the median kernel ms.
double devkern_curve(const float* in, float* out, std::size_t n, int reps);
double devkern_lut_filter(const float* table, float* out, std::size_t n, std::uint32_t seed,
                          int reps);


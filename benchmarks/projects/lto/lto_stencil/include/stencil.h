// Parameters and host API of the stencil benchmark. Plain C++: included by the
// g++-compiled .cpp files and by the nvcc-compiled .cu files.
#pragma once

constexpr int kRadius = 5;                // stencil radius: 11 x 11 = 121 taps per cell
constexpr int kWidth = 2 * kRadius + 1;

// Fills the separable weights wx[kWidth], wy[kWidth] (index d + kRadius for offset d)
// with normalized Gaussians of different widths (ref.cpp).
void make_weights(float* wx, float* wy);

// On an n x n grid (row-major) with clamp-to-edge boundaries:
//   out[y][x] = sum over |dx|, |dy| <= kRadius of wy(dy) * wx(dx) * kappa[p] * u[p],
//   p = (clamp(y + dy), clamp(x + dx)).
// Runs reps timed launches after 2 warm-ups; returns the median kernel milliseconds.
double gpu_stencil(const float* u, const float* kappa, float* out, int n, const float* wx,
                   const float* wy, int reps);

// CPU double-precision reference for output cell (x, y).
double ref_stencil_point(const float* u, const float* kappa, int n, const float* wx,
                         const float* wy, int x, int y);

// Stencil weights and the CPU double-precision reference of one output cell.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "stencil.h"

namespace {

// Normalized Gaussian of width sigma sampled at -kRadius..kRadius.
void gaussian(double sigma, float* w) {
  double raw[kWidth], sum = 0.0;
  for (int d = -kRadius; d <= kRadius; ++d) {
    raw[d + kRadius] = std::exp(-0.5 * d * d / (sigma * sigma));
    sum += raw[d + kRadius];
  }
  for (int j = 0; j < kWidth; ++j) w[j] = static_cast<float>(raw[j] / sum);
}

}  // namespace

void make_weights(float* wx, float* wy) {
  gaussian(2.2, wx);
  gaussian(2.8, wy);
}

double ref_stencil_point(const float* u, const float* kappa, int n, const float* wx,
                         const float* wy, int x, int y) {
  double acc = 0.0;
  for (int dy = -kRadius; dy <= kRadius; ++dy) {
    const auto yy = static_cast<std::size_t>(std::min(std::max(y + dy, 0), n - 1));
    for (int dx = -kRadius; dx <= kRadius; ++dx) {
      const auto xx = static_cast<std::size_t>(std::min(std::max(x + dx, 0), n - 1));
      const std::size_t p = yy * static_cast<std::size_t>(n) + xx;
      acc += static_cast<double>(wy[dy + kRadius]) * wx[dx + kRadius] *
             (static_cast<double>(kappa[p]) * u[p]);
    }
  }
  return acc;
}

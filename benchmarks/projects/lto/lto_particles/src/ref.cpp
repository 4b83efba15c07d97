// CPU double-precision reference of integrate_kernel for a single particle.
#include <algorithm>
#include <cmath>

#include "particles.h"

void ref_integrate(const float pos[4], const float vel[4], double pos_out[3],
                   double vel_out[3]) {
  double p[3] = {pos[0], pos[1], pos[2]};
  double v[3] = {vel[0], vel[1], vel[2]};
  const double inv_m = pos[3];
  const double dt = kDt, vmax = kVmax;
  for (int s = 0; s < kSteps; ++s) {
    const double r2s = p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + kSoft2;
    const double pull = kPullG / (r2s * std::sqrt(r2s));
    double a[3];
    for (int d = 0; d < 3; ++d) {
      const double spring = -p[d] * (kSpringK1 + kSpringK3 * p[d] * p[d]);
      const double drag = -kDrag * v[d] * (1.0 + std::fabs(v[d]));
      a[d] = inv_m * (spring + drag - pull * p[d]);
    }
    for (int d = 0; d < 3; ++d) {
      v[d] = std::min(std::max(v[d] + a[d] * dt, -vmax), vmax);
      p[d] += v[d] * dt;
    }
  }
  for (int d = 0; d < 3; ++d) {
    pos_out[d] = p[d];
    vel_out[d] = v[d];
  }
}

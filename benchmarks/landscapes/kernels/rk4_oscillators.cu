// Landscape kernel "rk4_oscillators" (math-heavy, register-heavy): n independent damped, driven,
// nonlinear oscillators (a pendulum with a cubic hardening term and a multi-tone drive),
//   m x'' = F sum_{j=1..8} a_j cos(j omega t) - c x' - k sin(x) - beta x^3,
// one per thread, integrated with the classical 4-stage Runge-Kutta method for `steps` steps entirely in
// registers. Per-oscillator mass m, damping c, stiffness k and drive amplitude F come from params[i]
// (float4: m, c, k, F), the 8 harmonic weights a_j from amp[j * n + i]; beta and the drive frequency
// omega are shared. The step is a fixed fraction of the oscillator's own time scale,
// h = dt / sqrtf(k / m) (one sqrtf, two divisions per thread). The harmonics are advanced by rotation
// (cos, sin of j omega h / 2 from 8 sincosf at the start), so 8 x (2 phase + 2 rotation + 1 weight)
// values stay live across the step loop: that is what makes the kernel register-heavy. Per step: two
// drive sums (at t + h/2 and t + h) and four acceleration evaluations, each one sinf and one IEEE
// division by m. The damping keeps the state bounded and the short horizon (steps * dt, about one
// natural period) keeps the flow far from chaotic divergence (float vs double: ~1e-6 relative L2).
//
// out[i] = x, out[n + i] = x' after the last step (2 n floats, every element written by every launch);
// inputs are never written, so every launch does identical work. The math flags change the
// transcendental and division sequences (--use_fast_math: sin.approx / cos.approx instead of the
// range-reduced sinf / sincosf with their Payne-Hanek slow path, --prec-div=false / --prec-sqrt=false:
// approximate division and square root, --ftz=true: flush-to-zero forms, --fmad=false: no FMA
// contraction); the register cap (-maxrregcount: 328 bytes of spill stores at 32, 8 at 64) and the
// ptxas level change how the step body is allocated and scheduled; --restrict changes the input loads
// (read-only path). Pointers are not __restrict__. No __launch_bounds__ on purpose: with
// __launch_bounds__(256), nvcc 13.0 ignores -maxrregcount as a cap. The default build (nvcc 13.0, sm_90,
// -O3) uses 70 registers, a 32-byte stack frame (the sinf / sincosf slow path) and no spills.
//
// Launch: grid ceil(n / 256), block 256; n = 2^20, steps = 64, dt = 0.1, beta = 0.2, omega = 1.3.

#define HARMONICS 8

__device__ __forceinline__ float accel(float x, float v, float drive, float m, float c, float k, float beta) {
  return (drive - c * v - k * sinf(x) - beta * x * x * x) / m;
}

extern "C" __global__ void
rk4_step(int n, int steps, float dt, float beta, float omega, const float* x0, const float* v0,
         const float4* params, const float* amp, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float4 p = params[i];
  const float m = p.x, c = p.y, k = p.z, f = p.w;
  const float h = dt / sqrtf(k / m);
  const float h2 = 0.5f * h;
  const float h6 = h / 6.0f;
  // harmonic j + 1: weight a[j], phase (zc, zs) = (cos, sin)((j + 1) omega t), half-step rotation (rc, rs)
  float a[HARMONICS], zc[HARMONICS], zs[HARMONICS], rc[HARMONICS], rs[HARMONICS];
  float drive_t = 0.f;  // the drive at t = 0
#pragma unroll
  for (int j = 0; j < HARMONICS; ++j) {
    a[j] = f * amp[static_cast<size_t>(j) * n + i];
    zc[j] = 1.0f;
    zs[j] = 0.0f;
    sincosf((j + 1) * omega * h2, &rs[j], &rc[j]);
    drive_t += a[j];
  }
  float x = x0[i], v = v0[i];
  for (int s = 0; s < steps; ++s) {
    float drive_mid = 0.f, drive_end = 0.f;
#pragma unroll
    for (int j = 0; j < HARMONICS; ++j) {
      const float c1 = zc[j] * rc[j] - zs[j] * rs[j];
      const float s1 = zs[j] * rc[j] + zc[j] * rs[j];
      drive_mid += a[j] * c1;
      zc[j] = c1 * rc[j] - s1 * rs[j];
      zs[j] = s1 * rc[j] + c1 * rs[j];
      drive_end += a[j] * zc[j];
    }
    const float k1x = v;
    const float k1v = accel(x, v, drive_t, m, c, k, beta);
    const float k2x = v + h2 * k1v;
    const float k2v = accel(x + h2 * k1x, k2x, drive_mid, m, c, k, beta);
    const float k3x = v + h2 * k2v;
    const float k3v = accel(x + h2 * k2x, k3x, drive_mid, m, c, k, beta);
    const float k4x = v + h * k3v;
    const float k4v = accel(x + h * k3x, k4x, drive_end, m, c, k, beta);
    x += h6 * (k1x + 2.0f * k2x + 2.0f * k3x + k4x);
    v += h6 * (k1v + 2.0f * k2v + 2.0f * k3v + k4v);
    drive_t = drive_end;
  }
  out[i] = x;
  out[static_cast<size_t>(n) + i] = v;
}

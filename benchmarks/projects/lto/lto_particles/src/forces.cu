// Tiny per-axis force terms, called ~10 times per particle and step by integrate.cu.
#include "forces.cuh"
#include "particles.h"

__device__ float spring_force(float x) {
  return -x * fmaf(kSpringK3, x * x, kSpringK1);
}

__device__ float drag_force(float v) {
  return -kDrag * v * (1.0f + fabsf(v));
}

__device__ float clamp_speed(float v) {
  return fminf(fmaxf(v, -kVmax), kVmax);
}

__device__ float central_pull(float r2) {
  const float inv_r = rsqrtf(r2 + kSoft2);
  return kPullG * inv_r * inv_r * inv_r;
}

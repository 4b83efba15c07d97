// k10: sine sum.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return sinf(x) * cosf(t) + 0.5f * sinf(t) * cosf(x);
}

DEFINE_MANY_TU_KERNEL(10, op)

// k04: power law.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return powf(x + 0.5f, 0.3f + 0.25f * t);
}

DEFINE_MANY_TU_KERNEL(04, op)

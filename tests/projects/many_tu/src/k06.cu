// k06: inverse root.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return 1.0f / sqrtf(1.0f + x * t * t);
}

DEFINE_MANY_TU_KERNEL(06, op)

// k03: root ratio.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return sqrtf(x * x + t) / (1.0f + t * x);
}

DEFINE_MANY_TU_KERNEL(03, op)

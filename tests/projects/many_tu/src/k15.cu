// k15: hypotenuse.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return hypotf(x, t) / (1.0f + x);
}

DEFINE_MANY_TU_KERNEL(15, op)

// k13: error function.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return erff(x - t);
}

DEFINE_MANY_TU_KERNEL(13, op)

// k19: log times sine.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return logf(x) * sinf(t * x);
}

DEFINE_MANY_TU_KERNEL(19, op)

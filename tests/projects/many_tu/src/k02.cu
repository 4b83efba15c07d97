// k02: log ratio.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return logf(1.0f + x * t) / (1.0f + x);
}

DEFINE_MANY_TU_KERNEL(02, op)

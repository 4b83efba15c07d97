// k01: damped sine.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return expf(-x * t) * sinf(x + t);
}

DEFINE_MANY_TU_KERNEL(01, op)

// k11: log2 decay.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return log2f(x + t + 1.0f) * expf(-0.25f * t);
}

DEFINE_MANY_TU_KERNEL(11, op)

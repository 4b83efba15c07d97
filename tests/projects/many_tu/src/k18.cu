// k18: power decay.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return powf(t + 1.0f, -x) * sqrtf(x);
}

DEFINE_MANY_TU_KERNEL(18, op)

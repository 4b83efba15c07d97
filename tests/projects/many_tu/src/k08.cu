// k08: cosine ratio.
#include "kcommon.cuh"

static __host__ __device__ inline float op(float x, float t) {
  return cosf(x * t) * x / (x + t + 0.5f);
}

DEFINE_MANY_TU_KERNEL(08, op)

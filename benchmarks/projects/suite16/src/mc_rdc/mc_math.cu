// mc_rdc: device math helpers (Box-Muller normals, GBM step, payoff), compiled as
// relocatable device code and called across translation units from kernel.cu.
#include "bench_util.h"
#include "mc_math.cuh"

namespace mc {
__device__ float2 normal_pair(uint32_t& state) {
  const float u1 = bu::bits_to_open01(bu::xorshift32(state));
  const float u2 = bu::bits_to_open01(bu::xorshift32(state));
  const float radius = sqrtf(-2.0f * logf(u1));
  float s, c;
  sincosf(6.283185307179586f * u2, &s, &c);
  return make_float2(radius * c, radius * s);
}

__device__ float gbm_step(float s, const AsianParams& p, float z) {
  return s * expf(fmaf(p.vol_sdt, z, p.drift_dt));
}

__device__ float call_payoff(float average, float strike) { return fmaxf(average - strike, 0.0f); }
}  // namespace mc

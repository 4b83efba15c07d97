// mc_rdc: shared declarations. The __device__ helpers are defined in mc_math.cu and
// called from the kernel in kernel.cu, so this target needs relocatable device code
// (CUDA_SEPARABLE_COMPILATION) and a device link step; -dlto lets them be inlined.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace mc {
constexpr int kOptions = 16;
constexpr int kSteps = 64;            // monitoring dates per path (even)
constexpr int kPathsPerThread = 16;
constexpr int kThreads = 256;
constexpr uint64_t kSeed = 0x2001;  // xorshift stream seeds

struct AsianParams {
  float s0, strike;
  float drift_dt;  // (r - sigma^2 / 2) * dt
  float vol_sdt;   // sigma * sqrt(dt)
};

// Defined in mc_math.cu (device code in another translation unit).
__device__ float2 normal_pair(uint32_t& state);
__device__ float gbm_step(float s, const AsianParams& p, float z);
__device__ float call_payoff(float average, float strike);

// Defined in kernel.cu.
void set_params(const AsianParams* host_params);
void launch_asian(float* thread_sums, long long paths, long long threads_per_option);
}  // namespace mc

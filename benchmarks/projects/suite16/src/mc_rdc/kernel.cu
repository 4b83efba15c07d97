// mc_rdc: arithmetic-average Asian call, Monte Carlo over 64 monitoring dates; the
// kernel calls the __device__ helpers defined in mc_math.cu.
#include "bench_util.h"
#include "mc_math.cuh"

namespace mc {
namespace {
__constant__ AsianParams c_params[kOptions];

__global__ void __launch_bounds__(kThreads) asian_kernel(float* __restrict__ thread_sums, long long paths, long long tpo) {
  const int o = blockIdx.y;
  const long long t = blockIdx.x * (long long)kThreads + threadIdx.x;
  if (t >= tpo) return;
  const AsianParams p = c_params[o];
  const long long left = paths - t * kPathsPerThread;
  const int count = static_cast<int>(left < kPathsPerThread ? left : kPathsPerThread);
  uint32_t state = bu::stream_seed(static_cast<uint64_t>(o) * tpo + t, kSeed);
  float sum = 0.f;
  for (int k = 0; k < count; ++k) {
    float s = p.s0, acc = 0.f;
    for (int step = 0; step < kSteps; step += 2) {
      const float2 z = normal_pair(state);
      s = gbm_step(s, p, z.x);
      acc += s;
      s = gbm_step(s, p, z.y);
      acc += s;
    }
    sum += call_payoff(acc * (1.0f / kSteps), p.strike);
  }
  thread_sums[static_cast<size_t>(o) * tpo + t] = sum;
}
}  // namespace

void set_params(const AsianParams* host_params) {
  CUDA_CHECK(cudaMemcpyToSymbol(c_params, host_params, sizeof(AsianParams) * kOptions));
}

void launch_asian(float* thread_sums, long long paths, long long tpo) {
  const dim3 grid(bu::grid_for(tpo, kThreads), kOptions);
  asian_kernel<<<grid, kThreads>>>(thread_sums, paths, tpo);
}
}  // namespace mc

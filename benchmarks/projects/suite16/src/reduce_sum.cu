// reduce_sum: sum of n fp32 values. Pass 1: each 256-thread block sums a fixed chunk of
// 65536 elements (float4 loads, fp32 accumulation, warp shuffles); pass 2: one block
// adds the block partials in double. Inputs are small integers, so every fp32 partial
// is exact and the result must equal the CPU sum exactly. --n = elements.
#include "bench_util.h"

namespace {
constexpr int kThreads = 256;
constexpr long long kChunk = 65536;  // elements per block; |partial| <= 65536 * 128 < 2^24
constexpr int kInner = 30;
constexpr uint64_t kSeed = 0x901;

__host__ __device__ inline float input_at(uint64_t i) {
  return static_cast<float>(static_cast<int>(bu::hash2(i, kSeed) & 255u) - 127);  // -127..128
}
__global__ void fill_input(float* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = input_at(i);
}

__global__ void __launch_bounds__(kThreads) partial_sums(const float* __restrict__ x, float* __restrict__ part, long long n) {
  const long long lo = static_cast<long long>(blockIdx.x) * kChunk;
  const long long hi = lo + kChunk < n ? lo + kChunk : n;
  float acc = 0.f;
  if (hi - lo == kChunk) {
    const float4* p = reinterpret_cast<const float4*>(x + lo);
#pragma unroll 8
    for (int i = threadIdx.x; i < kChunk / 4; i += kThreads) {
      const float4 v = p[i];
      acc += (v.x + v.y) + (v.z + v.w);
    }
  } else {
    for (long long i = lo + threadIdx.x; i < hi; i += kThreads) acc += x[i];
  }
  acc = bu::block_sum(acc);
  if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(kThreads) final_sum(const float* __restrict__ part, long long parts, double* out) {
  __shared__ double sh[kThreads];
  double acc = 0.0;
  for (long long i = threadIdx.x; i < parts; i += kThreads) acc += part[i];
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = sh[0];
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 128LL << 20, 1, 1LL << 29);
  const long long n = a.n;
  const long long parts = (n + kChunk - 1) / kChunk;
  bu::DeviceBuffer<float> x(n), part(parts);
  bu::DeviceBuffer<double> out(1);
  fill_input<<<1024, 256>>>(x.p, n);
  CUDA_CHECK_LAUNCH();
  const unsigned grid = bu::grid_for(n, kChunk);

  bu::time_launches([&] {
    partial_sums<<<grid, kThreads>>>(x.p, part.p, n);
    final_sum<<<1, kThreads>>>(part.p, parts, out.p);
  }, a.reps, kInner);

  long long ref = 0;
  for (long long i = 0; i < n; ++i) ref += static_cast<long long>(input_at(i));
  bu::Checker chk;
  chk.exact(out.to_host()[0], static_cast<double>(ref), "sum", 0);
  return chk.finish();
}

// histogram: 256-bin histogram of n bytes with a triangular (centre-heavy) distribution.
// Each block accumulates into 4 shared-memory copies (by warp) with shared atomics,
// then merges into the global bins with global atomics; the bins are cleared inside
// every launch. --n = bytes.
#include "bench_util.h"

namespace {
constexpr int kBins = 256, kCopies = 4, kThreads = 512;
constexpr int kInner = 32;
constexpr uint64_t kSeed = 0xB01;

__host__ __device__ inline uint8_t byte_at(uint64_t i) {
  const uint32_t u = static_cast<uint32_t>(bu::hash2(i >> 2, kSeed) >> (16 * (i & 3))) & 0xFFFFu;
  return static_cast<uint8_t>(((u & 255u) + (u >> 8)) >> 1);
}
__global__ void fill_input(uint8_t* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = byte_at(i);
}

__device__ inline void add_word(unsigned* h, uint32_t w) {
  atomicAdd(&h[w & 255u], 1u);
  atomicAdd(&h[(w >> 8) & 255u], 1u);
  atomicAdd(&h[(w >> 16) & 255u], 1u);
  atomicAdd(&h[w >> 24], 1u);
}

__global__ void __launch_bounds__(kThreads) hist_kernel(const uint8_t* __restrict__ data, long long n, unsigned* __restrict__ bins) {
  __shared__ unsigned sh[kCopies][kBins];
  for (int i = threadIdx.x; i < kCopies * kBins; i += kThreads) (&sh[0][0])[i] = 0u;
  __syncthreads();
  unsigned* mine = sh[(threadIdx.x >> 5) % kCopies];
  const long long vecs = n / 16;
  const uint4* d4 = reinterpret_cast<const uint4*>(data);
  for (long long i = blockIdx.x * (long long)kThreads + threadIdx.x; i < vecs; i += (long long)gridDim.x * kThreads) {
    const uint4 v = d4[i];
    add_word(mine, v.x);
    add_word(mine, v.y);
    add_word(mine, v.z);
    add_word(mine, v.w);
  }
  // tail bytes (n not a multiple of 16), handled by block 0
  if (blockIdx.x == 0)
    for (long long i = vecs * 16 + threadIdx.x; i < n; i += kThreads) atomicAdd(&mine[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    unsigned s = 0;
#pragma unroll
    for (int c = 0; c < kCopies; ++c) s += sh[c][b];
    if (s) atomicAdd(&bins[b], s);
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 256LL << 20, 1, 1LL << 31);
  const long long n = a.n;
  bu::DeviceBuffer<uint8_t> data(n);
  bu::DeviceBuffer<unsigned> bins(kBins);
  fill_input<<<1024, 256>>>(data.p, n);
  CUDA_CHECK_LAUNCH();
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const unsigned grid = static_cast<unsigned>(std::max<long long>(1, std::min<long long>(4LL * sms, (n / 16 + kThreads - 1) / kThreads)));

  bu::time_launches([&] {
    CUDA_CHECK(cudaMemsetAsync(bins.p, 0, kBins * sizeof(unsigned)));
    hist_kernel<<<grid, kThreads>>>(data.p, n, bins.p);
  }, a.reps, kInner);

  // Exact check: count the input bytes (copied back) on the CPU.
  std::vector<unsigned> ref(kBins, 0u);
  {
    const std::vector<uint8_t> h = data.to_host();
    for (long long i = 0; i < n; ++i) ++ref[h[i]];
  }
  std::vector<unsigned> got = bins.to_host();
  bu::Checker chk;
  for (int b = 0; b < kBins; ++b) chk.exact(got[b], ref[b], "bin", b);
  return chk.finish();
}

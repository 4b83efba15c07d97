// block_scan: inclusive prefix sum of n uint32 values (mod 2^32), reduce-then-scan:
// (1) per-tile sums (2048 items per 256-thread tile), (2) one block scans the tile sums,
// (3) each tile scans itself and adds its offset. --n = elements.
#include "bench_util.h"

namespace {
constexpr int kThreads = 256, kItems = 8, kTile = kThreads * kItems;
constexpr int kInner = 12;
constexpr uint64_t kSeed = 0x801;

__host__ __device__ inline uint32_t input_at(uint64_t i) {
  return static_cast<uint32_t>(bu::hash2(i, kSeed) >> 32);
}
__global__ void fill_input(uint32_t* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = input_at(i);
}

// Exclusive scan of one value per thread across the block; *total gets the block sum.
__device__ inline uint32_t block_exclusive_scan(uint32_t v, uint32_t* total) {
  __shared__ uint32_t warp_tot[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t inc = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t t = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += t;
  }
  __syncthreads();
  if (lane == 31) warp_tot[warp] = inc;
  __syncthreads();
  uint32_t before = 0, all = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) {
    const uint32_t t = warp_tot[w];
    before += (w < warp) ? t : 0u;
    all += t;
  }
  *total = all;
  return before + inc - v;
}

// Loads this thread's kItems consecutive items of tile `tile` (zeros past n).
__device__ inline void load_items(const uint32_t* in, long long n, long long tile, uint32_t (&it)[kItems]) {
  const long long first = tile * kTile + static_cast<long long>(threadIdx.x) * kItems;
  if (first + kItems <= n) {
    const uint4* p = reinterpret_cast<const uint4*>(in + first);
    const uint4 a = p[0], b = p[1];
    it[0] = a.x; it[1] = a.y; it[2] = a.z; it[3] = a.w;
    it[4] = b.x; it[5] = b.y; it[6] = b.z; it[7] = b.w;
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) it[k] = first + k < n ? in[first + k] : 0u;
  }
}

__global__ void __launch_bounds__(kThreads) tile_sums(const uint32_t* __restrict__ in, uint32_t* __restrict__ sums, long long n) {
  uint32_t it[kItems];
  load_items(in, n, blockIdx.x, it);
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) s += it[k];
  uint32_t total;
  block_exclusive_scan(s, &total);
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

// Single block: exclusive scan of the tile sums in place, kTile per pass with a carry.
__global__ void __launch_bounds__(kThreads) scan_sums(uint32_t* sums, long long tiles) {
  uint32_t carry = 0;
  for (long long t0 = 0; t0 < tiles; t0 += kTile) {
    uint32_t it[kItems];
    load_items(sums, tiles, t0 / kTile, it);
    uint32_t s = 0;
#pragma unroll
    for (int k = 0; k < kItems; ++k) s += it[k];
    uint32_t total;
    uint32_t run = carry + block_exclusive_scan(s, &total);
    const long long first = t0 + static_cast<long long>(threadIdx.x) * kItems;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      if (first + k < tiles) sums[first + k] = run;
      run += it[k];
    }
    carry += total;
  }
}

__global__ void __launch_bounds__(kThreads)
    scan_tiles(const uint32_t* __restrict__ in, const uint32_t* __restrict__ offsets, uint32_t* __restrict__ out, long long n) {
  uint32_t it[kItems];
  load_items(in, n, blockIdx.x, it);
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) s += it[k];
  uint32_t total;
  uint32_t run = offsets[blockIdx.x] + block_exclusive_scan(s, &total);
#pragma unroll
  for (int k = 0; k < kItems; ++k) it[k] = (run += it[k]);
  const long long first = static_cast<long long>(blockIdx.x) * kTile + static_cast<long long>(threadIdx.x) * kItems;
  if (first + kItems <= n) {
    uint4* p = reinterpret_cast<uint4*>(out + first);
    p[0] = make_uint4(it[0], it[1], it[2], it[3]);
    p[1] = make_uint4(it[4], it[5], it[6], it[7]);
  } else {
    for (int k = 0; k < kItems; ++k)
      if (first + k < n) out[first + k] = it[k];
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 64LL << 20, 1, 1LL << 29);
  const long long n = a.n;
  const long long tiles = (n + kTile - 1) / kTile;
  bu::DeviceBuffer<uint32_t> in(n), out(n), sums(tiles);
  fill_input<<<1024, 256>>>(in.p, n);
  CUDA_CHECK_LAUNCH();
  const unsigned grid = bu::grid_for(n, kTile);

  bu::time_launches([&] {
    tile_sums<<<grid, kThreads>>>(in.p, sums.p, n);
    scan_sums<<<1, kThreads>>>(sums.p, tiles);
    scan_tiles<<<grid, kThreads>>>(in.p, sums.p, out.p, n);
  }, a.reps, kInner);

  // Exact check of every output (wrap-around uint32 arithmetic on both sides).
  bu::Checker chk;
  std::vector<uint32_t> got = out.to_host();
  uint32_t run = 0;
  for (long long i = 0; i < n; ++i) {
    run += input_at(i);
    if (got[i] != run) {
      chk.exact(got[i], run, "out", i);
      if (chk.bad >= 10) break;
    }
  }
  if (chk.bad == 0) chk.exact(got[n - 1], run, "out", n - 1);  // counts the check
  return chk.finish();
}

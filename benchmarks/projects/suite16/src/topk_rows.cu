// topk_rows: top-8 values and their column indices for each row of an fp32
// [rows x 4096] matrix, ordered by value descending, ties by lower index. One warp per
// row: each lane keeps a sorted top-8 of its strided columns in registers, then the warp
// merges with 8 rounds of shuffle arg-max. --n = rows.
#include <climits>

#include "bench_util.h"

namespace {
constexpr int kCols = 4096, kK = 8;
constexpr int kWarpsPerBlock = 8;
constexpr int kInner = 10;
constexpr uint64_t kSeed = 0x701;

// (va, ia) ranks before (vb, ib)?
__host__ __device__ inline bool before(float va, int ia, float vb, int ib) {
  return va > vb || (va == vb && ia < ib);
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    topk_kernel(const float* __restrict__ x, float* __restrict__ out_v, int* __restrict__ out_i, long long rows) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * kCols;
  float v[kK];
  int id[kK];
#pragma unroll
  for (int s = 0; s < kK; ++s) { v[s] = -INFINITY; id[s] = INT_MAX; }
#pragma unroll 4
  for (int c = lane; c < kCols; c += 32) {
    const float val = xr[c];
    if (val > v[kK - 1]) {  // columns rise, so an equal value never displaces an entry
      v[kK - 1] = val;
      id[kK - 1] = c;
#pragma unroll
      for (int s = kK - 1; s > 0; --s) {
        if (v[s] > v[s - 1]) {
          const float tv = v[s]; v[s] = v[s - 1]; v[s - 1] = tv;
          const int ti = id[s]; id[s] = id[s - 1]; id[s - 1] = ti;
        }
      }
    }
  }
  // Merge: each round the best head among the lanes wins and is popped from its lane.
#pragma unroll
  for (int r = 0; r < kK; ++r) {
    float bv = v[0];
    int bi = id[0];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (before(ov, oi, bv, bi)) { bv = ov; bi = oi; }
    }
    if (id[0] == bi) {  // column indices are unique, so exactly one lane pops
#pragma unroll
      for (int s = 0; s < kK - 1; ++s) { v[s] = v[s + 1]; id[s] = id[s + 1]; }
      v[kK - 1] = -INFINITY;
      id[kK - 1] = INT_MAX;
    }
    if (lane == 0) {
      out_v[static_cast<size_t>(row) * kK + r] = bv;
      out_i[static_cast<size_t>(row) * kK + r] = bi;
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 32768, 1, 131072);
  const long long rows = a.n;
  const size_t count = static_cast<size_t>(rows) * kCols;
  bu::DeviceBuffer<float> x(count), ov(static_cast<size_t>(rows) * kK);
  bu::DeviceBuffer<int> oi(static_cast<size_t>(rows) * kK);
  bu::fill(x.p, count, kSeed, -1.0f, 1.0f);
  const unsigned grid = bu::grid_for(rows, kWarpsPerBlock);

  bu::time_launches([&] { topk_kernel<<<grid, kWarpsPerBlock * 32>>>(x.p, ov.p, oi.p, rows); }, a.reps, kInner);

  // Exact comparison on 1024 sampled rows (no arithmetic involved, so no tolerance).
  bu::Checker chk;
  std::vector<float> gv = ov.to_host();
  std::vector<int> gi = oi.to_host();
  std::vector<float> row(kCols);
  std::vector<int> order(kCols);
  for (long long r : bu::sample_indices(rows, 1024)) {
    for (int c = 0; c < kCols; ++c) {
      row[c] = bu::gen(static_cast<uint64_t>(r) * kCols + c, kSeed, -1.0f, 1.0f);
      order[c] = c;
    }
    std::partial_sort(order.begin(), order.begin() + kK, order.end(),
                      [&](int p, int q) { return before(row[p], p, row[q], q); });
    for (int s = 0; s < kK; ++s) {
      chk.exact(gi[r * kK + s], order[s], "index", r, s);
      chk.exact(gv[r * kK + s], row[order[s]], "value", r, s);
    }
  }
  return chk.finish();
}

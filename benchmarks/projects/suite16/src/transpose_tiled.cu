// transpose_tiled: out = in^T for a square fp32 matrix (n x n) through 32x32 shared-memory
// tiles padded to 33 columns (no bank conflicts on the transposed read). 32x8 threads per
// tile, 4 rows each. Any n (partial edge tiles are bounds-checked). --n = matrix side.
#include "bench_util.h"

namespace {
constexpr int kTile = 32, kRows = 8;
constexpr int kInner = 32;
constexpr uint64_t kSeed = 0x1701;

__global__ void __launch_bounds__(kTile * kRows)
    transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[kTile][kTile + 1];
  const int bx = blockIdx.x * kTile, by = blockIdx.y * kTile;
  int x = bx + threadIdx.x;  // input column
#pragma unroll
  for (int r = 0; r < kTile; r += kRows) {
    const int y = by + threadIdx.y + r;  // input row
    if (x < n && y < n) tile[threadIdx.y + r][threadIdx.x] = in[static_cast<size_t>(y) * n + x];
  }
  __syncthreads();
  x = by + threadIdx.x;  // output column = input row
#pragma unroll
  for (int r = 0; r < kTile; r += kRows) {
    const int y = bx + threadIdx.y + r;  // output row = input column
    if (x < n && y < n) out[static_cast<size_t>(y) * n + x] = tile[threadIdx.x][threadIdx.y + r];
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 8192, 1, 32768);
  const int n = static_cast<int>(a.n);
  const size_t count = static_cast<size_t>(n) * n;
  bu::DeviceBuffer<float> in(count), out(count);
  bu::fill(in.p, count, kSeed, -1.0f, 1.0f);
  const dim3 block(kTile, kRows), grid(bu::grid_for(n, kTile), bu::grid_for(n, kTile));

  bu::time_launches([&] { transpose_kernel<<<grid, block>>>(in.p, out.p, n); }, a.reps, kInner);

  // 256 sampled output rows (row 0 and row n-1 among them), every column: exact.
  bu::Checker chk;
  for (long long r : bu::sample_indices(n, 256)) {
    const std::vector<float> got = out.slice(static_cast<size_t>(r) * n, n);
    for (int c = 0; c < n; ++c)
      chk.exact(got[c], bu::gen(static_cast<uint64_t>(c) * n + r, kSeed, -1.0f, 1.0f), "out", r, c);
  }
  return chk.finish();
}

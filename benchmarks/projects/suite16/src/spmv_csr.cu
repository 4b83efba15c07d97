// spmv_csr: y = A x for a generated sparse matrix in CSR form (n x n, 16..48 non-zeros
// per row, columns scattered within +-2048 of the diagonal, wrapping around). One warp
// per row. --n = rows.
#include "bench_util.h"

namespace {
constexpr int kWarpsPerBlock = 8;
constexpr int kInner = 10;
constexpr uint64_t kSeedLen = 0xC01, kSeedCol = 0xC02, kSeedVal = 0xC03, kSeedX = 0xC04;

__host__ __device__ inline int row_len(long long r) { return 16 + static_cast<int>(bu::hash2(r, kSeedLen) % 33u); }
// Entry k of row r: column and value are pure functions of (r, k), so the CPU can rebuild any row.
__host__ __device__ inline int col_at(long long r, int k, long long n) {
  const long long off = static_cast<long long>(bu::hash2(static_cast<uint64_t>(r) * 64 + k, kSeedCol) % 4097u) - 2048;
  return static_cast<int>(((r + off) % n + n) % n);
}
__host__ __device__ inline float val_at(long long r, int k) {
  return bu::gen(static_cast<uint64_t>(r) * 64 + k, kSeedVal, -1.0f, 1.0f);
}

__global__ void build_rows(const int* __restrict__ rowptr, int* __restrict__ cols, float* __restrict__ vals, long long n) {
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < n; r += (long long)gridDim.x * blockDim.x) {
    const int start = rowptr[r], len = rowptr[r + 1] - start;
    for (int k = 0; k < len; ++k) {
      cols[start + k] = col_at(r, k, n);
      vals[start + k] = val_at(r, k);
    }
  }
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    spmv_kernel(const int* __restrict__ rowptr, const int* __restrict__ cols, const float* __restrict__ vals,
                const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= n) return;
  const int start = rowptr[row], end = rowptr[row + 1];
  float acc = 0.f;
  for (int j = start + lane; j < end; j += 32) acc = fmaf(vals[j], x[cols[j]], acc);
  acc = bu::warp_sum(acc);
  if (lane == 0) y[row] = acc;
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 2LL << 20, 1, 1LL << 24);  // nnz <= 48 * 2^24 < 2^31
  const long long n = a.n;
  std::vector<int> rowptr(n + 1, 0);
  for (long long r = 0; r < n; ++r) rowptr[r + 1] = rowptr[r] + row_len(r);
  const long long nnz = rowptr[n];
  bu::DeviceBuffer<int> rp(n + 1), cols(nnz);
  bu::DeviceBuffer<float> vals(nnz), x(n), y(n);
  rp.from_host(rowptr);
  build_rows<<<1024, 256>>>(rp.p, cols.p, vals.p, n);
  CUDA_CHECK_LAUNCH();
  bu::fill(x.p, n, kSeedX, -1.0f, 1.0f);
  const unsigned grid = bu::grid_for(n, kWarpsPerBlock);

  bu::time_launches([&] { spmv_kernel<<<grid, kWarpsPerBlock * 32>>>(rp.p, cols.p, vals.p, x.p, y.p, n); },
                    a.reps, kInner);

  bu::Checker chk;
  std::vector<float> got = y.to_host();
  for (long long r : bu::sample_indices(n, 4096)) {
    double ref = 0.0, mag = 0.0;
    for (int k = 0; k < row_len(r); ++k) {
      const double p = static_cast<double>(val_at(r, k)) * bu::gen(col_at(r, k, n), kSeedX, -1.0f, 1.0f);
      ref += p;
      mag += std::fabs(p);
    }
    chk.near(got[r], ref, 1e-4, 1e-5 * mag + 1e-7, "y", r);
  }
  return chk.finish();
}

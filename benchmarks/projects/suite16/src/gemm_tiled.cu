// gemm_tiled: C = A * B for square fp32 matrices (n x n), shared-memory tiles of 64x64
// with a 16-deep k slice; each of the 256 threads computes a 4x4 block of C. Any n
// (edges padded with zeros). --n = matrix size.
#include "bench_util.h"

namespace {
constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256, kTM = 4, kTN = 4;
constexpr int kInner = 2;
constexpr uint64_t kSeedA = 0x401, kSeedB = 0x402;

__global__ void __launch_bounds__(kThreads)
    gemm_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
  __shared__ __align__(16) float As[kBK][kBM + 4];  // A tile stored k-major (transposed)
  __shared__ __align__(16) float Bs[kBK][kBN];
  const int tx = threadIdx.x % (kBN / kTN), ty = threadIdx.x / (kBN / kTN);
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[kTM][kTN] = {};
  for (int k0 = 0; k0 < n; k0 += kBK) {
#pragma unroll
    for (int l = 0; l < (kBM * kBK) / kThreads; ++l) {
      const int idx = threadIdx.x + l * kThreads;
      const int ar = idx / kBK, ac = idx % kBK;  // A tile: 64 rows x 16 cols
      const int gr = row0 + ar, gc = k0 + ac;
      As[ac][ar] = (gr < n && gc < n) ? A[static_cast<size_t>(gr) * n + gc] : 0.f;
      const int br = idx / kBN, bc = idx % kBN;  // B tile: 16 rows x 64 cols
      const int hr = k0 + br, hc = col0 + bc;
      Bs[br][bc] = (hr < n && hc < n) ? B[static_cast<size_t>(hr) * n + hc] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      const float4 a4 = *reinterpret_cast<const float4*>(&As[kk][ty * kTM]);
      const float4 b4 = *reinterpret_cast<const float4*>(&Bs[kk][tx * kTN]);
      const float a[kTM] = {a4.x, a4.y, a4.z, a4.w};
      const float b[kTN] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int r = row0 + ty * kTM + i;
    if (r >= n) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int c = col0 + tx * kTN + j;
      if (c < n) C[static_cast<size_t>(r) * n + c] = acc[i][j];
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  const bu::Args a = bu::parse_args(argc, argv, 3072, 1, 12288);
  const int n = static_cast<int>(a.n);
  const size_t count = static_cast<size_t>(n) * n;
  bu::DeviceBuffer<float> A(count), B(count), C(count);
  bu::fill(A.p, count, kSeedA, -1.0f, 1.0f);
  bu::fill(B.p, count, kSeedB, -1.0f, 1.0f);
  const dim3 grid(bu::grid_for(n, kBN), bu::grid_for(n, kBM));

  bu::time_launches([&] { gemm_kernel<<<grid, kThreads>>>(A.p, B.p, C.p, n); }, a.reps, kInner);

  // 256 sampled entries of C, each a length-n dot product in double. fp32 accumulation
  // error is bounded relative to sum |a_k b_k|.
  bu::Checker chk;
  for (long long s : bu::sample_indices(static_cast<long long>(count), 256)) {
    const long long i = s / n, j = s % n;
    double ref = 0.0, mag = 0.0;
    for (int k = 0; k < n; ++k) {
      const double p = static_cast<double>(bu::gen(static_cast<uint64_t>(i) * n + k, kSeedA, -1.0f, 1.0f)) *
                       bu::gen(static_cast<uint64_t>(k) * n + j, kSeedB, -1.0f, 1.0f);
      ref += p;
      mag += std::fabs(p);
    }
    const float got = C.slice(static_cast<size_t>(s), 1)[0];
    chk.near(got, ref, 1e-4, 1e-4 * mag + 1e-6, "C", i, j);
  }
  return chk.finish();
}

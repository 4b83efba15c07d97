// Register-heavy kernel: register-blocked SGEMM. A 256-thread block computes a
// 128x128 tile of C; per step it stages a 128x8 slice of A (transposed) and an
// 8x128 slice of B in shared memory, and every thread updates its 8x8 sub-tile
// (64 accumulators in registers). A thread owns rows {ty*4+i, 64+ty*4+i} and
// columns {tx*4+j, 64+tx*4+j} (i, j < 4), so shared-memory float4 reads of a warp
// hit consecutive addresses.
#include "gemm.h"

#include <cstddef>

namespace gemm {
namespace {

constexpr int BM = kTileM;
constexpr int BN = kTileN;
constexpr int BK = kTileK;
constexpr int TM = 8;
constexpr int TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
static_assert(kThreads == 256, "load mapping below assumes 256 threads");
static_assert(BM / TM * 4 == BM / 2 && BN / TN * 4 == BN / 2,
              "a thread's two 4-wide row/column groups cover the two halves of the tile");
static_assert(BM * BK == 4 * kThreads && BK * BN == 4 * kThreads,
              "each thread loads one float4 of A and one of B per step");

__global__ void __launch_bounds__(kThreads)
    sgemm_kernel(float* __restrict__ C, const float* __restrict__ A,
                 const float* __restrict__ B, int M, int N, int K) {
  __shared__ __align__(16) float As[BK][BM];  // As[k][m] = A[row0 + m][k0 + k]
  __shared__ __align__(16) float Bs[BK][BN];  // Bs[k][n] = B[k0 + k][col0 + n]

  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);  // 0..15
  const int ty = tid / (BN / TN);  // 0..15
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  // global -> shared load mapping: A tile is BM x BK (2 float4 per row),
  // B tile is BK x BN (32 float4 per row)
  const int a_r = tid >> 1;        // 0..127
  const int a_c = (tid & 1) * 4;   // 0 or 4
  const int b_r = tid >> 5;        // 0..7
  const int b_c = (tid & 31) * 4;  // 0..124
  const float* a_ptr = A + static_cast<std::size_t>(row0 + a_r) * K + a_c;
  const float* b_ptr = B + static_cast<std::size_t>(b_r) * N + col0 + b_c;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 av = *reinterpret_cast<const float4*>(a_ptr + k0);
    const float4 bv = *reinterpret_cast<const float4*>(b_ptr + static_cast<std::size_t>(k0) * N);
    As[a_c + 0][a_r] = av.x;
    As[a_c + 1][a_r] = av.y;
    As[a_c + 2][a_r] = av.z;
    As[a_c + 3][a_r] = av.w;
    *reinterpret_cast<float4*>(&Bs[b_r][b_c]) = bv;
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 a_lo = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&As[kk][BM / 2 + ty * 4]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&Bs[kk][BN / 2 + tx * 4]);
      const float a[TM] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
      const float b[TN] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // before the next step overwrites As / Bs
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + (i - 4));
    float* c_row = C + static_cast<std::size_t>(r) * N + col0;
    *reinterpret_cast<float4*>(c_row + tx * 4) =
        make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(c_row + BN / 2 + tx * 4) =
        make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}

}  // namespace

cudaError_t sgemm(float* C, const float* A, const float* B, int M, int N, int K,
                  cudaStream_t st) {
  if (M <= 0 || N <= 0 || K <= 0 || M % BM != 0 || N % BN != 0 || K % BK != 0 ||
      M / BM > 65535) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned int>(N / BN), static_cast<unsigned int>(M / BM));
  sgemm_kernel<<<grid, kThreads, 0, st>>>(C, A, B, M, N, K);
  return cudaGetLastError();
}

}  // namespace gemm

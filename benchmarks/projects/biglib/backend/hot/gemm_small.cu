// gemm_small.cu: batched fp32 GEMM (hot). 128x128 block tile, BK = 8, 256 threads, each
// thread accumulating an 8x8 register tile (64 accumulators + 16 operand registers + the
// prefetched next tile): its speed depends on register allocation, unrolling and FMA
// scheduling, i.e. on nvcc/ptxas options (-maxrregcount, -O levels, ...). The kernel has no
// __launch_bounds__ on purpose, as in many libraries: ptxas alone picks its register count
// (and with it how many blocks fit on an SM), and -maxrregcount reaches it.
#include <cuda_runtime.h>

#include <cstddef>

#include "biglib.h"

namespace {

constexpr int BM = 128, BN = 128, BK = 8;
constexpr int kThreads = 256;  // 16 x 16 threads
constexpr int kPadA = 4;       // keeps As rows 16-byte aligned and the transposed stores conflict-free
constexpr int kMaxGridZ = 65535;

// Four consecutive elements of a row-major [rows x cols] matrix at (r, c); zero outside.
template <bool kFast>
__device__ __forceinline__ float4 load4(const float* __restrict__ p, int rows, int cols, int r,
                                        int c) {
  if (kFast) return __ldg(reinterpret_cast<const float4*>(p + static_cast<size_t>(r) * cols + c));
  float4 v;
  const bool rin = r < rows;
  const float* q = p + static_cast<size_t>(r) * cols + c;
  v.x = (rin && c + 0 < cols) ? q[0] : 0.f;
  v.y = (rin && c + 1 < cols) ? q[1] : 0.f;
  v.z = (rin && c + 2 < cols) ? q[2] : 0.f;
  v.w = (rin && c + 3 < cols) ? q[3] : 0.f;
  return v;
}

template <bool kFast>
__global__ void sgemm_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K, float alpha, float beta) {
  const size_t bz = blockIdx.z;
  A += bz * static_cast<size_t>(M) * K;
  B += bz * static_cast<size_t>(K) * N;
  C += bz * static_cast<size_t>(M) * N;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  __shared__ __align__(16) float As[2][BK][BM + kPadA];  // A tile, transposed: As[k][m]
  __shared__ __align__(16) float Bs[2][BK][BN];

  const int tid = threadIdx.x;
  const int tr = tid >> 4, tc = tid & 15;
  // Loader mapping: A: row a_r, k a_k..a_k+3;  B: k b_k, columns b_c..b_c+3.
  const int a_r = tid >> 1, a_k = (tid & 1) * 4;
  const int b_k = tid >> 5, b_c = (tid & 31) * 4;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  float4 pa = load4<kFast>(A, M, K, row0 + a_r, a_k);
  float4 pb = load4<kFast>(B, K, N, b_k, col0 + b_c);
  As[0][a_k + 0][a_r] = pa.x;
  As[0][a_k + 1][a_r] = pa.y;
  As[0][a_k + 2][a_r] = pa.z;
  As[0][a_k + 3][a_r] = pa.w;
  *reinterpret_cast<float4*>(&Bs[0][b_k][b_c]) = pb;
  __syncthreads();

  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool has_next = k0 + BK < K;
    if (has_next) {  // prefetch the next tile into registers while this one is multiplied
      pa = load4<kFast>(A, M, K, row0 + a_r, k0 + BK + a_k);
      pb = load4<kFast>(B, K, N, k0 + BK + b_k, col0 + b_c);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float ra[8], rb[8];
      const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][tr * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][64 + tr * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][k][tc * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][k][64 + tc * 4]);
      ra[0] = a0.x; ra[1] = a0.y; ra[2] = a0.z; ra[3] = a0.w;
      ra[4] = a1.x; ra[5] = a1.y; ra[6] = a1.z; ra[7] = a1.w;
      rb[0] = b0.x; rb[1] = b0.y; rb[2] = b0.z; rb[3] = b0.w;
      rb[4] = b1.x; rb[5] = b1.y; rb[6] = b1.z; rb[7] = b1.w;
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    if (has_next) {
      const int nb = buf ^ 1;
      As[nb][a_k + 0][a_r] = pa.x;
      As[nb][a_k + 1][a_r] = pa.y;
      As[nb][a_k + 2][a_r] = pa.z;
      As[nb][a_k + 3][a_r] = pa.w;
      *reinterpret_cast<float4*>(&Bs[nb][b_k][b_c]) = pb;
    }
    __syncthreads();
    buf ^= 1;
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = row0 + (i < 4 ? tr * 4 + i : 64 + tr * 4 + (i - 4));
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = col0 + h * 64 + tc * 4;
      float4 v = make_float4(alpha * acc[i][h * 4 + 0], alpha * acc[i][h * 4 + 1],
                             alpha * acc[i][h * 4 + 2], alpha * acc[i][h * 4 + 3]);
      float* dst = C + static_cast<size_t>(r) * N + c;
      if (kFast) {
        if (beta != 0.f) {
          const float4 o = *reinterpret_cast<const float4*>(dst);
          v.x = fmaf(beta, o.x, v.x); v.y = fmaf(beta, o.y, v.y);
          v.z = fmaf(beta, o.z, v.z); v.w = fmaf(beta, o.w, v.w);
        }
        *reinterpret_cast<float4*>(dst) = v;
      } else if (r < M) {
        const float vals[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (c + u < N) dst[u] = beta != 0.f ? fmaf(beta, dst[u], vals[u]) : vals[u];
      }
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<size_t>(p) & 15u) == 0; }

}  // namespace

extern "C" int biglib_gemm_small_f32(const float* A, const float* B, float* C, int M, int N, int K,
                                     int batch, float alpha, float beta, void* stream) {
  if (M < 0 || N < 0 || K < 0 || batch < 0) return static_cast<int>(cudaErrorInvalidValue);
  if (M == 0 || N == 0 || batch == 0) return 0;
  if (!C || (K > 0 && (!A || !B))) return static_cast<int>(cudaErrorInvalidValue);
  const int gy = (M + BM - 1) / BM;
  if (gy > 65535) return static_cast<int>(cudaErrorInvalidValue);
  const bool fast = M % BM == 0 && N % BN == 0 && K % BK == 0 && K > 0 && aligned16(A) &&
                    aligned16(B) && aligned16(C);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  for (int b0 = 0; b0 < batch; b0 += kMaxGridZ) {
    const int nb = batch - b0 < kMaxGridZ ? batch - b0 : kMaxGridZ;
    const dim3 grid((N + BN - 1) / BN, gy, nb);
    const float* a = A + static_cast<size_t>(b0) * M * K;
    const float* bb = B + static_cast<size_t>(b0) * K * N;
    float* c = C + static_cast<size_t>(b0) * M * N;
    if (fast)
      sgemm_kernel<true><<<grid, kThreads, 0, s>>>(a, bb, c, M, N, K, alpha, beta);
    else
      sgemm_kernel<false><<<grid, kThreads, 0, s>>>(a, bb, c, M, N, K, alpha, beta);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  return 0;
}

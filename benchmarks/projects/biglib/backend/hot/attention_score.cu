// attention_score.cu: scaled Q.K^T attention scores with logit soft-capping and an optional
// causal mask (hot). 64x64 output tile per 256-thread block, each thread a 4x4 register tile,
// head_dim consumed in chunks of 32 through shared memory (fully unrolled FMA loop), then
// softcap * tanhf(s / softcap) per score. Its speed depends on FMA scheduling, unrolling and
// how tanhf and the division are compiled (--use_fast_math, -ftz, -prec-div).
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

#include "biglib.h"

namespace {

constexpr int TQ = 64, TK = 64, DC = 32;
constexpr int kThreads = 256;  // 16 x 16
constexpr int kMaxGridZ = 65535;

__global__ void __launch_bounds__(kThreads)
attention_score_kernel(const float* __restrict__ Q, const float* __restrict__ K,
                       float* __restrict__ S, int seq_q, int seq_k, int head_dim, float scale,
                       float softcap, int causal) {
  const size_t h = blockIdx.z;
  Q += h * static_cast<size_t>(seq_q) * head_dim;
  K += h * static_cast<size_t>(seq_k) * head_dim;
  S += h * static_cast<size_t>(seq_q) * seq_k;
  const int q0 = blockIdx.y * TQ, k0 = blockIdx.x * TK;
  const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;
  const int diag = seq_k - seq_q;  // key j is visible to query i when j <= i + diag

  if (causal && k0 > q0 + TQ - 1 + diag) {  // the whole tile is masked
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = q0 + ty + 16 * i;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = k0 + tx + 16 * j;
        if (r < seq_q && c < seq_k) S[static_cast<size_t>(r) * seq_k + c] = -INFINITY;
      }
    }
    return;
  }

  __shared__ float Qs[DC][TQ + 1];  // transposed chunks: Qs[d][query], Ks[d][key]
  __shared__ float Ks[DC][TK + 1];
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;

  for (int d0 = 0; d0 < head_dim; d0 += DC) {
#pragma unroll 4
    for (int idx = threadIdx.x; idx < TQ * DC; idx += kThreads) {
      const int r = idx / DC, d = idx % DC;
      const bool din = d0 + d < head_dim;
      Qs[d][r] = (din && q0 + r < seq_q) ? Q[static_cast<size_t>(q0 + r) * head_dim + d0 + d] : 0.f;
      Ks[d][r] = (din && k0 + r < seq_k) ? K[static_cast<size_t>(k0 + r) * head_dim + d0 + d] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < DC; ++d) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = Qs[d][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Ks[d][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

  const bool cap = softcap > 0.f;
  const float inv_cap = cap ? 1.0f / softcap : 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = q0 + ty + 16 * i;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = k0 + tx + 16 * j;
      float s = acc[i][j] * scale;
      if (cap) s = softcap * tanhf(s * inv_cap);
      if (causal && c > r + diag) s = -INFINITY;
      if (r < seq_q && c < seq_k) S[static_cast<size_t>(r) * seq_k + c] = s;
    }
  }
}

}  // namespace

extern "C" int biglib_attention_score_f32(const float* Q, const float* K, float* S,
                                          int batch_heads, int seq_q, int seq_k, int head_dim,
                                          float scale, float softcap, int causal, void* stream) {
  if (batch_heads < 0 || seq_q < 0 || seq_k < 0 || head_dim < 1)
    return static_cast<int>(cudaErrorInvalidValue);
  if (batch_heads == 0 || seq_q == 0 || seq_k == 0) return 0;
  if (!Q || !K || !S) return static_cast<int>(cudaErrorInvalidValue);
  const int gy = (seq_q + TQ - 1) / TQ;
  if (gy > 65535) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  for (int h0 = 0; h0 < batch_heads; h0 += kMaxGridZ) {
    const int nh = batch_heads - h0 < kMaxGridZ ? batch_heads - h0 : kMaxGridZ;
    const dim3 grid((seq_k + TK - 1) / TK, gy, nh);
    attention_score_kernel<<<grid, kThreads, 0, s>>>(
        Q + static_cast<size_t>(h0) * seq_q * head_dim, K + static_cast<size_t>(h0) * seq_k * head_dim,
        S + static_cast<size_t>(h0) * seq_q * seq_k, seq_q, seq_k, head_dim, scale, softcap, causal);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  return 0;
}

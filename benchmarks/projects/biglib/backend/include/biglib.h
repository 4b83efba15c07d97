/* biglib.h: public C API of biglib_cuda.
 *
 * Every launcher enqueues its work on `stream` (a cudaStream_t passed as void*; NULL is the
 * default stream) and returns 0 on success or a cudaError_t code (cast to int): invalid
 * arguments give cudaErrorInvalidValue (1), a failed launch the launch's error. Pointers are
 * device pointers. The header needs no CUDA header, so host-only C and C++ code can use it.
 */
#ifndef BIGLIB_H
#define BIGLIB_H

#include <stdint.h>

#if defined(__CUDACC__)
#define BIGLIB_HD __host__ __device__
#else
#define BIGLIB_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum biglib_dtype { BIGLIB_F32 = 0, BIGLIB_F64 = 1, BIGLIB_I32 = 2 } biglib_dtype;

/* ---- Deterministic test data --------------------------------------------------------
 * biglib_fill_uniform writes p[i] = biglib_uniform_*(seed, i, amplitude) for i < n, so a
 * host reference can recompute any input element exactly without copying it back.
 * f32/f64: amplitude * (2u - 1) with u = k / 2^24, k a 24-bit hash (exact in float when
 * amplitude is a power of two); i32: an integer in [-amplitude, amplitude].            */
static inline BIGLIB_HD uint32_t biglib_hash32(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (uint32_t)(z >> 32);
}
static inline BIGLIB_HD float biglib_uniform_f32(uint64_t seed, uint64_t i, float amplitude) {
  const float u = (float)(biglib_hash32(seed, i) >> 8) * (1.0f / 16777216.0f);
  return amplitude * (2.0f * u - 1.0f);
}
static inline BIGLIB_HD double biglib_uniform_f64(uint64_t seed, uint64_t i, double amplitude) {
  const double u = (double)(biglib_hash32(seed, i) >> 8) * (1.0 / 16777216.0);
  return amplitude * (2.0 * u - 1.0);
}
static inline BIGLIB_HD int32_t biglib_uniform_i32(uint64_t seed, uint64_t i, int32_t amplitude) {
  const uint32_t span = 2u * (uint32_t)amplitude + 1u;
  return (int32_t)(biglib_hash32(seed, i) % span) - amplitude;
}

int biglib_fill_uniform(biglib_dtype dtype, void* p, int64_t n, uint64_t seed, double amplitude,
                        void* stream);

/* ---- Hot kernels (fp32) -------------------------------------------------------------- */

/* Batched row-major GEMM: C[b] = alpha * A[b] (MxK) * B[b] (KxN) + beta * C[b], b < batch,
 * matrices stored back to back. beta == 0 does not read C. Fast path: M, N multiples of 128,
 * K a multiple of 8, 16-byte aligned pointers; any other shape takes a bounds-checked path. */
int biglib_gemm_small_f32(const float* A, const float* B, float* C, int M, int N, int K,
                          int batch, float alpha, float beta, void* stream);

/* Row-wise softmax of x * scale over [rows x cols] (row-major): y may not alias x.
 * cols <= 8192 with cols % 4 == 0 keeps the row in registers; other cols take a 3-pass path. */
int biglib_softmax_f32(const float* x, float* y, int64_t rows, int cols, float scale,
                       void* stream);

/* Row-wise layer norm: y = (x - mean) / sqrt(var + eps) * gamma + beta, over [rows x cols].
 * Register-resident fast path as for softmax. */
int biglib_layernorm_f32(const float* x, const float* gamma, const float* beta, float* y,
                         int64_t rows, int cols, float eps, void* stream);

/* Attention scores with logit soft-capping:
 *   S[h][i][j] = softcap * tanh(scale * dot(Q[h][i][:], K[h][j][:]) / softcap)
 * (no capping when softcap <= 0), h < batch_heads, Q: [seq_q x head_dim], K: [seq_k x head_dim],
 * S: [seq_q x seq_k], all row-major and back to back. causal != 0 sets S[h][i][j] = -inf
 * where j > i + (seq_k - seq_q). */
int biglib_attention_score_f32(const float* Q, const float* K, float* S, int batch_heads,
                               int seq_q, int seq_k, int head_dim, float scale, float softcap,
                               int causal, void* stream);

#ifdef __cplusplus
}
#endif

/* ---- Generated element-wise / reduction ops (gen.py) ---------------------------------- */
#include "biglib_ops.h"

#endif /* BIGLIB_H */

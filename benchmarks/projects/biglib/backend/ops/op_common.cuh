// op_common.cuh: shared templates of the generated ops (ops/op_XXX.cu, written by gen.py).
// Each op file defines a functor template `Op<T>` (T = float, double, int) and calls
// BIGLIB_DEFINE_OP(XXX, Op), which instantiates an element-wise kernel and a reduction
// kernel for the three types behind the two extern "C" launchers of biglib_ops.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "biglib.h"

namespace biglib {
namespace opk {

constexpr int kThreads = 256;
constexpr int kMapUnroll = 4;
constexpr int kMaxMapBlocks = 4096;
constexpr int kMaxReduceBlocks = 1024;

// Accumulator of a reduction: int sums wrap modulo 2^32 (done in unsigned arithmetic).
template <typename T> struct Acc { using type = T; };
template <> struct Acc<int> { using type = unsigned int; };

// Overloaded math so that one expression serves float and double.
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double m_rsqrt(double x) { return rsqrt(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_atan(float x) { return atanf(x); }
__device__ __forceinline__ double m_atan(double x) { return atan(x); }
__device__ __forceinline__ float m_max(float x, float y) { return fmaxf(x, y); }
__device__ __forceinline__ double m_max(double x, double y) { return fmax(x, y); }
__device__ __forceinline__ float m_min(float x, float y) { return fminf(x, y); }
__device__ __forceinline__ double m_min(double x, double y) { return fmin(x, y); }
__device__ __forceinline__ float m_fma(float x, float y, float z) { return fmaf(x, y, z); }
__device__ __forceinline__ double m_fma(double x, double y, double z) { return fma(x, y, z); }

// Integer helpers (all in uint32 arithmetic: wrapping, no undefined behaviour).
__device__ __forceinline__ unsigned u_rotl(unsigned x, int r) { return __funnelshift_l(x, x, r); }
__device__ __forceinline__ unsigned u_max(unsigned x, unsigned y) { return x > y ? x : y; }
__device__ __forceinline__ unsigned u_min(unsigned x, unsigned y) { return x < y ? x : y; }

template <typename T, typename F>
__global__ void __launch_bounds__(kThreads)
map2_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, int64_t n, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads * kMapUnroll;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kThreads * kMapUnroll + threadIdx.x;
       base < n; base += stride) {
    T av[kMapUnroll], bv[kMapUnroll];
#pragma unroll
    for (int u = 0; u < kMapUnroll; ++u) {
      const int64_t i = base + static_cast<int64_t>(u) * kThreads;
      av[u] = i < n ? a[i] : T(0);
      bv[u] = i < n ? b[i] : T(0);
    }
#pragma unroll
    for (int u = 0; u < kMapUnroll; ++u) {
      const int64_t i = base + static_cast<int64_t>(u) * kThreads;
      if (i < n) out[i] = f(av[u], bv[u]);
    }
  }
}

template <typename A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// out[0] += sum_i f(a[i], b[i]) (out is zeroed by the launcher).
template <typename T, typename F>
__global__ void __launch_bounds__(kThreads)
reduce2_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, int64_t n,
               F f) {
  using A = typename Acc<T>::type;
  __shared__ A partial[kThreads / 32];
  A acc = A(0);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
    acc += static_cast<A>(f(a[i], b[i]));
  acc = warp_sum(acc);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : A(0);
    acc = warp_sum(acc);
    if (threadIdx.x == 0) atomicAdd(reinterpret_cast<A*>(out), acc);
  }
}

inline int64_t blocks_for(int64_t n, int64_t per_block, int64_t cap) {
  const int64_t b = (n + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > cap ? cap : b);
}

template <typename T, template <typename> class Op>
int launch_map_t(const void* a, const void* b, void* out, int64_t n, cudaStream_t s) {
  const int64_t blocks = blocks_for(n, int64_t(kThreads) * kMapUnroll, kMaxMapBlocks);
  map2_kernel<T, Op<T>><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n, Op<T>());
  return static_cast<int>(cudaGetLastError());
}

template <typename T, template <typename> class Op>
int launch_reduce_t(const void* a, const void* b, void* out, int64_t n, cudaStream_t s) {
  cudaError_t e = cudaMemsetAsync(out, 0, sizeof(T), s);
  if (e != cudaSuccess) return static_cast<int>(e);
  const int64_t blocks = blocks_for(n, kThreads, kMaxReduceBlocks);
  reduce2_kernel<T, Op<T>><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n, Op<T>());
  return static_cast<int>(cudaGetLastError());
}

template <template <typename> class Op>
int dispatch(bool reduce, biglib_dtype dtype, const void* a, const void* b, void* out, int64_t n,
             void* stream) {
  if (n < 0 || (n > 0 && (!a || !b || !out)) || (reduce && !out))
    return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (n == 0 && !reduce) return 0;
  switch (dtype) {
    case BIGLIB_F32:
      return reduce ? launch_reduce_t<float, Op>(a, b, out, n, s) : launch_map_t<float, Op>(a, b, out, n, s);
    case BIGLIB_F64:
      return reduce ? launch_reduce_t<double, Op>(a, b, out, n, s) : launch_map_t<double, Op>(a, b, out, n, s);
    case BIGLIB_I32:
      return reduce ? launch_reduce_t<int, Op>(a, b, out, n, s) : launch_map_t<int, Op>(a, b, out, n, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace opk
}  // namespace biglib

// Defines the two launchers of op XXX around the functor template OP.
#define BIGLIB_DEFINE_OP(XXX, OP)                                                              \
  extern "C" int biglib_op_##XXX(biglib_dtype dtype, const void* a, const void* b, void* out,  \
                                 int64_t n, void* stream) {                                    \
    return biglib::opk::dispatch<OP>(false, dtype, a, b, out, n, stream);                      \
  }                                                                                            \
  extern "C" int biglib_op_##XXX##_reduce(biglib_dtype dtype, const void* a, const void* b,    \
                                          void* out, int64_t n, void* stream) {                \
    return biglib::opk::dispatch<OP>(true, dtype, a, b, out, n, stream);                       \
  }

// hot_common.cuh: block-wide reductions shared by the row kernels (softmax, layernorm).
#pragma once

#include <cuda_runtime.h>

namespace biglib {
namespace hot {

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class Op>
__device__ __forceinline__ float warp_allreduce(float v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// All threads of the block get the result. smem: at least blockDim.x / 32 floats. Ends with a
// barrier, so the same smem can be used again right away.
template <class Op>
__device__ __forceinline__ float block_allreduce(float v, Op op, float identity, float* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_allreduce(v, op);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x >> 5) ? smem[lane] : identity;
  v = warp_allreduce(v, op);
  __syncthreads();
  return v;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<size_t>(p) & 15u) == 0; }

}  // namespace hot
}  // namespace biglib

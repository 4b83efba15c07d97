// Constant-memory weight tables and their accessors, called by stencil.cu.
#include "coeffs.cuh"
#include "cuda_util.cuh"
#include "stencil.h"

__constant__ float c_wx[kWidth];
__constant__ float c_wy[kWidth];

void upload_weights(const float* wx, const float* wy) {
  CUDA_CHECK(cudaMemcpyToSymbol(c_wx, wx, kWidth * sizeof(float)));
  CUDA_CHECK(cudaMemcpyToSymbol(c_wy, wy, kWidth * sizeof(float)));
}

__device__ float col_weight(int dx) {
  return c_wx[dx + kRadius];
}

__device__ float row_weight(int dy) {
  return c_wy[dy + kRadius];
}

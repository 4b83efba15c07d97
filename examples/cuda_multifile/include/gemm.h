// Register-blocked SGEMM (src/gemm.cu): C = A * B, all row-major float,
// A is M x K, B is K x N, C is M x N. 128x128 block tiles, 256 threads, each
// thread accumulates an 8x8 sub-tile of C in registers.
#pragma once

#include <cuda_runtime.h>

namespace gemm {

constexpr int kTileM = 128;
constexpr int kTileN = 128;
constexpr int kTileK = 8;

// M and N must be multiples of 128, K a multiple of 8 (else cudaErrorInvalidValue).
cudaError_t sgemm(float* C, const float* A, const float* B, int M, int N, int K,
                  cudaStream_t st = 0);

}  // namespace gemm

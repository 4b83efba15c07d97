// Memory-bound kernels (src/stream.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace stream {

// STREAM triad a[i] = b[i] + s * c[i], i < n. Returns cudaGetLastError() after the
// launch; does not synchronize.
cudaError_t triad(float* a, const float* b, const float* c, float s, std::size_t n,
                  cudaStream_t st = 0);

// out (cols x rows, row-major) = transpose of in (rows x cols, row-major), through
// 32x32 shared-memory tiles. Any rows, cols >= 1 (rows <= 65535 * 32).
cudaError_t transpose(float* out, const float* in, int rows, int cols, cudaStream_t st = 0);

}  // namespace stream

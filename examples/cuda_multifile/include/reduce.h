// Reduction (src/reduce.cu): *result = sum_i dm::poly(x[i]), float per-thread and
// per-block partial sums (warp shuffles + shared memory), one double atomicAdd per
// block. The launcher zeroes *result first (cudaMemsetAsync) on the same stream.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace reduce {

cudaError_t poly_sum(double* result, const float* x, std::size_t n, cudaStream_t st = 0);

}  // namespace reduce

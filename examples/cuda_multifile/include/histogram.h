// Histogram (src/histogram.cu): bins[dm::bin_index(x[i], kLo, kScale, kBins)] += 1,
// privatized in shared memory (shared atomics), merged with global atomics. The
// launcher zeroes bins first (cudaMemsetAsync) on the same stream.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace histogram {

constexpr int kBins = 256;
constexpr float kLo = 0.0f;
constexpr float kScale = 256.0f;  // inputs in [0, 1): bin = floor(x * 256), exact in float

cudaError_t count(unsigned int* bins, const float* x, std::size_t n, cudaStream_t st = 0);

}  // namespace histogram

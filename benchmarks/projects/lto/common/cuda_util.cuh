// CUDA error checking and event timing for the .cu host launchers.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

// Checks a CUDA runtime call; on error prints it and exits with status 2.
#define CUDA_CHECK(call)                                                      \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s (%s)\n",               \
                   cudaGetErrorName(err_), __FILE__, __LINE__,                \
                   cudaGetErrorString(err_), #call);                          \
      std::exit(2);                                                           \
    }                                                                         \
  } while (0)

// Runs launch() twice as warm-up, then reps times, each between two CUDA events.
// launch() must check its launches. Returns the median milliseconds per repetition.
template <class Launch>
double median_time_ms(Launch launch, int reps) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int w = 0; w < 2; ++w) launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms(static_cast<std::size_t>(reps));
  for (float& t : ms) {
    CUDA_CHECK(cudaEventRecord(start));
    launch();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  const std::size_t h = ms.size() / 2;
  return ms.size() % 2 ? ms[h] : 0.5 * (static_cast<double>(ms[h - 1]) + ms[h]);
}

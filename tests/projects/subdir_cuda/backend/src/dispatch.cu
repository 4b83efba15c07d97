#include <chrono>
#include <cmath>
#include <vector>
#include "backend.h"
#include "kernels.cuh"

extern "C" int backend_run(int n, int repeats, double* ms) {
  std::vector<float> host(n, 1.0f);
  float *x = nullptr, *y = nullptr, *out = nullptr;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess || cudaMalloc(&y, n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&out, sizeof(float)) != cudaSuccess) return 2;
  cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  auto start = std::chrono::steady_clock::now();
  float sum = 0.0f;
  for (int r = 0; r < repeats; ++r) {
    cudaMemcpy(y, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(out, 0, sizeof(float));
    launch_saxpy(n, 2.0f, x, y);
    launch_scale(n, 0.5f, y);
    launch_reduce(n, y, out);
  }
  cudaMemcpy(&sum, out, sizeof(float), cudaMemcpyDeviceToHost);
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  cudaFree(x); cudaFree(y); cudaFree(out);
  const double want = n * 0.5 * std::sqrt(10.0);  // (2 * 1 + 1) = 3, sqrt(3^2 + 1) * 0.5 per value
  return std::fabs(sum - want) <= 1e-3 * want ? 0 : 1;
}

// Host code only (compiled as CUDA): no kernel of its own.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include "common.cuh"
#include "host.h"

int main() {
  const int n = 1 << 16;
  std::vector<float> h(n, 1.0f);
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  launch_a(out, in, n);
  launch_b(out, in, n);
  cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("sum %f\n", host_sum(h));
  return 0;
}

// Times spill_mix (the ACF landscape's spilling kernel) on 1M threads: a warm-up launch, then 20 launches
// between CUDA events; prints time_ms (per launch), a checksum of the output and PASS when it is finite.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include "spill.cu"

__global__ void fill(float *x, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0.001f * (float)((i * 2654435761u) % 1000u);
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : (1 << 20);
  const size_t total = (size_t)S * n;
  float *in = nullptr, *out = nullptr;
  if (cudaMalloc(&in, total * sizeof(float)) != cudaSuccess || cudaMalloc(&out, n * sizeof(float)) != cudaSuccess) {
    std::printf("FAIL: cudaMalloc\n");
    return 1;
  }
  fill<<<(unsigned)((total + 255) / 256), 256>>>(in, total);
  const int blocks = (n + 255) / 256;
  spill_mix<<<blocks, 256>>>(in, out, n);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int r = 0; r < 20; ++r) spill_mix<<<blocks, 256>>>(in, out, n);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, a, b);
  float *host = (float *)std::malloc(n * sizeof(float));
  cudaMemcpy(host, out, n * sizeof(float), cudaMemcpyDeviceToHost);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += host[i];
  cudaError_t err = cudaGetLastError();
  std::printf("time_ms=%.5f\nchecksum=%.6e\n%s\n", ms / 20, sum,
              err == cudaSuccess && std::isfinite(sum) ? "PASS" : "FAIL");
  return err == cudaSuccess ? 0 : 1;
}

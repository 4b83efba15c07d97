#include <cstdio>
#include <cuda_runtime.h>
void launch_scale(float* out, const float* in, int n);
int main() {
  const int n = 1 << 20;
  float *in = nullptr, *out = nullptr;
  if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess || cudaMalloc(&out, n * sizeof(float)) != cudaSuccess) {
    std::printf("FAIL: no GPU\n");
    return 1;
  }
  launch_scale(out, in, n);
  std::printf("%s\n", cudaDeviceSynchronize() == cudaSuccess ? "PASS" : "FAIL");
  return 0;
}

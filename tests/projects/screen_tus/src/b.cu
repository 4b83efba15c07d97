// Integer arithmetic and stores only: the floating-point flags leave its code alone.
#include "common.cuh"

__global__ void b_kernel(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[(i * 7) % n];
}

void launch_b(float* out, const float* in, int n) { b_kernel<<<(n + kBlock - 1) / kBlock, kBlock>>>(out, in, n); }

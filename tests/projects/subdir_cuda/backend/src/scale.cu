#include "kernels.cuh"
__global__ void scale(int n, float s, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = sqrtf(y[i] * y[i] + 1.0f) * s;
}
void launch_scale(int n, float s, float* y) { scale<<<(n + 255) / 256, 256>>>(n, s, y); }

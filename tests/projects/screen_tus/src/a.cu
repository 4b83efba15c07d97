// A division and a multiply-add: --prec-div and --fmad change its code.
#include "common.cuh"
#include "a_ops.cuh"

__global__ void a_kernel(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a_op(in[i], in[(i + 1) % n]) * in[i] + 1.0f;
}

void launch_a(float* out, const float* in, int n) { a_kernel<<<(n + kBlock - 1) / kBlock, kBlock>>>(out, in, n); }

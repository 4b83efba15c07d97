// Light kernel of the object library: price normalisation.
#include "bench.h"
#include "layout.h"

__global__ void normalize_kernel(const float* __restrict__ price, const float* __restrict__ spot,
                                 float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = price[i] / spot[i] * 100.0f;
}

extern "C" void normalize_prices(const float* price, const float* spot, float* out, int n,
                                 cudaStream_t s) {
  int block = 256;
  normalize_kernel<<<(n + block - 1) / block, block, 0, s>>>(price, spot, out, n);
  CK(cudaGetLastError());
}

// unrolled: a fully unrolled polynomial/stencil kernel instantiated for many sizes (ptxas holds most of the build).
#include <cstdio>

template <int N, int R>
__global__ void unrolled(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc[N];
#pragma unroll
  for (int j = 0; j < N; ++j) acc[j] = in[(i + j) % n];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int j = 0; j < N; ++j) acc[j] = fmaf(acc[j], acc[(j + r + 1) % N], 0.5f * acc[(j * 7 + r) % N]) + __sinf(acc[j]);
  }
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < N; ++j) s += acc[j];
  out[i] = s;
}

template <int N, int R>
void launch(const float* in, float* out, int n) { unrolled<N, R><<<(n + 255) / 256, 256>>>(in, out, n); }

int main() {
  const int n = 1 << 16;
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  launch<32, 24>(in, out, n); launch<40, 24>(in, out, n); launch<48, 24>(in, out, n); launch<56, 24>(in, out, n);
  launch<64, 24>(in, out, n); launch<32, 32>(in, out, n); launch<40, 32>(in, out, n); launch<48, 32>(in, out, n);
  launch<56, 32>(in, out, n); launch<64, 32>(in, out, n);
  cudaDeviceSynchronize();
  std::printf("done\n");
  return 0;
}
